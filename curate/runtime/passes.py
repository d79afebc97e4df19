"""The context a running stage works in, and the passes the runtime offers it.

A pass is a set of shard jobs on the stage's executor, each resumable on its own: the map
pass (input shard k -> output shard k through a map stage), the file pass (input file k ->
shard k through a reader), and the stream pass (a deterministic record stream cut into
shards). Every shard is written through ``OutputDir.shard``, the one commit path.
"""

from __future__ import annotations

import errno
import logging
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from curate.dataset import Inputs, check_columns, check_ids, iter_tables
from curate.errors import CurateError, output_error
from curate.executor import Executor, show_progress_bar
from curate.runtime.stage import FileBatch, MapResult
from curate.schema import BASE_SCHEMA, REQUIRED_COLUMNS, rejected_schema, source_matcher
from curate.stats import text_bytes
from curate.storage import AnyPath, write_bytes_atomic
from curate.targets import ERRORS_DIR, OutputDir, Target, shard_name

if TYPE_CHECKING:
    from curate.runtime.params import Common
    from curate.runtime.stage import Stage

log = logging.getLogger("curate")

_OUTPUT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}  # the output cannot be written: stop the stage


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
            _MapJob(per_shard(i, f) if per_shard else stage, f, od.path, n, keep, only, od.format.name)
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
        pending = [
            (i, _FileJob(reader, f, od.path, n, keep, schema, od.format.name))
            for i, (f, n) in enumerate(zip(self.files, names))
            if n not in done
        ]
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
    format: str | None = None


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
    out = OutputDir(job.out, job.format)
    try:
        with out.shard(job.name, keep_rejected=job.keep_rejected, inputs=[str(job.input)]) as shard:
            read_counters: dict[str, Any] = {}
            first = True
            for table in iter_tables(job.input, counters=read_counters):
                if first:
                    check_columns(job.input, table.schema, REQUIRED_COLUMNS)
                    first = False
                shard.stats.add_in(table)
                res = _apply_to_sources(job.stage, table, job.only_sources) if job.only_sources else job.stage(table)
                shard.keep(res.kept)
                shard.reject(res.rejected)
                shard.count(res.counters)
            shard.count(read_counters)
    except BaseException as exc:
        err = _shard_failed(exc, out, job.name, job.input)
        if err is exc:
            raise
        raise err from exc
    return shard.stats.to_dict()


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
    format: str | None = None


def _file_shard(job: _FileJob) -> dict[str, Any]:
    """Read one input file into one shard (in a worker process); same file order as ``_map_shard``."""
    out = OutputDir(job.out, job.format)
    empty_rejected = rejected_schema(job.schema).empty_table()
    try:
        with out.shard(job.name, job.schema, job.keep_rejected, inputs=[str(job.input)]) as shard:
            for batch in job.reader(job.input):
                rejected = batch.rejected if batch.rejected is not None else empty_rejected
                n_in = batch.docs_in if batch.docs_in is not None else batch.kept.num_rows + rejected.num_rows
                b_in = batch.bytes_in if batch.bytes_in is not None else text_bytes(batch.kept) + text_bytes(rejected)
                shard.stats.add_in_counts(n_in, b_in, batch.source)
                shard.keep(batch.kept)
                shard.reject(rejected)
                shard.count(batch.counters)
    except BaseException as exc:
        err = _shard_failed(exc, out, job.name, job.input)
        if err is exc:
            raise
        raise err from exc
    return shard.stats.to_dict()


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
            kt = pa.Table.from_pylist(kept, schema=schema)
            rt = pa.Table.from_pylist(rejected, schema=rejected_schema(schema))
            with od.shard(name, schema, keep_rejected, started=t0) as shard:
                shard.stats.add_in(kt)
                shard.stats.add_in(rt)
                shard.keep(kt)
                shard.reject(rt)
                shard.count(delta)
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
