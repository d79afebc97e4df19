"""Where a stage writes: output targets, and the one way a shard is committed.

A target is what the runtime needs of an output to resume, report, restart or refuse it:
its parameters file (written first), its completion record (written last), the files that
hold its data (their names and sizes make its fingerprint), and what ``clear`` may delete
(only what curate wrote). :class:`Target` implements all of that from three paths and a
list of data files; a kind of output says only where those are:

- :class:`OutputDir`, a dataset directory (``_params.json``, shards, ``_SUCCESS``);
- a tokenized prefix (``PREFIX.bin/.idx``, ``PREFIX.stats.json``; ``stages/tokenize.py``);
- one snapshot of a download directory (``stages/download_cc.py``).

A shard of a dataset directory is written through :meth:`OutputDir.shard` only: rejected
documents, then the shard's stats, then the kept documents, each file atomic; the kept file
is last, so a shard whose kept file exists is complete, and a failure removes what the
shard had started. This module imports neither the runtime, the executor nor any stage.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa

from curate.errors import CurateError, OutputError
from curate.formats import DEFAULT as DEFAULT_FORMAT
from curate.formats import ShardFormat, get_format
from curate.formats.parquet import ParquetWriter
from curate.schema import rejected_schema
from curate.stats import ShardStats, merge_stats
from curate.storage import AnyPath, RemotePath, as_path, read_texts, rmtree, write_json_atomic

SUCCESS = "_SUCCESS"
PARAMS = "_params.json"
STATS_DIR = "_stats"
REJECTED_DIR = "_rejected"
ERRORS_DIR = "_errors"
WORK_DIR = "_work"

#: Files whose names and sizes make an output's fingerprint (data, not logs or timings).
_DATA_SUFFIXES = (".parquet", ".bin", ".idx", ".txt", ".gz", ".npy")
_NOT_DATA_DIRS = {STATS_DIR, ERRORS_DIR, WORK_DIR, "_download"}


def shard_name(index: int) -> str:
    """The file stem of shard ``index``: ``part-00000``."""
    return f"part-{index:05d}"


def read_json(path: AnyPath) -> dict[str, Any] | None:
    """A JSON object from a file, or None when it is missing or unreadable."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


class Target:
    """An output as the runtime sees it: parameters (first), a completion record (last), data files, ownership.

    Subclasses set ``path``, ``params_file`` and ``record_file`` and say which files hold the
    data (:meth:`data_files`); the rest has one implementation here. ``runtime.run_stage``
    reads the parameters an earlier run recorded to decide between resuming, reporting a
    finished output, starting again and refusing; ``clear`` deletes only what curate wrote.
    """

    path: AnyPath
    params_file: AnyPath
    record_file: AnyPath

    def locations(self) -> list[AnyPath]:
        """The paths that must not overlap the inputs."""
        return [self.path]

    def data_files(self) -> list[tuple[str, AnyPath]]:
        """``(name, path)`` of every file that may hold this output's data (existing or not)."""
        return []

    def exists(self) -> bool:
        return self.params_file.exists() or self.record_file.exists() or any(p.exists() for _, p in self.data_files())

    def owned(self) -> bool:
        """Whether what exists was written by curate (its parameters or record file is there)."""
        return self.params_file.exists() or self.record_file.exists()

    def read_params(self) -> dict[str, Any] | None:
        return read_json(self.params_file)

    def write_params(self, params: dict[str, Any]) -> None:
        write_json_atomic(self.params_file, params)

    def read_record(self) -> dict[str, Any] | None:
        """The completion record, or None while the output is unfinished."""
        return read_json(self.record_file) if self.record_file.exists() else None

    def write_record(self, record: dict[str, Any]) -> None:
        write_json_atomic(self.record_file, record)

    def invalidate(self) -> None:
        """Remove the completion record before more work is done."""
        self.record_file.unlink(missing_ok=True)

    def create(self) -> None:
        try:
            self.params_file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot create {self.params_file.parent}: {exc.strerror or exc}") from exc

    def clear(self) -> None:
        """Delete what an earlier run wrote (never anything else)."""
        for _, p in self.data_files():
            p.unlink(missing_ok=True)
        self.record_file.unlink(missing_ok=True)
        self.params_file.unlink(missing_ok=True)

    def touch(self) -> None:
        """Mark a finished output as current (for make) without changing it."""
        if isinstance(self.record_file, Path):
            try:
                os.utime(self.record_file)
            except OSError:
                pass

    def outputs(self) -> list[list[Any]]:
        """``[name, size]`` of the files holding the output's data, for its fingerprint."""
        return [[name, p.stat().st_size] for name, p in self.data_files() if p.exists()]


def _data_files(root: AnyPath) -> list[list[Any]]:
    out: list[list[Any]] = []
    if isinstance(root, Path):
        for dirpath, dirnames, filenames in os.walk(root):
            rel_dir = os.path.relpath(dirpath, root)
            if rel_dir == ".":
                dirnames[:] = [d for d in dirnames if d not in _NOT_DATA_DIRS]
            for fn in filenames:
                if fn.endswith(_DATA_SUFFIXES) and not fn.startswith("."):
                    p = Path(dirpath) / fn
                    out.append([os.path.normpath(os.path.join(rel_dir, fn)), p.stat().st_size])
    else:
        try:
            found = root.fs.find(root.path, detail=True)
        except FileNotFoundError:
            found = {}
        for name, info in found.items():
            rel = name[len(root.path) :].lstrip("/")
            if rel.split("/", 1)[0] in _NOT_DATA_DIRS or not rel.endswith(_DATA_SUFFIXES) or rel.rsplit("/", 1)[-1].startswith("."):
                continue
            out.append([rel, int(info.get("size") or 0)])
    return sorted(out)


class OutputDir(Target):
    """A stage's output directory: ``_params.json`` (first), shards and their stats, ``_SUCCESS`` (last).

    ``fmt`` is the format of the kept shards (``--format``); rejected shards are Parquet whatever it is.
    """

    def __init__(self, path: str | os.PathLike | RemotePath, fmt: str | None = None) -> None:
        self.path = as_path(path)
        self.params_file = self.path / PARAMS
        self.record_file = self.path / SUCCESS
        self.format: ShardFormat = get_format(fmt or DEFAULT_FORMAT)

    # -- paths
    def shard_path(self, name: str) -> AnyPath:
        return self.path / f"{name}{self.format.suffix}"

    def rejected_path(self, name: str) -> AnyPath:
        return self.path / REJECTED_DIR / f"{name}.parquet"

    def stats_path(self, name: str) -> AnyPath:
        return self.path / STATS_DIR / f"{name}.json"

    @property
    def work(self) -> AnyPath:
        return self.path / WORK_DIR

    def is_done(self, name: str) -> bool:
        return self.shard_path(name).exists()

    def done(self, names: list[str]) -> set[str]:
        """Which of ``names`` are finished shards (one listing on an object store, not a request per shard)."""
        if isinstance(self.path, Path):
            return {n for n in names if self.is_done(n)}
        suffix = self.format.suffix
        have = {p.name for p in self.path.glob(f"part-*{suffix}")} if self.path.exists() else set()
        return {n for n in names if f"{n}{suffix}" in have}

    # -- Target
    def exists(self) -> bool:
        p = self.path
        if p.exists() and not p.is_dir():
            raise CurateError(f"{p}: exists and is not a directory")
        return p.exists() and any(True for _ in p.iterdir())

    def owned(self) -> bool:
        return self.params_file.exists()

    def create(self) -> None:
        p = self.path
        try:
            p.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot create {p}: {exc.strerror or exc}") from exc
        if isinstance(p, Path):  # an object store has no temporary files (uploads complete or never appear)
            for stale in list(p.rglob(".*.tmp.*")):  # left by a killed run, phase files under _work/ included
                stale.unlink(missing_ok=True)

    def clear(self) -> None:
        rmtree(self.path)

    def outputs(self) -> list[list[Any]]:
        return _data_files(self.path)

    # -- shards
    @contextmanager
    def shard(self, name: str, schema: pa.Schema | None = None, keep_rejected: bool = False,
              inputs: list[str] | None = None, started: float | None = None) -> Iterator[ShardCommit]:  # fmt: skip
        """Write shard ``name``: yields a :class:`ShardCommit`; committed in order on success, removed on failure.

        ``started`` (``time.perf_counter()``) is when the shard's work began, for its ``seconds``.
        """
        commit = ShardCommit(self, name, schema, keep_rejected, inputs or [], started)
        try:
            yield commit
            commit.commit()
        except BaseException:
            commit.abort()
            raise

    def write_shard_stats(self, stats: ShardStats) -> None:
        write_json_atomic(self.stats_path(stats.shard), stats.to_dict())

    def merged_stats(self, names: list[str]) -> dict[str, Any]:
        """The merged stats of the shards ``names`` (every one must have its stats file)."""
        shard_stats = []
        if isinstance(self.path, Path):
            for name in names:
                f = self.stats_path(name)
                if not f.exists():
                    raise CurateError(f"{self.path}: shard {name} has no stats; re-run the stage")
                shard_stats.append(json.loads(f.read_text()))
        else:
            try:
                shard_stats = [json.loads(t) for t in read_texts([self.stats_path(n) for n in names])]
            except FileNotFoundError as exc:
                raise CurateError(f"{self.path}: shard {as_path(str(exc)).stem} has no stats; re-run the stage") from exc
        return merge_stats(shard_stats)


class ShardCommit:
    """One shard being written: kept and rejected documents, counters; see :meth:`OutputDir.shard`.

    ``keep(table)`` and ``reject(table)`` write and count; ``stats`` is the shard's
    :class:`ShardStats` (a reader that counts its input itself adds to it). The rejected
    file is written only with ``keep_rejected``, but rejected documents are always counted.
    """

    def __init__(self, out: OutputDir, name: str, schema: pa.Schema | None, keep_rejected: bool, inputs: list[str],
                 started: float | None = None) -> None:  # fmt: skip
        self.out = out
        self.name = name
        self.stats = ShardStats(shard=name, inputs=inputs)
        self.kept = out.format.writer(out.shard_path(name), schema)
        self.rejected = (
            ParquetWriter(out.rejected_path(name), rejected_schema(schema) if schema is not None else None) if keep_rejected else None
        )
        self._t0 = started if started is not None else time.perf_counter()

    def keep(self, table: pa.Table) -> None:
        self.stats.add_out(table)
        self.kept.write(table)

    def reject(self, table: pa.Table | None) -> None:
        if table is None or not table.num_rows:
            return
        self.stats.add_rejected(table)
        if self.rejected is not None:
            self.rejected.write(table)

    def count(self, counters: dict[str, Any]) -> None:
        self.stats.count(counters)

    def commit(self) -> None:
        """Rejected documents, then stats, then the kept documents (last: its existence marks the shard complete)."""
        if self.rejected is not None:
            if self.rejected.schema is None:
                self.rejected.schema = rejected_schema(self.kept.schema) if self.kept.schema is not None else None
            self.rejected.close()
        self.stats.seconds = time.perf_counter() - self._t0
        self.out.write_shard_stats(self.stats)
        self.kept.close()

    def abort(self) -> None:
        self.kept.abort()
        if self.rejected is not None:
            self.rejected.abort()
