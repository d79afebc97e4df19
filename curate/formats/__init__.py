"""Shard formats: how the kept documents of a dataset directory are written.

A format is one class registered with ``@output_format(name, help=...)`` (``curate/registry.py``)
that says its file suffix and opens a writer for one shard; ``--format NAME`` on every stage
that writes documents picks it. Parquet (:mod:`curate.formats.parquet`) is the default and
what curate's stages read; JSON lines (:mod:`curate.formats.jsonl`) writes the document shape
Dolma and datatrove read, for handing a corpus to other tools. curate's own files in an
output directory (``_rejected/``, ``_stats/``, ``_SUCCESS``) stay Parquet and JSON whatever
the format, so the report and ``curate stats`` read every output alike.

A writer is atomic like every file curate writes: it writes under a temporary name (or an
uncommitted upload) and ``close`` puts it under its final name; ``abort`` leaves nothing.
This package imports only ``curate.storage``, ``curate.schema``, ``curate.errors`` and the
registry: the dataset layer uses it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

import pyarrow as pa

from curate.registry import formats as _registry

DEFAULT = "parquet"


class ShardWriter(Protocol):
    """What a format's writer does: tables in (``write``), one file out on ``close``; ``abort`` leaves nothing."""

    rows: int
    schema: pa.Schema | None

    def write(self, table: pa.Table) -> None: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...


class ShardFormat:
    """One shard format: its name (``--format``), the suffix of its shard files, and a writer for one shard."""

    name: ClassVar[str] = ""
    suffix: ClassVar[str] = ""

    def writer(self, path: Any, schema: pa.Schema | None = None) -> ShardWriter:
        raise NotImplementedError


def get_format(name: str | None) -> ShardFormat:
    """The registered format ``name`` (default Parquet); a one-line error naming the known ones otherwise."""
    return _registry.get(name or DEFAULT).obj()


def format_names() -> list[str]:
    """The ``--format`` choices (the default first)."""
    names = _registry.names()
    return sorted(names, key=lambda n: (n != DEFAULT, n))


def format_help() -> str:
    """Each format's name and what it is for, for ``--format``'s help."""
    return "; ".join(f"{n}: {_registry.get(n).meta.get('help', '')}".rstrip(": ") for n in format_names())
