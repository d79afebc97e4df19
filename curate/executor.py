"""Run a function over many shards: local worker processes now, Ray as a second backend.

An executor only knows about *items* (one per shard) and a picklable function; it runs
them, shows progress, and collects failures. What a shard is lives in ``dataset.py``.
A failing item never stops the others: every finished shard stays on disk and the
executor raises :class:`~curate.errors.ShardError` naming the failed ones at the end.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from tqdm import tqdm

from curate.errors import CurateError, ShardError

log = logging.getLogger("curate")


def init_worker_logging(level: int) -> None:
    """Give a worker process the CLI's log format and level (``curate: ...`` on stderr)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("curate: %(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(level)
    log.propagate = False


def default_workers() -> int:
    """All cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def show_progress_bar() -> bool:
    """A tqdm bar on a terminal; plain log lines otherwise (``CURATE_PROGRESS=bar|log`` forces)."""
    forced = os.environ.get("CURATE_PROGRESS", "").lower()
    if forced in ("bar", "log"):
        return forced == "bar"
    return sys.stderr.isatty()


class Progress:
    """Progress over shards: a tqdm bar on a terminal, one log line per shard otherwise."""

    def __init__(self, total: int, desc: str, unit: str = "shard") -> None:
        self.total, self.desc, self.unit, self.done = total, desc, unit, 0
        self.start = time.monotonic()
        self.bar = tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True) if show_progress_bar() else None

    def update(self, label: str, note: str = "", failed: bool = False) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)
            if note:
                self.bar.set_postfix_str(note, refresh=False)
        else:
            state = "FAILED" if failed else "done"
            log.info("%s [%d/%d] %s %s%s", self.desc, self.done, self.total, label, state, f": {note}" if note else "")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class Executor(ABC):
    """Runs ``fn(item)`` for every item; backends differ only in :meth:`_run`."""

    name = "abstract"

    @abstractmethod
    def _run(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[tuple[int, bool, Any]]:
        """Yield ``(index, ok, result_or_error_message)`` as items finish, in any order."""

    def map(
        self,
        fn: Callable[[Any], Any],
        items: Sequence[Any],
        *,
        labels: Sequence[str],
        desc: str,
        describe: Callable[[Any], str] | None = None,
        unit: str = "shard",
    ) -> list[Any]:
        """Run ``fn`` over ``items``; return results in item order or raise ShardError."""
        results: list[Any] = [None] * len(items)
        failures: list[tuple[str, str]] = []
        progress = Progress(len(items), desc, unit)
        try:
            for i, ok, value in self._run(fn, items):
                if ok:
                    results[i] = value
                    progress.update(labels[i], describe(value) if describe else "")
                else:
                    failures.append((labels[i], value))
                    progress.update(labels[i], value, failed=True)
                    log.error("%s: %s failed: %s", desc, labels[i], value)
        finally:
            progress.close()
        if failures:
            failures.sort()
            raise ShardError(desc, failures, len(items))
        return results


def _error_message(exc: BaseException) -> str:
    if isinstance(exc, CurateError):
        return str(exc)
    if isinstance(exc, BrokenProcessPool):
        return "a worker process died (killed, or out of memory)"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


class LocalExecutor(Executor):
    """N worker processes on this machine (``spawn``: safe beside Arrow's threads).

    With one worker, or one item, the work runs in this process: no start-up cost.
    """

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or default_workers()
        if self.workers < 1:
            raise CurateError(f"--workers must be at least 1, got {self.workers}")
        self._pool: ProcessPoolExecutor | None = None

    def _get_pool(self) -> ProcessPoolExecutor:
        """One pool for all of a stage's phases: workers start (and import) once."""
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=mp.get_context("spawn"),
                initializer=init_worker_logging,
                initargs=(log.getEffectiveLevel(),),
            )
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __del__(self) -> None:  # pragma: no cover - interpreter shutdown order varies
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    def _run(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[tuple[int, bool, Any]]:
        if self.workers == 1 or len(items) <= 1:
            for i, item in enumerate(items):
                try:
                    value = fn(item)
                except Exception as exc:  # one shard's failure must not stop the others
                    yield i, False, _error_message(exc)
                else:
                    yield i, True, value
            return
        pool = self._get_pool()
        futures: dict[Future, int] = {}
        try:
            for i, item in enumerate(items):
                futures[pool.submit(fn, item)] = i
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in sorted(done, key=futures.__getitem__):
                    exc = fut.exception()
                    if exc is None:
                        yield futures[fut], True, fut.result()
                    else:
                        if isinstance(exc, BrokenProcessPool):
                            self._pool = None  # a dead worker breaks the pool: start a new one next time
                        yield futures[fut], False, _error_message(exc)
        except BaseException:
            for fut in futures:
                fut.cancel()
            self.close()
            raise


def make_executor(name: str = "local", workers: int | None = None, **options: Any) -> Executor:
    """The executor called ``name`` (``local``; ``ray`` arrives with the Ray backend)."""
    if name == "local":
        return LocalExecutor(workers)
    raise CurateError(f"unknown executor {name!r}; choose one of: local")
