"""The stage runtime: one lifecycle for every command, so every guarantee holds everywhere.

A stage only describes its work: its parameters (a dataclass whose fields are declared with
:func:`param`), what it reads, where it writes, and the work itself. :func:`run_stage` does
the rest, the same way for every command:

1. **Inputs** are resolved and fingerprinted (a finished curate directory by its
   ``_SUCCESS`` fingerprint, other files by name, size and modification time).
2. **Overlap**: an output that equals, lies inside or contains an input is refused before
   anything is touched.
3. **State** of the output, compared with the parameters and input fingerprints an earlier
   run recorded: the same -> nothing to do (the old record is reported and its marker
   touched, so make is satisfied); inputs changed -> the output is deleted and made again,
   said in one warning line that ``--quiet`` does not hide; parameters changed -> an error
   naming what changed, unless ``--overwrite``. ``--overwrite`` and a restart delete only
   an output curate wrote (it has its parameters file) or an empty directory.
4. **Work**, on the executor the command asked for: a map pass (one shard per input shard),
   a file pass (one shard per input file), a stream cut into shards, or the stage's own
   phases (global stages end with a map pass; sinks write other files).
5. **Failure policy**: a failed shard is one line, printed once; the stage then fails with
   one line whose advice fits the cause. A stage that kept nothing and whose commonest
   rejection reason is an error (``extractor_error``, ``decode_error``, ...) exits 1.
6. **Completion**: the record (merged stats, parameters, the output's fingerprint and the
   stage's summary lines) is written last; it is what the next stage fingerprints.

Stage kinds (each a small protocol): :class:`MapStage` (a table in, kept and rejected
documents and counters out), :class:`Stage` with ``kind`` ``source`` (files or a stream in,
documents out), ``global`` (phases over the whole input, then a map pass) and ``sink``
(documents in, other files out). The CLI builds each command's options from the same
declaration (``cli.py``), and ``--params FILE.yaml`` takes the same keys.
"""

from __future__ import annotations

import copy
import dataclasses
import errno
import json
import logging
import os
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import MISSING, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from curate import __version__
from curate.dataset import (
    ERRORS_DIR,
    Inputs,
    OutputDir,
    ShardStats,
    ShardWriter,
    Target,
    check_columns,
    check_ids,
    dataset_inputs,
    iter_tables,
    open_parquet,
    sha256_json,
    shard_name,
    text_bytes,
)
from curate.errors import CurateError, StageFailed, output_error
from curate.executor import Executor, make_executor
from curate.executor import default_workers as default_workers  # re-exported: stages do not import the executor
from curate.executor import show_progress_bar as show_progress_bar
from curate.schema import BASE_SCHEMA, REQUIRED_COLUMNS, rejected_schema, source_matcher
from curate.storage import AnyPath, RemotePath, is_url, write_bytes_atomic

log = logging.getLogger("curate")

_OUTPUT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}  # the output cannot be written: stop the stage

# --------------------------------------------------------------------------- parameter declarations


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
}  # fmt: skip

MAP_OPTIONS = ("inputs", "out", "workers", "overwrite", "keep_rejected", "only_sources", "executor", "ray_address")


# --------------------------------------------------------------------------- stage protocols


@dataclass
class FileBatch:
    """What a file reader (a source stage's ``read``) yields: kept and rejected documents, counters, and the input they came from.

    ``docs_in``/``bytes_in`` count the input (e.g. HTML records and bytes); by default they are
    the kept plus rejected rows and their text bytes. ``source`` attributes them per source.
    """

    kept: pa.Table
    rejected: pa.Table | None = None
    counters: dict[str, Any] = field(default_factory=dict)
    docs_in: int | None = None
    bytes_in: int | None = None
    source: str = ""


@dataclass
class MapResult:
    """What a map stage returns for one batch of documents."""

    kept: pa.Table
    rejected: pa.Table | None = None  # same columns plus ``reason``
    counters: dict[str, Any] = field(default_factory=dict)


class Stage:
    """What every stage declares. Subclasses are dataclasses whose fields are :func:`param` declarations.

    ``name`` is what its records say (``_SUCCESS`` ``stage``); ``title`` what its log lines
    and summary say. ``options`` names the shared options (:data:`COMMON`) it takes, and
    ``option_help`` rewords one for this stage. ``error_reasons`` are rejection reasons that
    mean something failed (not a decision about the document): see :func:`check_outcome`.
    Instances must be picklable (they travel to worker processes); load models lazily.
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    kind: ClassVar[str] = ""
    options: ClassVar[tuple[str, ...]] = MAP_OPTIONS
    option_help: ClassVar[dict[str, str]] = {}
    option_defaults: ClassVar[dict[str, Any]] = {}
    error_reasons: ClassVar[frozenset[str]] = frozenset()
    checks_ids: ClassVar[bool] = True  # ids of foreign inputs are checked (sinks that drop ids say False)
    required_columns: ClassVar[tuple[str, ...]] = REQUIRED_COLUMNS  # checked in the inputs before any work
    #: Report sections this stage feeds: section name -> where its data is in the record (a dotted path,
    #: e.g. "counters.lang"). Written into the record, so the report reads it without importing the stage.
    sections: ClassVar[dict[str, str]] = {}

    @classmethod
    def display(cls) -> str:
        return cls.title or cls.name.replace("_", " ")

    def params(self) -> dict[str, Any]:
        """The parameters the output is made with (declared fields with ``record``); stages add derived ones."""
        return {f.name: getattr(self, f.name) for f, p in declared_params(type(self)) if p.record}

    def inputs(self, common: Common) -> Inputs:
        """What the stage reads (default: dataset directories, Parquet files or globs from --in)."""
        return dataset_inputs(common.inputs)

    def target(self, common: Common) -> Target:
        """Where the stage writes (default: a dataset directory)."""
        return OutputDir(common.out)

    def summary(self, record: dict[str, Any]) -> list[str]:
        """The lines the command prints at the end (stored in the record for the report)."""
        return [summary_line(self.display(), record, record.get("wall_seconds", 0.0)), f"  output: {record.get('output', '')}"]

    def run(self, ctx: Context) -> dict[str, Any]:
        """Do the work; returns the record's stage-specific entries (stats, counters)."""
        raise NotImplementedError


class MapStage(Stage):
    """A stage that maps a table of documents to kept and rejected documents, shard by shard."""

    kind: ClassVar[str] = "map"

    def __call__(self, table: pa.Table) -> MapResult:
        raise NotImplementedError

    def run(self, ctx: Context) -> dict[str, Any]:
        return ctx.map_pass(self)


# --------------------------------------------------------------------------- the lifecycle


def summary_line(stage: str, stats: dict[str, Any], seconds: float) -> str:
    """One line: docs in -> out, bytes, seconds, top reasons."""
    din, dout = stats.get("docs_in", 0), stats.get("docs_out", 0)
    pct = f" ({100.0 * dout / din:.1f}%)" if din else ""
    reasons = sorted(stats.get("rejected", {}).items(), key=lambda kv: -kv[1]["docs"])
    top = ", ".join(f"{r} {v['docs']:,}" for r, v in reasons[:4])
    more = f" +{len(reasons) - 4} more" if len(reasons) > 4 else ""
    line = f"{stage}: {din:,} -> {dout:,} docs{pct}, {_mb(stats.get('bytes_in', 0))} -> {_mb(stats.get('bytes_out', 0))}, {seconds:.1f} s"
    return line + (f"; rejected: {top}{more}" if top else "")


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def _canonical(path: AnyPath) -> tuple[str, str]:
    if isinstance(path, RemotePath):
        return path.protocol, path.path.rstrip("/")
    return "file", str(Path(os.path.abspath(path)).resolve())


def check_overlap(outs: Iterable[AnyPath], ins: Iterable[AnyPath]) -> None:
    """Refuse an output that equals, lies inside or contains an input (nothing is touched yet)."""
    ins = list(ins)
    for o in outs:
        po, so = _canonical(o)
        for i in ins:
            pi, si = _canonical(i)
            if po != pi:
                continue
            if so == si:
                how = "is"
            elif so.startswith(si.rstrip("/") + "/"):
                how = "lies inside"
            elif si.startswith(so.rstrip("/") + "/"):
                how = "contains"
            else:
                continue
            raise CurateError(f"--out {o} {how} the input {i}; write the output outside the inputs (nothing was changed)")


def _diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    parts = []
    for k in sorted(set(old) | set(new)):
        if k.startswith("_") or k in ("inputs", "input_fingerprints") or old.get(k) == new.get(k):
            continue
        a, b = old.get(k), new.get(k)
        if isinstance(a, (dict, list)) or isinstance(b, (dict, list)) or len(repr(a)) + len(repr(b)) > 60:
            parts.append(k)
        else:
            parts.append(f"{k} {json.dumps(a)} -> {json.dumps(b)}")
    return ", ".join(parts) or "other curate version"


def _changed_inputs(old: dict[str, Any], new: dict[str, Any]) -> str:
    a, b = old.get("inputs") or [], new.get("inputs") or []
    fa, fb = old.get("input_fingerprints") or [], new.get("input_fingerprints") or []
    if a == b and len(fa) == len(fb):
        names = [n for n, x, y in zip(b, fa, fb) if x != y]
        return ", ".join(names) + (" changed since" if len(names) == 1 else " changed since")
    return "the inputs are others: " + ", ".join(b)


def prepare_output(stage: Stage, target: Target, params: dict[str, Any], overwrite: bool) -> dict[str, Any] | None:
    """Bring the output to a state where the work can start; returns the old record when nothing is to do.

    The rule (one for every command): same parameters and inputs -> resume, or nothing to
    do when complete; inputs changed -> start again, with one warning line; parameters
    changed -> an error unless ``overwrite`` (or nothing finished is there yet: a run that
    failed at once is simply redone). Only an output curate wrote is ever deleted.
    """
    title = stage.display()
    if target.exists():
        if not target.owned():
            raise CurateError(
                f"{target.path}: exists, is not empty and was not written by curate (no parameters file); choose another --out"
            )
        old = target.read_params()
        if overwrite:
            log.info("%s: --overwrite: deleting %s and starting again", title, target.path)
            target.clear()
        elif old is not None and _same_params(old, params):
            if old.get("input_fingerprints") == params.get("input_fingerprints"):
                record = target.read_record()
                if record is not None:
                    change = _changed_output(target, params, record)
                    if change is None:
                        target.touch()
                        log.info(
                            "%s: %s is complete and its inputs are unchanged; nothing to do (--overwrite redoes it)", title, target.path
                        )
                        return record
                    if change == "missing":
                        log.warning("%s: files of %s were deleted since it was written; making them again", title, target.path)
                    else:
                        log.warning("%s: %s was changed since it was written; starting again", title, target.path)
                        target.clear()
            else:
                log.warning("%s: %s was made from other inputs (%s it was written); starting again", title, target.path,
                            _changed_inputs(old, params))  # fmt: skip
                target.clear()
        elif not target.outputs():
            log.info("%s: %s holds no finished output of its earlier run (other parameters); starting again", title, target.path)
            target.clear()
        else:
            what = _diff(old or {}, params)
            writer = (old or {}).get("_stage", "a stage")
            raise CurateError(f"{target.path}: was written by {writer} with other parameters ({what}); use --overwrite to start again")
    target.create()
    if target.read_params() is None:
        target.write_params(params)
    return None


def output_fingerprint(target: Target, params: dict[str, Any]) -> str:
    """What the next stage fingerprints: the parameters (inputs included) and the output's data files (names, sizes)."""
    return sha256_json({"params": params, "outputs": target.outputs()})


def _changed_output(target: Target, params: dict[str, Any], record: dict[str, Any]) -> str | None:
    """None when a finished output is as its record says; "missing" when files were deleted; "changed" otherwise."""
    want = record.get("fingerprint")
    if not want or want == output_fingerprint(target, params):
        return None
    have = {name for name, _ in target.outputs()}
    listed = record.get("output_files")
    if listed is not None and have < set(listed):
        return "missing"
    return "changed"


def _same_params(old: dict[str, Any], new: dict[str, Any]) -> bool:
    skip = ("inputs", "input_fingerprints")
    return {k: v for k, v in old.items() if k not in skip} == {k: v for k, v in new.items() if k not in skip}


def check_outcome(stage: Stage, record: dict[str, Any]) -> None:
    """Fail a stage that kept nothing because its records failed; warn when many failed.

    "Failed" means a rejection reason the stage declares as an error (``error_reasons``):
    the extractor raised, the bytes did not decode, ... -- not a decision about the text.
    """
    din, dout = record.get("docs_in") or 0, record.get("docs_out") or 0
    rejected = record.get("rejected") or {}
    if not din or not rejected:
        return
    errors = {r: v["docs"] for r, v in rejected.items() if r in stage.error_reasons}
    if not errors:
        return
    top = max(rejected.items(), key=lambda kv: kv[1]["docs"])[0]
    first = ((record.get("counters") or {}).get("first_error") or {}).get(top)
    example = f" (the first: {first})" if first else ""
    if dout == 0 and top in errors:
        raise StageFailed(
            f"{stage.display()}: kept no document: {errors[top]:,} of {din:,} records failed with {top}{example}; "
            "fix the cause, then re-run with --overwrite"
        )
    n = sum(errors.values())
    if n >= 0.1 * din:
        worst = max(errors, key=errors.__getitem__)
        first = ((record.get("counters") or {}).get("first_error") or {}).get(worst)
        log.warning("%s: %s of %s records failed (%s)%s", stage.display(), f"{n:,}", f"{din:,}",
                    ", ".join(f"{r} {c:,}" for r, c in sorted(errors.items())), f"; the first {worst}: {first}" if first else "")  # fmt: skip


def check_input_columns(inputs: Inputs, required: Sequence[str]) -> None:
    """Required columns and their types, in the first shard of each input directory and in every foreign file (footers only)."""
    if not required or not inputs.files:
        return
    seen: set[str] = set()
    for f in inputs.files:
        parent = str(f.parent)
        if parent in seen and f not in inputs.foreign:
            continue
        seen.add(parent)
        check_columns(f, open_parquet(f).schema_arrow, required)


def stage_params(stage: Stage, inputs: Inputs, common: Common) -> dict[str, Any]:
    """What an output is made from: the stage's parameters, the shared options that change it, its inputs."""
    params: dict[str, Any] = {"_stage": stage.name, "inputs": inputs.names, "input_fingerprints": inputs.fingerprints}
    if "keep_rejected" in stage.options:
        params["keep_rejected"] = common.keep_rejected
    if "only_sources" in stage.options:
        params["only_sources"] = [common.only_sources] if common.only_sources else None
    params.update(stage.params())
    return json.loads(json.dumps(params, sort_keys=True, default=str))


def run_stage(stage: Stage, common: Common, executor: Executor | None = None) -> dict[str, Any]:
    """Run one stage over its inputs into its output: the whole lifecycle (see the module docstring).

    Returns the completion record; its ``summary`` holds the lines to print.
    """
    started = time.monotonic()
    inputs = stage.inputs(common)
    target = stage.target(common)
    check_overlap(target.locations(), inputs.locations)
    params = stage_params(stage, inputs, common)
    check_input_columns(inputs, stage.required_columns)
    old = prepare_output(stage, target, params, common.overwrite)
    if old is not None:
        if "summary" not in old:
            old["summary"] = stage.summary(old)
        return old
    target.invalidate()
    if inputs.foreign and stage.required_columns:
        check_ids(inputs.foreign, ids=stage.checks_ids)
    own = executor is None
    if executor is None:
        executor = make_executor(common.executor or "local", common.workers, ray_address=common.ray_address)
    ctx = Context(stage, common, inputs, target, executor, params, started)
    try:
        result = stage.run(ctx)
    finally:
        if own:
            executor.close()
    check_outcome(stage, result)
    record = {
        "stage": stage.name,
        "curate_version": __version__,
        "params": {k: v for k, v in params.items() if not k.startswith("_")},
        "output": str(target.path),
        "wall_seconds": round(time.monotonic() - started, 3),
        **result,
    }
    outputs = target.outputs()
    record["fingerprint"] = sha256_json({"params": params, "outputs": outputs})
    record["output_files"] = [name for name, _ in outputs]
    record["summary"] = stage.summary(record)
    record["sections"] = dict(stage.sections)
    record["title"] = stage.display()
    target.write_record(record)
    return record


def run(stage: Stage, *, out: str | os.PathLike, inputs: Iterable[str | os.PathLike] = (), executor: Executor | None = None,
        **options: Any) -> dict[str, Any]:  # fmt: skip
    """Run a stage from Python (a notebook, a test) with the command's lifecycle; ``options`` are the shared options."""
    return run_stage(stage, Common(inputs=[str(i) for i in inputs], out=str(out), **options), executor)


# --------------------------------------------------------------------------- the context a stage works in


class Context:
    """What a running stage gets: its inputs, output, executor, and the passes the runtime offers."""

    def __init__(self, stage: Stage, common: Common, inputs: Inputs, target: Target, executor: Executor, params: dict[str, Any],
                 started: float) -> None:  # fmt: skip
        self.stage = stage
        self.common = common
        self.inputs = inputs
        self.target = target
        self.executor = executor
        self.params = params
        self.started = started

    @property
    def out(self) -> AnyPath:
        return self.target.path

    @property
    def files(self) -> list[AnyPath]:
        return self.inputs.files

    @property
    def work(self) -> AnyPath:
        return self.out / "_work"

    @property
    def on_ray(self) -> bool:
        return getattr(self.executor, "name", "local") == "ray"

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any], *, labels: Sequence[str], desc: str,
            describe: Callable[[Any], str] | None = None, unit: str = "shard") -> list[Any]:  # fmt: skip
        """Run ``fn`` over ``items`` on the stage's executor (failures: one line each, then one error)."""
        return self.executor.map(fn, items, labels=labels, desc=desc, describe=describe, unit=unit)

    def share(self, value: Any) -> Any:
        """A handle to large read-only state for every task (``handle.get()`` inside the task)."""
        return self.executor.share(value)

    # -- passes
    def map_pass(
        self,
        stage: Any = None,
        *,
        per_shard: Callable[[int, AnyPath], Any] | None = None,
        finish: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """One shard per input shard through a map stage (``per_shard(i, path)`` gives each its own); resumes.

        ``only_sources`` (the shared option) limits the stage to matching sources; other rows pass through.
        Returns the merged stats, plus ``finish(merged)``'s entries.
        """
        od = self.target
        assert isinstance(od, OutputDir)
        stage = stage if stage is not None else self.stage
        only = [self.common.only_sources] if self.common.only_sources else None
        keep = bool(self.common.keep_rejected)
        names = [shard_name(i) for i in range(len(self.files))]
        done = od.done(names)
        pending = [
            _MapJob(per_shard(i, f) if per_shard else stage, f, od.path, n, keep, only)
            for i, (f, n) in enumerate(zip(self.files, names))
            if n not in done
        ]
        if done and pending:
            log.info("%s: resuming, %d of %d shard(s) already done", self.stage.display(), len(done), len(names))
        self.map(_map_shard, pending, labels=[j.name for j in pending], desc=self.stage.display(), describe=describe_shard)
        merged = od.merged_stats(names)
        return {**merged, **(finish(merged) if finish else {})}

    def file_pass(self, reader: Callable[[AnyPath], Iterable[FileBatch]], schema: pa.Schema = BASE_SCHEMA,
                  labels: Sequence[str] | None = None) -> dict[str, Any]:  # fmt: skip
        """One shard per input file (WARC, ...) through ``reader`` (picklable, yields :class:`FileBatch`); resumes."""
        od = self.target
        assert isinstance(od, OutputDir)
        keep = bool(self.common.keep_rejected)
        names = [shard_name(i) for i in range(len(self.files))]
        done = od.done(names)
        pending = [(i, _FileJob(reader, f, od.path, n, keep, schema)) for i, (f, n) in enumerate(zip(self.files, names)) if n not in done]
        if done and pending:
            log.info("%s: resuming, %d of %d shard(s) already done", self.stage.display(), len(done), len(names))
        shown = [f"{j.name} ({(labels[i] if labels else j.input.name)})" for i, j in pending]
        self.map(_file_shard, [j for _, j in pending], labels=shown, desc=self.stage.display(), describe=describe_shard)
        merged = od.merged_stats(names)
        check_unique_output_ids(od, names)
        return merged

    def stream_pass(
        self,
        records: Iterable[Any],
        *,
        shard_docs: int,
        counters: dict[str, int] | None = None,
        schema: pa.Schema | None = None,
    ) -> dict[str, Any]:
        """Cut a deterministic stream of records (``.doc`` and ``.reason``) into shards of ``shard_docs`` records.

        Shard ``k`` holds records ``k*shard_docs`` to ``(k+1)*shard_docs - 1`` of the stream
        (kept ones in ``part-k``, rejected ones in ``_rejected/part-k``). On a re-run the stream
        is read again but shards that exist are not rewritten. ``counters`` is a live mapping
        the stream updates; each shard records what changed while it filled.
        """
        return _write_stream(self, records, shard_docs, counters, schema or BASE_SCHEMA)


def check_unique_output_ids(od: OutputDir, names: list[str]) -> None:
    """Ids are unique across the shards a source stage wrote (two copies of one WARC file, say): an error naming both."""
    files = [od.shard_path(n) for n in names]
    try:
        check_ids(files)
    except CurateError as exc:
        raise CurateError(f"{od.path}: {exc}; the inputs hold the same records twice") from None


# --------------------------------------------------------------------------- shards


@dataclass
class _MapJob:
    stage: Any
    input: AnyPath
    out: AnyPath
    name: str
    keep_rejected: bool
    only_sources: list[str] | None = None


def _apply_to_sources(stage: Any, table: pa.Table, patterns: list[str]) -> MapResult:
    """Run ``stage`` on the rows whose source matches; the others pass through unchanged."""
    match = source_matcher(patterns)
    sources = table.column("source").to_pylist()
    mask = pa.array([match(s) for s in sources], pa.bool_())
    n_match = sum(mask.to_pylist())
    if n_match == table.num_rows:
        return stage(table)
    res = stage(table.filter(mask))
    rest = table.filter(pc.invert(mask))
    kept = res.kept
    for f in kept.schema:
        if f.name not in rest.column_names:
            rest = rest.append_column(f, pa.nulls(rest.num_rows, f.type))
    kept = pa.concat_tables([kept, rest.select(kept.column_names).cast(kept.schema)])
    counters = dict(res.counters)
    counters["passed_through"] = counters.get("passed_through", 0) + rest.num_rows
    return MapResult(kept, res.rejected, counters)


def _shard_failed(exc: BaseException, out: OutputDir, name: str, source: AnyPath) -> BaseException:
    """The error a failed shard raises: CurateErrors as they are; anything else with its traceback in OUT/_errors/."""
    if isinstance(exc, CurateError) or not isinstance(exc, Exception):
        return exc
    if isinstance(exc, OSError) and exc.errno in _OUTPUT_ERRNOS:
        return output_error(exc.filename or out.path, exc)
    log_file = out.path / ERRORS_DIR / f"{name}.txt"
    write_bytes_atomic(log_file, traceback.format_exc().encode())
    first_line = (str(exc).strip().splitlines() or [""])[0]
    err = CurateError(f"{source}: {type(exc).__name__}: {first_line} (traceback: {log_file})")
    err.transient = isinstance(exc, (OSError, MemoryError))  # type: ignore[attr-defined]
    err.unexpected = True  # type: ignore[attr-defined]  # not a known input error: Ray may retry it
    return err


def _map_shard(job: _MapJob) -> dict[str, Any]:
    """Run one map stage over one input shard (in a worker process)."""
    out = OutputDir(job.out)
    stats = ShardStats(shard=job.name, inputs=[str(job.input)])
    t0 = time.perf_counter()
    kept_w = ShardWriter(out.shard_path(job.name))
    rej_w = ShardWriter(out.rejected_path(job.name)) if job.keep_rejected else None
    try:
        read_counters: dict[str, Any] = {}
        first = True
        for table in iter_tables(job.input, counters=read_counters):
            if first:
                check_columns(job.input, table.schema, REQUIRED_COLUMNS)
                first = False
            stats.add_in(table)
            res = _apply_to_sources(job.stage, table, job.only_sources) if job.only_sources else job.stage(table)
            stats.add_out(res.kept)
            kept_w.write(res.kept)
            if res.rejected is not None and res.rejected.num_rows:
                stats.add_rejected(res.rejected)
                if rej_w is not None:
                    rej_w.write(res.rejected)
            stats.count(res.counters)
        stats.count(read_counters)
        if rej_w is not None:
            if rej_w.schema is None:
                rej_w.schema = rejected_schema(kept_w.schema)
            rej_w.close()
        stats.seconds = time.perf_counter() - t0
        out.write_shard_stats(stats)
        kept_w.close()  # last: its existence marks the shard complete
    except BaseException as exc:
        kept_w.abort()
        if rej_w is not None:
            rej_w.abort()
        err = _shard_failed(exc, out, job.name, job.input)
        if err is exc:
            raise
        raise err from exc
    return stats.to_dict()


def describe_shard(stats: dict[str, Any]) -> str:
    """Progress note for one finished shard."""
    return f"{stats['docs_in']:,} -> {stats['docs_out']:,} docs, {stats['seconds']:.1f} s"


@dataclass
class _FileJob:
    reader: Any  # picklable callable: reader(path) -> Iterator[FileBatch]
    input: AnyPath
    out: AnyPath
    name: str
    keep_rejected: bool
    schema: pa.Schema


def _file_shard(job: _FileJob) -> dict[str, Any]:
    """Read one input file into one shard (in a worker process); same file order as ``_map_shard``."""
    out = OutputDir(job.out)
    stats = ShardStats(shard=job.name, inputs=[str(job.input)])
    t0 = time.perf_counter()
    kept_w = ShardWriter(out.shard_path(job.name), job.schema)
    rej_w = ShardWriter(out.rejected_path(job.name), rejected_schema(job.schema)) if job.keep_rejected else None
    try:
        for batch in job.reader(job.input):
            rejected = batch.rejected if batch.rejected is not None else rejected_schema(job.schema).empty_table()
            n_in = batch.docs_in if batch.docs_in is not None else batch.kept.num_rows + rejected.num_rows
            b_in = batch.bytes_in if batch.bytes_in is not None else text_bytes(batch.kept) + text_bytes(rejected)
            stats.docs_in += n_in
            stats.bytes_in += b_in
            src = stats._src(batch.source)
            src["docs_in"] += n_in
            src["bytes_in"] += b_in
            stats.add_out(batch.kept)
            kept_w.write(batch.kept)
            if rejected.num_rows:
                stats.add_rejected(rejected)
                if rej_w is not None:
                    rej_w.write(rejected)
            stats.count(batch.counters)
        if rej_w is not None:
            rej_w.close()
        stats.seconds = time.perf_counter() - t0
        out.write_shard_stats(stats)
        kept_w.close()  # last: its existence marks the shard complete
    except BaseException as exc:
        kept_w.abort()
        if rej_w is not None:
            rej_w.abort()
        err = _shard_failed(exc, out, job.name, job.input)
        if err is exc:
            raise
        raise err from exc
    return stats.to_dict()


def _write_stream(
    ctx: Context, records: Iterable[Any], shard_docs: int, counters: dict[str, int] | None, schema: pa.Schema
) -> dict[str, Any]:
    from tqdm import tqdm

    if shard_docs < 1:
        raise CurateError(f"--shard-docs must be at least 1, got {shard_docs}")
    od = ctx.target
    assert isinstance(od, OutputDir)
    keep_rejected = bool(ctx.common.keep_rejected)
    title = ctx.stage.display()
    counters = counters if counters is not None else {}
    names: list[str] = []
    kept: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    last_counters: dict[str, int] = {}
    t0 = time.perf_counter()
    bar = tqdm(desc=title, unit=" docs", dynamic_ncols=True) if show_progress_bar() else None

    def flush() -> None:
        nonlocal kept, rejected, last_counters, t0
        name = shard_name(len(names))
        names.append(name)
        now = dict(counters)
        delta = {k: v - last_counters.get(k, 0) for k, v in now.items() if v != last_counters.get(k, 0)}
        last_counters = now
        if not od.is_done(name):
            stats = ShardStats(shard=name)
            kt = pa.Table.from_pylist(kept, schema=schema)
            rt = pa.Table.from_pylist(rejected, schema=rejected_schema(schema))
            stats.add_in(kt)
            stats.add_in(rt)
            stats.add_out(kt)
            stats.add_rejected(rt)
            stats.count(delta)
            if keep_rejected:
                w = ShardWriter(od.rejected_path(name), rejected_schema(schema))
                w.write(rt)
                w.close()
            stats.seconds = time.perf_counter() - t0
            od.write_shard_stats(stats)
            w = ShardWriter(od.shard_path(name), schema)
            w.write(kt)
            w.close()
            if bar is None:
                log.info("%s: %s written: %d docs (%d rejected)", title, name, len(kept), len(rejected))
        kept, rejected = [], []
        t0 = time.perf_counter()

    try:
        for rec in records:
            if rec.reason is None:
                kept.append(rec.doc)
                if bar is not None:
                    bar.update(1)
            else:
                rejected.append({**rec.doc, "reason": rec.reason})
            if len(kept) + len(rejected) >= shard_docs:
                flush()
        if kept or rejected or not names:
            flush()
    finally:
        if bar is not None:
            bar.close()
    return od.merged_stats(names)
