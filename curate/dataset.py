"""Dataset directories: Parquet shards, atomic writes, resume, per-shard stats, ``_SUCCESS``.

Layout of a stage's output (DESIGN.md):

    OUT/part-00000.parquet           kept documents, one shard per input shard
    OUT/_rejected/part-00000.parquet dropped documents with ``reason`` (--keep-rejected;
                                     the underscore keeps pandas.read_parquet(OUT) to kept rows)
    OUT/_stats/part-00000.json       per-shard counters
    OUT/_params.json                 the stage's parameters, written first
    OUT/_SUCCESS                     written last: merged stats and parameters

Every file is written under a temporary name and renamed into place. A shard's files
are written in the order rejected, stats, kept, so an existing ``part-*.parquet`` means
the whole shard (its rejected rows and stats included) is complete: re-running skips
it. This module and ``executor.py`` are the only ones that know about files and shards.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import shutil
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate import __version__
from curate.errors import CurateError
from curate.executor import Executor, LocalExecutor
from curate.schema import REQUIRED_COLUMNS, conform, rejected_schema, source_matcher

log = logging.getLogger("curate")

SUCCESS = "_SUCCESS"
PARAMS = "_params.json"
STATS_DIR = "_stats"
REJECTED_DIR = "_rejected"
ERRORS_DIR = "_errors"
BATCH_ROWS = int(os.environ.get("CURATE_BATCH_ROWS", "1024"))
_DICT_COLUMNS = ("source", "lang", "reason")


def shard_name(index: int) -> str:
    """The file stem of shard ``index``: ``part-00000``."""
    return f"part-{index:05d}"


# --------------------------------------------------------------------------- atomic files


def _tmp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp.{os.getpid()}")


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_path(path)
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise CurateError(f"cannot write {path}: {exc.strerror or exc}") from exc


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write ``obj`` as indented, key-sorted JSON, atomically."""
    write_bytes_atomic(path, (json.dumps(obj, indent=1, sort_keys=True, default=str) + "\n").encode())


class ShardWriter:
    """Streams tables into one Parquet file (zstd) under a temporary name; ``close`` renames it.

    The schema is fixed by the first table (or ``schema``); later tables are cast to it.
    ``abort`` removes the temporary file, so a failed shard leaves nothing under its name.
    """

    def __init__(self, path: Path, schema: pa.Schema | None = None, compression: str = "zstd") -> None:
        self.path = Path(path)
        self.tmp = _tmp_path(self.path)
        self.schema = schema
        self.compression = compression
        self.rows = 0
        self._writer: pq.ParquetWriter | None = None

    def _open(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.path.parent.mkdir(parents=True, exist_ok=True)
        dict_cols = [c for c in _DICT_COLUMNS if c in schema.names]
        try:
            self._writer = pq.ParquetWriter(
                self.tmp,
                schema,
                compression=self.compression,
                use_dictionary=dict_cols or False,
                write_statistics=["id"] if "id" in schema.names else False,
            )
        except OSError as exc:
            raise CurateError(f"cannot write {self.path}: {exc}") from exc

    def write(self, table: pa.Table) -> None:
        if self._writer is None:
            self._open(self.schema or table.schema)
        assert self.schema is not None and self._writer is not None
        if table.schema != self.schema:
            table = table.select(self.schema.names).cast(self.schema)
        if table.num_rows:
            try:
                self._writer.write_table(table)
            except OSError as exc:
                self.abort()
                raise CurateError(f"cannot write {self.path}: {exc}") from exc
            self.rows += table.num_rows

    def close(self) -> None:
        if self._writer is None:
            if self.schema is None:
                raise ValueError("ShardWriter.close() before any table or schema")
            self._open(self.schema)
        assert self._writer is not None
        try:
            self._writer.close()
            with open(self.tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            os.replace(self.tmp, self.path)
        except OSError as exc:
            self.abort()
            raise CurateError(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    def abort(self) -> None:
        if self._writer is not None:
            try:
                self._writer.close()
            except Exception:  # noqa: BLE001 - best effort while failing
                pass
        self.tmp.unlink(missing_ok=True)


# --------------------------------------------------------------------------- stats


def text_bytes(table: pa.Table) -> int:
    """UTF-8 bytes of the ``text`` column."""
    if table.num_rows == 0 or "text" not in table.column_names:
        return 0
    col = table.column("text")
    return int(pc.sum(pc.binary_length(col)).as_py() or 0)


def _per_source(table: pa.Table) -> dict[str, tuple[int, int]]:
    if table.num_rows == 0:
        return {}
    if "source" not in table.column_names:
        return {"": (table.num_rows, text_bytes(table))}
    t = pa.table({"source": pc.fill_null(table.column("source"), ""), "b": pc.binary_length(table.column("text"))})
    g = t.group_by("source").aggregate([("b", "count"), ("b", "sum")])
    return {s: (int(n), int(b or 0)) for s, n, b in zip(g["source"].to_pylist(), g["b_count"].to_pylist(), g["b_sum"].to_pylist())}


def merge_counts(into: dict, other: dict) -> dict:
    """Add ``other``'s numbers into ``into``, recursively through nested dicts."""
    for key, value in other.items():
        if isinstance(value, dict):
            merge_counts(into.setdefault(key, {}), value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            into[key] = into.get(key, 0) + value
        else:
            into.setdefault(key, value)
    return into


@dataclass
class ShardStats:
    """Counters of one shard: documents and bytes in and out, per reason, per source."""

    shard: str
    inputs: list[str] = field(default_factory=list)
    docs_in: int = 0
    bytes_in: int = 0
    docs_out: int = 0
    bytes_out: int = 0
    rejected: dict[str, dict[str, int]] = field(default_factory=dict)
    per_source: dict[str, dict[str, Any]] = field(default_factory=dict)
    counters: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def _src(self, source: str) -> dict[str, Any]:
        return self.per_source.setdefault(source, {"docs_in": 0, "bytes_in": 0, "docs_out": 0, "bytes_out": 0, "rejected": {}})

    def add_in(self, table: pa.Table) -> None:
        for src, (n, b) in _per_source(table).items():
            self.docs_in += n
            self.bytes_in += b
            s = self._src(src)
            s["docs_in"] += n
            s["bytes_in"] += b

    def add_out(self, table: pa.Table) -> None:
        for src, (n, b) in _per_source(table).items():
            self.docs_out += n
            self.bytes_out += b
            s = self._src(src)
            s["docs_out"] += n
            s["bytes_out"] += b

    def add_rejected(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        t = pa.table(
            {
                "reason": table.column("reason"),
                "source": pc.fill_null(table.column("source"), "")
                if "source" in table.column_names
                else pa.nulls(table.num_rows, pa.string()).fill_null(""),
                "b": pc.binary_length(table.column("text")),
            }
        )
        g = t.group_by(["reason", "source"]).aggregate([("b", "count"), ("b", "sum")])
        for reason, src, n, b in zip(g["reason"].to_pylist(), g["source"].to_pylist(), g["b_count"].to_pylist(), g["b_sum"].to_pylist()):
            r = self.rejected.setdefault(reason, {"docs": 0, "bytes": 0})
            r["docs"] += int(n)
            r["bytes"] += int(b or 0)
            s = self._src(src)["rejected"]
            s[reason] = s.get(reason, 0) + int(n)

    def count(self, counters: dict[str, Any]) -> None:
        merge_counts(self.counters, counters)

    def to_dict(self) -> dict[str, Any]:
        return {
            "shard": self.shard,
            "inputs": self.inputs,
            "docs_in": self.docs_in,
            "bytes_in": self.bytes_in,
            "docs_out": self.docs_out,
            "bytes_out": self.bytes_out,
            "rejected": self.rejected,
            "per_source": self.per_source,
            "counters": self.counters,
            "seconds": round(self.seconds, 3),
        }


def merge_stats(shards: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Merge per-shard stats dicts into one (sums; ``seconds`` becomes CPU seconds)."""
    total: dict[str, Any] = {
        "shards": 0,
        "docs_in": 0,
        "bytes_in": 0,
        "docs_out": 0,
        "bytes_out": 0,
        "rejected": {},
        "per_source": {},
        "counters": {},
        "seconds": 0.0,
    }
    for s in shards:
        total["shards"] += 1
        merge_counts(total, {k: v for k, v in s.items() if k not in ("shard", "inputs")})
    total["cpu_seconds"] = round(total.pop("seconds"), 3)
    return total


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


# --------------------------------------------------------------------------- reading


def _is_curate_dir(path: Path) -> bool:
    return (path / PARAMS).exists() or (path / SUCCESS).exists() or (path / STATS_DIR).is_dir()


def resolve_inputs(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Parquet shard files of the given dataset directories, files or globs, in a stable order.

    A directory gives its ``part-*.parquet`` shards (or any ``*.parquet`` when it was not
    written by curate); a directory a curate stage is still writing (no ``_SUCCESS``) is
    an error, as is a path that does not exist or holds no Parquet.
    """
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            if _is_curate_dir(p) and not (p / SUCCESS).exists():
                raise CurateError(f"{p}: the stage that writes it has not finished (no {SUCCESS}); run it to completion first")
            files = sorted(p.glob("part-*.parquet")) or sorted(f for f in p.glob("*.parquet") if not f.name.startswith("."))
            if not files and not (p / SUCCESS).exists():
                raise CurateError(f"{p}: no Parquet shards in this directory")
            out.extend(files)
        elif p.is_file():
            if p.suffix != ".parquet":
                raise CurateError(f"{p}: not a Parquet file or dataset directory")
            out.append(p)
        elif any(ch in str(raw) for ch in "*?["):
            files = sorted(Path(f) for f in glob.glob(str(raw)) if f.endswith(".parquet"))
            if not files:
                raise CurateError(f"{raw}: no Parquet files match")
            out.extend(files)
        else:
            raise CurateError(f"{raw}: no such file or directory")
    seen: set[Path] = set()
    unique = []
    for f in out:
        r = f.resolve()
        if r not in seen:
            seen.add(r)
            unique.append(f)
    return unique


def open_parquet(path: Path) -> pq.ParquetFile:
    """Open one shard, turning a corrupt or unreadable file into a one-line error."""
    try:
        return pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as exc:
        raise CurateError(f"{path}: not a readable Parquet file ({exc})") from exc


def check_columns(path: Path, schema: pa.Schema, required: Iterable[str] = REQUIRED_COLUMNS) -> None:
    """Error naming the file when a required column is missing."""
    missing = [c for c in required if c not in schema.names]
    if missing:
        raise CurateError(f"{path}: missing column(s) {', '.join(missing)} (has: {', '.join(schema.names)})")


def iter_tables(path: Path, columns: list[str] | None = None, batch_rows: int = BATCH_ROWS) -> Iterator[pa.Table]:
    """Stream one shard as tables of at most ``batch_rows`` rows (at least one, maybe empty)."""
    pf = open_parquet(path)
    schema = pf.schema_arrow
    if columns is not None:
        check_columns(path, schema, columns)
    emitted = False
    try:
        for batch in pf.iter_batches(batch_size=batch_rows, columns=columns, use_threads=False):
            emitted = True
            yield conform(pa.Table.from_batches([batch]))
    except (OSError, pa.ArrowException) as exc:
        raise CurateError(f"{path}: cannot read ({exc})") from exc
    if not emitted:
        sel = schema if columns is None else pa.schema([schema.field(c) for c in columns])
        yield conform(sel.empty_table())


def iter_dataset(paths: Iterable[str | os.PathLike], columns: list[str] | None = None, batch_rows: int = BATCH_ROWS) -> Iterator[pa.Table]:
    """Stream every shard of the given dataset directories as tables."""
    for f in resolve_inputs(paths):
        yield from iter_tables(f, columns, batch_rows)


def read_table(paths: str | os.PathLike | Iterable[str | os.PathLike], columns: list[str] | None = None) -> pa.Table:
    """Read a (small) dataset whole; for tests and inspection, never inside a stage."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    tables = [t for t in iter_dataset(paths, columns) if t.num_rows]
    if not tables:
        return next(iter_dataset(paths, columns))
    return pa.concat_tables(tables, promote_options="permissive")


def read_success(path: str | os.PathLike) -> dict[str, Any]:
    """The ``_SUCCESS`` record of a finished stage."""
    p = Path(path) / SUCCESS
    if not p.exists():
        raise CurateError(f"{path}: no {SUCCESS}; the stage has not finished")
    return json.loads(p.read_text())


# --------------------------------------------------------------------------- output directories


class OutputDir:
    """A stage's output directory: parameters, resume state, shards and ``_SUCCESS``."""

    def __init__(self, path: str | os.PathLike, stage: str, params: dict[str, Any], overwrite: bool = False) -> None:
        self.path = Path(path)
        self.stage = stage
        self.params = json.loads(json.dumps(params, sort_keys=True, default=str))
        self.overwrite = overwrite
        self.started = time.monotonic()

    # -- paths
    def shard_path(self, name: str) -> Path:
        return self.path / f"{name}.parquet"

    def rejected_path(self, name: str) -> Path:
        return self.path / REJECTED_DIR / f"{name}.parquet"

    def stats_path(self, name: str) -> Path:
        return self.path / STATS_DIR / f"{name}.json"

    def is_done(self, name: str) -> bool:
        return self.shard_path(name).exists()

    @property
    def complete(self) -> bool:
        return (self.path / SUCCESS).exists()

    # -- lifecycle
    def prepare(self) -> None:
        """Create the directory, honour --overwrite, and refuse to mix parameters."""
        p = self.path
        if p.exists() and not p.is_dir():
            raise CurateError(f"{p}: exists and is not a directory")
        if p.exists() and any(p.iterdir()):
            if not _is_curate_dir(p):
                raise CurateError(f"{p}: exists, is not empty and is not a curate dataset directory; choose another --out")
            if self.overwrite:
                shutil.rmtree(p)
            else:
                old = self._old_params()
                if old is not None and old != self.params:
                    changed = sorted(k for k in set(old) | set(self.params) if old.get(k) != self.params.get(k))
                    raise CurateError(
                        f"{p}: was written by {old.get('_stage', 'a stage')} with other parameters "
                        f"(changed: {', '.join(changed)}); use --overwrite to start again"
                    )
        try:
            p.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CurateError(f"cannot create {p}: {exc.strerror or exc}") from exc
        for stale in list(p.glob(".*.tmp.*")) + list(p.glob(f"{REJECTED_DIR}/.*.tmp.*")) + list(p.glob(f"{STATS_DIR}/.*.tmp.*")):
            stale.unlink(missing_ok=True)
        if not (p / PARAMS).exists():
            write_json_atomic(p / PARAMS, self.params)

    def _old_params(self) -> dict[str, Any] | None:
        f = self.path / PARAMS
        if not f.exists():
            return None
        try:
            return json.loads(f.read_text())
        except ValueError:
            return None

    def invalidate(self) -> None:
        """Remove ``_SUCCESS`` before doing more work in this directory."""
        (self.path / SUCCESS).unlink(missing_ok=True)

    def write_shard_stats(self, stats: ShardStats) -> None:
        write_json_atomic(self.stats_path(stats.shard), stats.to_dict())

    def finish(self, names: list[str], extra: Callable[[dict[str, Any]], dict[str, Any]] | dict[str, Any] | None = None) -> dict[str, Any]:
        """Merge the stats of ``names`` and write ``_SUCCESS``; returns the record.

        ``extra`` (a dict, or a function of the merged stats) adds stage-wide entries.
        """
        shard_stats = []
        for name in names:
            f = self.stats_path(name)
            if not f.exists():
                raise CurateError(f"{self.path}: shard {name} has no stats; re-run the stage")
            shard_stats.append(json.loads(f.read_text()))
        merged = merge_stats(shard_stats)
        if callable(extra):
            extra = extra(merged)
        record = {
            "stage": self.stage,
            "curate_version": __version__,
            "params": {k: v for k, v in self.params.items() if not k.startswith("_")},
            "wall_seconds": round(time.monotonic() - self.started, 3),
            **merged,
            **(extra or {}),
        }
        write_json_atomic(self.path / SUCCESS, record)
        return record


# --------------------------------------------------------------------------- map stages


@dataclass
class MapResult:
    """What a map stage returns for one batch of documents."""

    kept: pa.Table
    rejected: pa.Table | None = None  # same columns plus ``reason``
    counters: dict[str, Any] = field(default_factory=dict)


class MapStage(Protocol):
    """A stage that maps a table of documents to kept and rejected documents.

    Instances must be picklable (they travel to worker processes); load models lazily.
    """

    name: str

    def params(self) -> dict[str, Any]: ...

    def __call__(self, table: pa.Table) -> MapResult: ...


@dataclass
class _MapJob:
    stage: Any
    input: Path
    out: Path
    name: str
    keep_rejected: bool
    stage_name: str
    params: dict[str, Any]
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


def _map_shard(job: _MapJob) -> dict[str, Any]:
    """Run one map stage over one input shard (in a worker process)."""
    out = OutputDir(job.out, job.stage_name, job.params)
    stats = ShardStats(shard=job.name, inputs=[str(job.input)])
    t0 = time.perf_counter()
    kept_w = ShardWriter(out.shard_path(job.name))
    rej_w = ShardWriter(out.rejected_path(job.name)) if job.keep_rejected else None
    try:
        first = True
        for table in iter_tables(job.input):
            if first:
                check_columns(job.input, table.schema)
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
        if isinstance(exc, CurateError) or not isinstance(exc, Exception):
            raise
        log_file = out.path / ERRORS_DIR / f"{job.name}.txt"
        write_bytes_atomic(log_file, traceback.format_exc().encode())
        first_line = (str(exc).strip().splitlines() or [""])[0]
        raise CurateError(f"{job.input}: {type(exc).__name__}: {first_line} (traceback: {log_file})") from exc
    return stats.to_dict()


def describe_shard(stats: dict[str, Any]) -> str:
    """Progress note for one finished shard."""
    return f"{stats['docs_in']:,} -> {stats['docs_out']:,} docs, {stats['seconds']:.1f} s"


def map_stage_params(
    stage: MapStage,
    inputs: list[str],
    keep_rejected: bool = False,
    only_sources: list[str] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The parameters a map stage records in ``_params.json`` (and checks on resume)."""
    return {
        "_stage": stage.name,
        "inputs": [str(i) for i in inputs],
        "keep_rejected": keep_rejected,
        "only_sources": only_sources or None,
        **stage.params(),
        **(extra or {}),
    }


def run_map_stage(
    stage: MapStage,
    inputs: list[str],
    out: str | os.PathLike,
    *,
    executor: Executor | None = None,
    overwrite: bool = False,
    keep_rejected: bool = False,
    extra_params: dict[str, Any] | None = None,
    finish: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    only_sources: list[str] | None = None,
    per_shard: Callable[[int, Path], MapStage] | None = None,
    started: float | None = None,
) -> dict[str, Any]:
    """Run ``stage`` over every shard of ``inputs`` into ``out``; resume what exists.

    Returns the ``_SUCCESS`` record; ``finish(merged)`` may return stage-wide entries for it.
    ``only_sources`` (globs) limits the stage to matching sources; other rows pass through.
    ``per_shard(index, path)`` gives a shard its own stage object (for global stages whose
    last phase applies per-shard decisions); ``stage`` then only names the stage and its
    parameters. ``started`` (a ``time.monotonic()``) dates the stage's wall time from earlier phases.
    """
    files = resolve_inputs(inputs)
    params = map_stage_params(stage, inputs, keep_rejected, only_sources, extra_params)
    od = OutputDir(out, stage.name, params, overwrite)
    if started is not None:
        od.started = started
    od.prepare()
    names = [shard_name(i) for i in range(len(files))]
    pending = [
        _MapJob(per_shard(i, f) if per_shard else stage, f, od.path, n, keep_rejected, stage.name, od.params, only_sources or None)
        for i, (f, n) in enumerate(zip(files, names))
        if not od.is_done(n)
    ]
    if not pending and od.complete:
        record = read_success(od.path)
        log.info("%s: %s is complete; nothing to do (use --overwrite to redo)", stage.name, od.path)
        return record
    od.invalidate()
    if len(pending) < len(files):
        log.info("%s: resuming, %d of %d shard(s) already done", stage.name, len(files) - len(pending), len(files))
    executor = executor or LocalExecutor()
    executor.map(_map_shard, pending, labels=[j.name for j in pending], desc=stage.name, describe=describe_shard)
    return od.finish(names, finish)


def save_npy_atomic(path: Path, array: Any) -> None:
    """``numpy.save`` through a temporary file and a rename (loadable with ``mmap_mode``)."""
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_path(path)
    try:
        with open(tmp, "wb") as fh:
            np.save(fh, array)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise CurateError(f"cannot write {path}: {exc.strerror or exc}") from exc


def write_table_atomic(path: Path, table: pa.Table, compression: str = "zstd") -> None:
    """One whole table as a Parquet file, atomically (``compression="none"`` for random hashes)."""
    w = ShardWriter(path, table.schema, compression)
    w.write(table)
    w.close()


# --------------------------------------------------------------------------- streamed sources


def _rows_table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)


def write_stream(
    records: Iterable[Any],
    out: str | os.PathLike,
    *,
    stage: str,
    params: dict[str, Any],
    shard_docs: int,
    counters: dict[str, int] | None = None,
    keep_rejected: bool = False,
    overwrite: bool = False,
    schema: pa.Schema | None = None,
    desc: str | None = None,
) -> dict[str, Any]:
    """Cut a deterministic stream of records (``.doc`` and ``.reason``) into shards.

    Shard ``k`` holds records ``k*shard_docs`` to ``(k+1)*shard_docs - 1`` of the stream
    (kept ones in ``part-k``, rejected ones in ``_rejected/part-k``). On a re-run the stream is read
    again but shards that exist are not rewritten. ``counters`` is a live mapping the
    stream updates; each shard records what changed while it filled.
    """
    from tqdm import tqdm

    from curate.executor import show_progress_bar
    from curate.schema import BASE_SCHEMA

    if shard_docs < 1:
        raise CurateError(f"--shard-docs must be at least 1, got {shard_docs}")
    schema = schema or BASE_SCHEMA
    od = OutputDir(out, stage, {"_stage": stage, "keep_rejected": keep_rejected, **params}, overwrite)
    od.prepare()
    od.invalidate()
    counters = counters if counters is not None else {}
    names: list[str] = []
    kept: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    last_counters: dict[str, int] = {}
    t0 = time.perf_counter()
    bar = tqdm(desc=desc or stage, unit=" docs", dynamic_ncols=True) if show_progress_bar() else None

    def flush() -> None:
        nonlocal kept, rejected, last_counters, t0
        name = shard_name(len(names))
        names.append(name)
        now = dict(counters)
        delta = {k: v - last_counters.get(k, 0) for k, v in now.items() if v != last_counters.get(k, 0)}
        last_counters = now
        if not od.is_done(name):
            stats = ShardStats(shard=name)
            kt = _rows_table(kept, schema)
            rt = _rows_table(rejected, rejected_schema(schema))
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
                log.info("%s: %s written: %d docs (%d rejected)", stage, name, len(kept), len(rejected))
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
    return od.finish(names)


# --------------------------------------------------------------------------- file stages: one input file -> one shard


@dataclass
class FileBatch:
    """What a file reader yields: kept and rejected documents, counters, and the input they came from.

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
class _FileJob:
    reader: Any  # picklable callable: reader(path) -> Iterator[FileBatch]
    input: Path
    out: Path
    name: str
    keep_rejected: bool
    stage_name: str
    params: dict[str, Any]
    schema: pa.Schema


def _file_shard(job: _FileJob) -> dict[str, Any]:
    """Read one input file into one shard (in a worker process); same file order as ``_map_shard``."""
    out = OutputDir(job.out, job.stage_name, job.params)
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
        if isinstance(exc, CurateError) or not isinstance(exc, Exception):
            raise
        log_file = out.path / ERRORS_DIR / f"{job.name}.txt"
        write_bytes_atomic(log_file, traceback.format_exc().encode())
        first_line = (str(exc).strip().splitlines() or [""])[0]
        raise CurateError(f"{job.input}: {type(exc).__name__}: {first_line} (traceback: {log_file})") from exc
    return stats.to_dict()


def run_file_stage(
    reader: Callable[[Path], Iterable[FileBatch]],
    files: list[Path],
    out: str | os.PathLike,
    *,
    stage_name: str,
    params: dict[str, Any],
    schema: pa.Schema,
    executor: Executor | None = None,
    overwrite: bool = False,
    keep_rejected: bool = False,
    finish: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Run ``reader`` over input files that are not Parquet (WARC, ...): file ``k`` -> ``part-k``.

    The output directory behaves like a map stage's (params, resume, stats, ``_SUCCESS``);
    ``reader`` must be picklable and yield :class:`FileBatch` objects with ``schema``'s columns.
    """
    od = OutputDir(out, stage_name, {"_stage": stage_name, "keep_rejected": keep_rejected, **params}, overwrite)
    od.prepare()
    names = [shard_name(i) for i in range(len(files))]
    pending = [
        _FileJob(reader, f, od.path, n, keep_rejected, stage_name, od.params, schema) for f, n in zip(files, names) if not od.is_done(n)
    ]
    if not pending and od.complete:
        log.info("%s: %s is complete; nothing to do (use --overwrite to redo)", stage_name, od.path)
        return read_success(od.path)
    od.invalidate()
    if len(pending) < len(files):
        log.info("%s: resuming, %d of %d shard(s) already done", stage_name, len(files) - len(pending), len(files))
    executor = executor or LocalExecutor()
    executor.map(_file_shard, pending, labels=[f"{j.name} ({j.input.name})" for j in pending], desc=stage_name, describe=describe_shard)
    return od.finish(names, finish)
