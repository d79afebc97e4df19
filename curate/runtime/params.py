"""Stage parameters: one declaration gives the option, its ``--help`` line, the ``--params`` YAML key and the record.

A stage's fields are declared with :func:`param`; the shared options every command may take
(``--in``, ``--out``, ``--workers``, ...) are declared once in :data:`COMMON`, and a stage names
the ones it takes. What an output is made with (``_params.json``) is the declared fields
whose ``record`` is true, plus what the stage derives from them (``Stage.derived_params``):
no stage lists its parameters a second time.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from dataclasses import MISSING, dataclass, field
from pathlib import Path
from typing import Any

from curate.formats import DEFAULT as DEFAULT_FORMAT
from curate.formats import format_help, format_names
from curate.storage import is_url


@dataclass(frozen=True)
class Param:
    """How one stage parameter appears on the command line, in ``--params`` YAML and in ``_params.json``.

    The option is ``--field-name`` (or ``flag``); its type comes from the field's annotation
    (``int``, ``float``, ``str``, ``bool``, ``list[str]``, ``X | None``), its bounds from
    ``min``/``max``, and its allowed values from ``choices``.
    """

    help: str
    flag: str | None = None
    min: float | None = None
    max: float | None = None
    min_open: bool = False
    max_open: bool = False
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    multiple: bool = False  # repeatable (list fields)
    split: bool = False  # each value may hold comma-separated items
    required: bool = False
    record: bool = True  # part of the parameters an output is made with (_params.json)
    relevant: Any = None  # stage -> bool: recorded only when it is (a threshold only one mode reads); None: always
    secondary: str | None = None  # a boolean's off switch, e.g. "--no-append-eod"
    flag_value: Any = None  # the value of the option given without a value (--verify)
    show_default: bool | str = True


def param(default: Any = MISSING, help: str = "", **kw: Any) -> Any:
    """A dataclass field that is a stage parameter (see :class:`Param`)."""
    meta = {"param": Param(help=help, **kw)}
    if isinstance(default, (list, dict, set)):
        return field(default_factory=lambda d=default: copy.deepcopy(d), metadata=meta)
    if default is MISSING:
        return field(metadata=meta)
    return field(default=default, metadata=meta)


def declared_params(cls: type) -> list[tuple[dataclasses.Field, Param]]:
    """The fields of a stage class declared with :func:`param`, in order."""
    if not dataclasses.is_dataclass(cls):
        return []
    return [(f, f.metadata["param"]) for f in dataclasses.fields(cls) if "param" in f.metadata]


@dataclass
class Common:
    """The options every command shares, declared once (``COMMON``); each stage names the ones it takes."""

    inputs: list[str] = field(default_factory=list)
    out: str | None = None
    workers: int | None = None
    overwrite: bool = False
    keep_rejected: bool = False
    only_sources: str | None = None
    executor: str = "local"
    ray_address: str | None = None
    format: str = DEFAULT_FORMAT

    def __post_init__(self) -> None:
        # Local paths become absolute: a Ray task runs in another working directory (or on another machine).
        self.inputs = [absolute(i) for i in self.inputs]
        if self.out is not None:
            self.out = absolute(self.out)


def absolute(path: str | os.PathLike) -> str:
    """A local path made absolute (``~`` expanded); a URL as it is."""
    s = os.fspath(path)
    return s if is_url(s) else str(Path(s).expanduser().absolute())


#: name -> (annotation, default, declaration) of the shared options.
COMMON: dict[str, tuple[Any, Any, Param]] = {
    "inputs": (list[str], [], Param("Input dataset directory, Parquet file or glob (repeatable; local or a URL: s3://bucket/dir).",
                                     flag="--in", metavar="DIR", multiple=True, required=True)),
    "out": (str, None, Param("Output dataset directory (local or a URL: s3://bucket/dir).", metavar="DIR", required=True)),
    "workers": (int | None, None, Param("Worker processes [default: all cores].", min=1, show_default=False)),
    "overwrite": (bool, False, Param("Delete what an earlier run wrote to OUT and start again, instead of resuming "
                                     "(only an output curate wrote: it has its _params.json).")),
    "keep_rejected": (bool, False, Param("Also write dropped documents to OUT/_rejected/ with a reason.")),
    "only_sources": (str | None, None, Param("Apply the stage only to these sources (comma-separated globs, e.g. 'cc/*'); "
                                             "other documents pass through unchanged.", metavar="GLOBS")),
    "executor": (str, "local", Param("Run shards as local worker processes, or as Ray tasks (pip install 'curate[ray]').",
                                     choices=("local", "ray"))),
    "ray_address": (str | None, None, Param("With --executor ray: 'auto' or ray://HOST:PORT of a running cluster "
                                            "[default: start Ray locally].", metavar="ADDR", show_default=False)),
    "format": (str, DEFAULT_FORMAT, Param("Format of the kept documents: " + format_help(), choices=tuple(format_names()))),
}  # fmt: skip

#: The shared options of a stage that maps documents to documents.
MAP_OPTIONS = ("inputs", "out", "workers", "overwrite", "keep_rejected", "only_sources", "executor", "ray_address", "format")
