"""JSON lines shards (``--format jsonl``): the document shape Dolma and datatrove read, gzipped.

One document per line, ``part-00000.jsonl.gz``::

    {"id": "...", "text": "...", "source": "cc/CC-MAIN-2020-50",
     "metadata": {"warc_date": "...", "url": "https://...", "lang": "en", "lang_score": 0.97}}

``id``, ``text`` and ``source`` are top-level (Dolma's required fields; datatrove moves any
top-level key it does not know into ``metadata``). ``metadata`` holds the keys of the
document's ``meta`` JSON object, then the URL and every other column a stage added (``lang``,
``quality_score``, ``dup_cluster``, ...), null values included, so that ``curate import``
reads the columns back. The ``meta`` object goes whole under ``metadata.meta`` instead when
one of its keys is ``url``, ``meta``, a column of ``curate/schema.py`` or of the table (nothing
is overwritten), or when it is empty; a ``meta`` that is not a JSON object is kept as the
string ``metadata.meta``. A float32 column is written with the shortest decimal that reads
back to the same float32 (``0.97``, not ``0.9700000286102295``).

The file is gzip (level 6, no timestamp or name in the header), so the same documents give
the same bytes.
"""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from curate.errors import output_error
from curate.formats import ShardFormat
from curate.registry import output_format
from curate.schema import STAGE_FIELDS
from curate.storage import AnyPath, as_path, tmp_path, unlink_quietly, write_bytes_atomic

_TOP = ("id", "text", "source")
_RESERVED = frozenset({"url", "meta", *STAGE_FIELDS})  # metadata keys a reader takes for columns


def document_record(row: dict[str, Any]) -> dict[str, Any]:
    """One document (a row of curate's schema) in the Dolma/datatrove shape."""
    rec: dict[str, Any] = {k: row.get(k) for k in _TOP}
    columns = {k: v for k, v in row.items() if k not in _TOP and k != "meta"}
    meta_raw = row.get("meta")
    metadata: dict[str, Any] = {}
    if meta_raw is not None:
        try:
            meta = json.loads(meta_raw)
        except ValueError:
            meta = None
        if not isinstance(meta, dict):
            metadata["meta"] = meta_raw
        elif meta and not (meta.keys() & _RESERVED or meta.keys() & columns.keys()):
            metadata.update(meta)
        else:
            metadata["meta"] = meta
    metadata.update(columns)
    rec["metadata"] = metadata
    return rec


def _rows(table: pa.Table) -> Iterator[dict[str, Any]]:
    """The table's rows as dicts, float32 values as the shortest decimals that read back to them."""
    names = table.column_names
    cols = []
    for f, col in zip(table.schema, table.columns):
        values = col.to_pylist()
        if pa.types.is_float32(f.type):
            values = [None if v is None else float(str(np.float32(v))) for v in values]
        cols.append(values)
    for vals in zip(*cols):
        yield dict(zip(names, vals))


class JsonlWriter:
    """Streams tables into one gzipped JSON lines file under a temporary name; ``close`` renames it."""

    def __init__(self, path: AnyPath, schema: pa.Schema | None = None) -> None:
        self.path = as_path(path)
        self.schema = schema
        self.rows = 0
        self.tmp = tmp_path(self.path) if isinstance(self.path, Path) else None
        self._raw: Any = None
        self._gz: gzip.GzipFile | None = None

    def _open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._raw = open(self.tmp, "wb") if self.tmp is not None else io.BytesIO()  # noqa: SIM115 - closed in close/abort
            self._gz = gzip.GzipFile(filename="", mode="wb", compresslevel=6, fileobj=self._raw, mtime=0)
        except OSError as exc:
            self.abort()
            raise output_error(self.path, exc) from exc

    def write(self, table: pa.Table) -> None:
        if self._gz is None:
            self._open()
        if self.schema is None:
            self.schema = table.schema
        assert self._gz is not None
        lines = [json.dumps(document_record(row), ensure_ascii=False, separators=(",", ":")) for row in _rows(table)]
        if not lines:
            return
        try:
            self._gz.write(("\n".join(lines) + "\n").encode("utf-8", "surrogatepass"))
        except OSError as exc:
            self.abort()
            raise output_error(self.path, exc) from exc
        self.rows += len(lines)

    def close(self) -> None:
        if self._gz is None:
            self._open()
        assert self._gz is not None
        try:
            self._gz.close()
            if self.tmp is None:
                write_bytes_atomic(self.path, self._raw.getvalue())
                return
            self._raw.flush()
            os.fsync(self._raw.fileno())
            self._raw.close()
            os.replace(self.tmp, self.path)
        except OSError as exc:
            self.abort()
            raise output_error(self.path, exc) from exc
        finally:
            self._gz = None

    def abort(self) -> None:
        for f in (self._gz, self._raw):
            try:
                if f is not None:
                    f.close()
            except Exception:  # noqa: BLE001 - best effort while failing
                pass
        self._gz = self._raw = None
        if self.tmp is not None:
            unlink_quietly(self.tmp)


@output_format("jsonl", help="gzipped JSON lines (part-*.jsonl.gz) in Dolma's and datatrove's shape: id, text, source, metadata.")
class Jsonl(ShardFormat):
    """JSON lines for other tools (curate's stages read Parquet; ``curate import`` reads these back)."""

    name: ClassVar[str] = "jsonl"
    suffix: ClassVar[str] = ".jsonl.gz"

    def writer(self, path: Any, schema: pa.Schema | None = None) -> JsonlWriter:
        return JsonlWriter(path, schema)
