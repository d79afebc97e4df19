"""Bounded partitions: the shuffle every global stage is built from, and the memory budget it is planned with.

A global stage (dedup, decontam, quality buckets) is a sequence of phases; each phase is a
set of tasks, and no task holds more than its partition. Between two phases rows move by a
*shuffle*: every producer task writes its rows grouped into the consumer partitions, and
consumer task ``p`` reads partition ``p`` of every producer's file. Nothing is ever gathered
in one process, and the plan (how many partitions) follows from :func:`plan_partitions` and
the rows the previous phase counted. Two layouts: :func:`write_partitioned` (any Arrow
columns, strings included: an IPC stream of one record batch per partition, with sidecars
of row counts and byte offsets, so a consumer reads only its own message) and, for
fixed-width columns, ``dedup.components.write_buckets`` (one ``.npy`` per column).

Files are written under a temporary name and renamed (or uploaded whole), the offsets
sidecar last, so a producer file whose offsets exist is complete: a killed phase reruns only
its missing producers. Locally a consumer memory-maps the files (the OS pages in only its
partition); on an object store it reads its byte range.

``--task-memory`` (:func:`parse_size`) is the data a task may hold, on top of the
interpreter and libraries; each phase divides its rows by what one row costs in memory
(its bytes times the temporaries of sorting and joining it) to choose its partition count.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from curate.errors import CurateError, output_error
from curate.storage import AnyPath, RemotePath, as_path, np_load, np_rows, save_npy_atomic, tmp_path, unlink_quietly, write_json_atomic

_COUNTS_KEY = b"curate.partition_rows"
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?\s*$", re.I)
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


# --------------------------------------------------------------------------- the budget


def parse_size(value: str | int, what: str = "--task-memory") -> int:
    """``"512MB"``, ``"2GB"``, ``"300M"``, ``"1.5GiB"`` or a byte count -> bytes (binary units: 1 MB = 2^20 bytes)."""
    if isinstance(value, int):
        n = value
    else:
        m = _SIZE.match(str(value))
        if not m:
            raise CurateError(f"{what} {value!r}: not a size; write it like 300MB, 2GB or 1.5GB")
        n = int(float(m.group(1)) * _UNITS[(m.group(2) or "").upper()[:1]])
    if n < 16 << 20:
        raise CurateError(f"{what} {value!r}: at least 16MB (a task needs room for one batch of rows)")
    return n


def format_size(n: int) -> str:
    """Bytes as a ``--task-memory`` value a user can type (``512MB``, ``1.5GB``)."""
    if n >= 1 << 30:
        return f"{n / (1 << 30):.3g}GB"
    return f"{max(1, round(n / (1 << 20)))}MB"


def default_task_memory(workers: int) -> int:
    """A sensible share of the machine: half its memory split among the workers, between 256MB and 4GB."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 8 << 30
    share = total // 2 // max(1, workers)
    return int(min(4 << 30, max(256 << 20, share)))


def min_partitions() -> int:
    """``CURATE_MIN_PARTITIONS`` (default 1): plan at least this many partitions per phase, so that the partitioned
    paths run on small inputs too (the crash tests kill phases of several tasks); the output does not change."""
    raw = os.environ.get("CURATE_MIN_PARTITIONS", "").strip()
    try:
        return max(1, int(raw)) if raw else 1
    except ValueError:
        raise CurateError(f"CURATE_MIN_PARTITIONS={raw!r}: not a whole number") from None


def plan_partitions(rows: int, bytes_per_row: float, budget: int, *, minimum: int = 1, power_of_two: bool = False) -> int:
    """How many partitions ``rows`` need so that one holds at most ``budget`` bytes at ``bytes_per_row``.

    ``bytes_per_row`` counts a row with the temporaries its phase makes (a sort doubles or
    triples it). Half the budget is planned for, so that a partition a little larger than
    the average (hash partitions vary by a few standard deviations) still fits.
    """
    need = int(np.ceil(max(0, rows) * bytes_per_row / max(1, budget // 2)))
    n = max(minimum, need, min_partitions())
    if power_of_two:
        n = 1 << (n - 1).bit_length()
    return n


def check_fits(rows: int, bytes_per_row: float, budget: int, what: str) -> None:
    """A one-line error when one indivisible item (``what``) needs more than the budget, naming what to raise it to."""
    need = int(rows * bytes_per_row)
    if need > budget:
        raise CurateError(f"{what}: {rows:,} rows need ~{format_size(need)}, more than --task-memory {format_size(budget)}; "
                          f"raise --task-memory to at least {format_size(int(need * 1.25))}")  # fmt: skip


# --------------------------------------------------------------------------- partition keys


def mix64(x: np.ndarray, seed: int = 0) -> np.ndarray:
    """splitmix64 of each value (uint64): a fast, well-spread hash for choosing partitions."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + np.uint64((0x9E3779B97F4A7C15 * (seed + 1)) & 0xFFFFFFFFFFFFFFFF)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def hash_partition(keys: np.ndarray, parts: int, seed: int = 0) -> np.ndarray:
    """Partition of each key (int64 or uint64) among ``parts``, by a hash: balanced whatever the keys' order."""
    if parts == 1:
        return np.zeros(len(keys), np.int64)
    return (mix64(keys.view(np.uint64) if keys.dtype == np.int64 else keys, seed) % np.uint64(parts)).astype(np.int64)


def range_partition(values: np.ndarray, parts: int) -> np.ndarray:
    """Partition of each uint64 by its top bits (``parts`` a power of two): values in partition p are below those in p + 1."""
    if parts == 1:
        return np.zeros(len(values), np.int64)
    shift = 64 - (parts.bit_length() - 1)
    return (values.astype(np.uint64) >> np.uint64(shift)).astype(np.int64)


# --------------------------------------------------------------------------- fixed-width columns: one .npy per column


def write_buckets(path: AnyPath, columns: dict[str, np.ndarray], part: np.ndarray, parts: int) -> np.ndarray:
    """Fixed-width columns grouped by ``part`` into ``PATH.<column>.npy`` files plus ``PATH.off.npy`` (partition starts).

    The offsets file is written last: when it exists the others are whole. Rows keep their
    order within a partition. Reading one partition maps the files and slices them.
    """
    order = np.argsort(part, kind="stable") if len(part) else np.zeros(0, np.int64)
    counts = np.bincount(part, minlength=parts) if len(part) else np.zeros(parts, np.int64)
    off = np.zeros(parts + 1, np.int64)
    np.cumsum(counts, out=off[1:])
    base = str(path)
    for name, col in columns.items():
        save_npy_atomic(_as(base, f".{name}.npy"), col[order])
    save_npy_atomic(_as(base, ".off.npy"), off)
    return counts


def _as(base: str, suffix: str) -> AnyPath:
    return as_path(base + suffix)


def bucket_done(path: AnyPath) -> bool:
    return _as(str(path), ".off.npy").exists()


def bucket_counts(path: AnyPath) -> np.ndarray:
    off = np.asarray(np_load(_as(str(path), ".off.npy")))
    return np.diff(off)


def read_buckets(paths: list[AnyPath], parts: list[int] | range, names: list[str]) -> dict[str, np.ndarray]:
    """Partitions ``parts`` of every file in ``paths``, as one array per column (path order, then partition order)."""
    out: dict[str, list[np.ndarray]] = {n: [] for n in names}
    for p in paths:
        off = np.asarray(np_load(_as(str(p), ".off.npy")))
        spans = [(int(off[q]), int(off[q + 1])) for q in parts]
        spans = [(a, b) for a, b in spans if b > a]
        for n in names:
            col = _as(str(p), f".{n}.npy")
            out[n].extend(np_rows(col, a, b) for a, b in spans)
    return {n: (np.concatenate(v) if v else np.zeros(0, np.int64)) for n, v in out.items()}


# --------------------------------------------------------------------------- writing and reading

# A producer's file is an Arrow IPC *stream* (the schema, then one record batch message per
# partition) with two sidecars written after it: ``.rows.npy`` (rows per partition) and, last,
# ``.off.npy`` (each message's byte offset, and the end). A consumer reads the schema and its
# own message at its offset: nothing else of the file, and no footer that grows with the
# number of partitions.


def _side(path: AnyPath, what: str) -> AnyPath:
    return as_path(f"{path}.{what}.npy")


def write_partitioned(path: AnyPath, table: pa.Table, part: np.ndarray, parts: int, compression: str | None = None) -> np.ndarray:
    """Write ``table``'s rows grouped by ``part`` (0 <= part < parts), one record batch per partition; returns the counts.

    Rows keep their order within a partition (a stable sort), so the file's bytes depend only
    on the rows and the partition of each. The ``.off.npy`` sidecar is written last: when it
    exists, the file is whole.
    """
    from curate.storage import save_npy_atomic

    path = as_path(path)
    if len(part) != table.num_rows:
        raise ValueError("one partition per row")
    counts = np.bincount(part, minlength=parts).astype(np.int64) if len(part) else np.zeros(parts, np.int64)
    if len(counts) > parts:
        raise ValueError(f"a partition number is >= {parts}")
    if len(part):
        order = np.argsort(part, kind="stable")
        if not np.array_equal(order, np.arange(len(order))):
            table = table.take(pa.array(order))
    table = table.replace_schema_metadata(None)
    schema = table.schema
    options = pa.ipc.IpcWriteOptions(compression=compression) if compression else None
    starts = np.concatenate([[0], np.cumsum(counts)])
    offsets = np.zeros(parts + 1, np.int64)

    def write(sink: Any) -> None:
        with pa.ipc.new_stream(sink, schema, options=options) as w:
            w.write_batch(_batch(table.slice(0, 0), schema))  # the schema goes out with a first, empty batch
            for p in range(parts):
                offsets[p] = sink.tell()
                w.write_batch(_batch(table.slice(int(starts[p]), int(counts[p])), schema))
            offsets[parts] = sink.tell()

    if isinstance(path, RemotePath):
        buf = pa.BufferOutputStream()
        write(buf)
        path.write_bytes(buf.getvalue().to_pybytes())
    else:
        tmp = tmp_path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with pa.OSFile(str(tmp), "wb") as sink:
                write(sink)
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            unlink_quietly(tmp)
            raise output_error(path, exc) from exc
    save_npy_atomic(_side(path, "rows"), counts)
    save_npy_atomic(_side(path, "off"), offsets)  # last: marks the file complete
    return counts


def _batch(t: pa.Table, schema: pa.Schema) -> pa.RecordBatch:
    if t.num_rows == 0:
        return pa.RecordBatch.from_pylist([], schema=schema)
    return t.combine_chunks().to_batches()[0]


def partitioned_done(path: AnyPath) -> bool:
    """Whether a producer's file is complete (its offsets sidecar exists)."""
    return _side(as_path(path), "off").exists()


def partition_counts(path: AnyPath) -> np.ndarray:
    """The row count of every partition in one producer's file (from its sidecar: the file is not read)."""
    from curate.storage import np_load

    return np.asarray(np_load(_side(as_path(path), "rows")), np.int64)


def _read_at(path: AnyPath, start: int, stop: int, schema_end: int | None) -> tuple[pa.Schema, pa.RecordBatch]:
    path = as_path(path)
    try:
        if isinstance(path, Path):
            buf = pa.memory_map(str(path), "r")
            schema = pa.ipc.read_schema(buf)
            buf.seek(start)
            msg = pa.ipc.read_message(pa.py_buffer(buf.read(stop - start)))
        else:
            with path.open("rb") as fh:
                schema = pa.ipc.read_schema(pa.py_buffer(fh.read(schema_end or 1 << 16)))
                fh.seek(start)
                msg = pa.ipc.read_message(pa.py_buffer(fh.read(stop - start)))
        return schema, pa.ipc.read_record_batch(msg, schema)
    except (OSError, pa.ArrowException) as exc:
        raise CurateError(f"{path}: cannot read a work file ({exc}); delete OUT/_work and run the stage again") from exc


def _file_schema(path: AnyPath) -> pa.Schema:
    path = as_path(path)
    if isinstance(path, Path):
        return pa.ipc.read_schema(pa.memory_map(str(path), "r"))
    with path.open("rb") as fh:
        return pa.ipc.read_schema(pa.py_buffer(fh.read(1 << 16)))


def read_partition(paths: Sequence[AnyPath], part: int | Sequence[int], columns: list[str] | None = None,
                   schema: pa.Schema | None = None) -> pa.Table:  # fmt: skip
    """Partition ``part`` (or several) of every producer file in ``paths``, in path order, as one table."""
    from curate.storage import np_load

    parts = [part] if isinstance(part, int) else list(part)
    pieces: list[pa.RecordBatch] = []
    for p in paths:
        off = np_load(_side(as_path(p), "off"))
        rows = np_load(_side(as_path(p), "rows"))
        for q in parts:
            if int(rows[q]) == 0:
                continue
            file_schema, b = _read_at(p, int(off[q]), int(off[q + 1]), int(off[0]))
            schema = schema or file_schema
            pieces.append(b)
    if not pieces:
        if schema is None:
            if not paths:
                raise ValueError("read_partition of no files needs a schema")
            schema = _file_schema(paths[0])
        t = schema.empty_table()
    else:
        t = pa.Table.from_batches(pieces)
    return t.select(columns) if columns is not None else t


# --------------------------------------------------------------------------- the plan of a global stage


TASK_MEMORY_HELP = ("The data one task may hold (e.g. 300MB, 2GB), on top of the interpreter and libraries; each phase "
                    "chooses its partition counts from it. The output is the same for any value "
                    "[default: half the machine's memory over the workers, 256MB-4GB].")  # fmt: skip


def budget_of(task_memory: str | None, ctx: Any) -> int:
    """``--task-memory`` in bytes, or the default for this machine and worker count."""
    if task_memory:
        return parse_size(task_memory)
    workers = getattr(ctx.executor, "workers", None) or ctx.common.workers or os.cpu_count() or 1
    return default_task_memory(int(workers))


class Plan:
    """The partition counts of one run, kept in ``_work/plan.json``: a resumed run keeps them whatever its ``--task-memory``."""

    def __init__(self, work: AnyPath, budget: int) -> None:
        self.path = as_path(work) / "plan.json"
        try:
            self.data: dict[str, Any] = json.loads(self.path.read_text()) if self.path.exists() else {}
        except ValueError:
            self.data = {}
        if self.data.get("task_memory") and self.data["task_memory"] != budget:
            logging.getLogger("curate").info(
                "resuming with the plan of the run that started (--task-memory %s)", format_size(self.data["task_memory"])
            )
        self.data.setdefault("task_memory", budget)
        self.budget = int(self.data["task_memory"])

    def get(self, key: str, make: Callable[[], Any]) -> Any:
        """The planned value of ``key``, made (and saved) the first time."""
        if key not in self.data:
            self.data[key] = make()
            write_json_atomic(self.path, self.data)
        return self.data[key]


def group_parts(counts: np.ndarray, bytes_per_row: float, budget: int) -> list[list[int]]:
    """Consecutive partitions in groups whose rows fit half the budget (a partition too large stays alone)."""
    groups: list[list[int]] = []
    cap = max(1, budget // 2)
    most = max(1, -(-len(counts) // min_partitions()))  # CURATE_MIN_PARTITIONS: at least that many groups
    cur: list[int] = []
    size = 0.0
    for p, n in enumerate(counts.tolist()):
        cost = n * bytes_per_row
        if cur and (size + cost > cap or len(cur) >= most):
            groups.append(cur)
            cur, size = [], 0.0
        cur.append(p)
        size += cost
    if cur:
        groups.append(cur)
    return groups


def summed_counts(paths: list[AnyPath], parts: int) -> np.ndarray:
    """Rows per partition over every producer file (read one sidecar at a time)."""
    total = np.zeros(parts, np.int64)
    for p in paths:
        total += bucket_counts(p)
    return total
