"""Run a function over many shards: local worker processes now, Ray as a second backend.

An executor only knows about *items* (one per shard) and a picklable function; it runs
them, shows progress, and collects failures. What a shard is lives in ``dataset.py``.
A failing item never stops the others: every finished shard stays on disk and the
executor raises :class:`~curate.errors.ShardError` naming the failed ones at the end.
"""

from __future__ import annotations

import errno
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

from curate.errors import CurateError, OutputError, ShardError, output_error

log = logging.getLogger("curate")


def init_worker_logging(level: int) -> None:
    """Set up a worker process: the CLI's log format and level (``curate: ...`` on stderr), and no Ctrl-C.

    Ctrl-C reaches every process of the terminal's foreground group; the parent alone
    handles it (it stops the workers and prints one line), so workers ignore SIGINT.
    """
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
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
        elif not failed:  # a failure is logged once, by the executor
            log.info("%s [%d/%d] %s done%s", self.desc, self.done, self.total, label, f": {note}" if note else "")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class Executor(ABC):
    """Runs ``fn(item)`` for every item; backends differ only in :meth:`_run`."""

    name = "abstract"

    def share(self, value: Any) -> Any:
        """A handle to large read-only state for every task (``shared(handle)`` returns it).

        Local workers receive the value pickled with each item (put large arrays in a
        memory-mapped file instead); Ray puts it in the object store once.
        """
        return _LocalShared(value)

    def close(self) -> None:  # noqa: B027 - a no-op unless a backend holds workers
        """Release workers (the local pool; Ray stays up for the process)."""

    @abstractmethod
    def _run(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[tuple[int, bool, Any]]:
        """Yield ``(index, True, result)`` or ``(index, False, (message, transient))`` as items finish, in any order."""

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
        transient = False
        progress = Progress(len(items), desc, unit)
        try:
            for i, ok, value in self._run(fn, items):
                if ok:
                    results[i] = value
                    progress.update(labels[i], describe(value) if describe else "")
                else:
                    message, again = value
                    failures.append((labels[i], message))
                    transient = transient or again
                    progress.update(labels[i], failed=True)
                    log.error("%s: %s failed: %s", desc, labels[i], message)
        finally:
            progress.close()
        if failures:
            failures.sort()
            raise ShardError(desc, failures, len(items), transient=transient)
        return results


#: errno values that mean the output cannot be written at all: every other shard would fail alike.
_FATAL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}


def fatal_error(exc: BaseException) -> OutputError | None:
    """The error that must stop the whole stage (disk full, read-only output), or None for a shard's own failure."""
    if isinstance(exc, OutputError):
        return exc
    if isinstance(exc, OSError) and exc.errno in _FATAL_ERRNOS:
        return output_error(exc.filename or "the output", exc)
    return None


def _failure(exc: BaseException) -> tuple[str, bool]:
    """One line for a failed item, and whether trying again may succeed (a dead worker, an I/O error)."""
    if isinstance(exc, CurateError):
        return str(exc), bool(getattr(exc, "transient", False))
    if isinstance(exc, BrokenProcessPool):
        return "a worker process died (killed, or out of memory)", True
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": "), isinstance(exc, (OSError, MemoryError))


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

    def kill(self) -> None:
        """Stop the workers now (Ctrl-C): a shard being written is left as a temporary file, cleared by the next run."""
        pool, self._pool = self._pool, None
        if pool is not None:
            for proc in list(getattr(pool, "_processes", {}).values()):
                try:
                    proc.terminate()
                except Exception:  # noqa: BLE001 - best effort
                    pass
            pool.shutdown(wait=False, cancel_futures=True)

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
                except Exception as exc:  # one shard's failure must not stop the others (unless the output is unwritable)
                    fatal = fatal_error(exc)
                    if fatal is not None:
                        raise fatal from exc
                    yield i, False, _failure(exc)
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
                        fatal = fatal_error(exc)
                        if fatal is not None:
                            raise fatal  # cancels the pending shards below
                        if isinstance(exc, BrokenProcessPool):
                            self._pool = None  # a dead worker breaks the pool: start a new one next time
                        yield futures[fut], False, _failure(exc)
        except KeyboardInterrupt:
            self.kill()
            raise
        except BaseException:
            for fut in futures:
                fut.cancel()
            self.close()
            raise


def storage_env() -> dict[str, str]:
    """The driver's storage settings that Ray tasks get too: ``AWS_*`` and ``FSSPEC_*`` variables.

    So that an endpoint or credentials set where ``curate`` runs (``AWS_ENDPOINT_URL``,
    ``AWS_PROFILE``, ``FSSPEC_S3_...``) reach tasks on every node. Variables naming local files
    (``*_FILE``) are left out: those files need not exist on the other machines.
    """
    return {k: v for k, v in os.environ.items() if k.startswith(("AWS_", "FSSPEC_")) and not k.endswith("_FILE")}


class RayExecutor(Executor):
    """Shards as Ray tasks, on a local Ray instance or a cluster (``--ray-address``).

    A task that raises or whose worker dies is retried up to ``max_retries`` times by Ray;
    a task that still fails is reported like a failed local shard. ``workers`` caps the
    tasks in flight (default: as many as the cluster schedules). Outputs are written by the
    tasks themselves, so finished shards are skipped on a re-run as with the local executor.
    Tasks run with the driver's :func:`storage_env` (object-store endpoint and credentials).
    """

    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None, max_retries: int = 3) -> None:
        try:
            import ray
        except ImportError as exc:
            raise CurateError("--executor ray needs Ray: pip install 'curate[ray]'") from exc
        self.ray = ray
        self.workers = workers
        self.max_retries = max_retries
        if not ray.is_initialized():
            log.info("starting Ray%s", f" (address {address})" if address else " locally")
            try:
                if address in (None, "", "local"):
                    ray.init(include_dashboard=False, log_to_driver=True, configure_logging=False)
                else:
                    ray.init(address=address, log_to_driver=True, configure_logging=False)
            except Exception as exc:  # noqa: BLE001 - connection errors come in many types
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise CurateError(f"cannot start or reach Ray{f' at {address}' if address else ''}: {first}") from exc

    def share(self, value: Any) -> Any:
        """Put ``value`` in Ray's object store once; tasks get it back with :func:`shared`."""
        return _RayShared(self.ray.put(value))

    def _run(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[tuple[int, bool, Any]]:
        ray = self.ray
        options: dict[str, Any] = {"num_cpus": 1, "max_retries": self.max_retries, "retry_exceptions": True}
        env = storage_env()
        if env:
            options["runtime_env"] = {"env_vars": env}  # merged with the job's runtime_env
        remote = ray.remote(**options)(_ray_task)
        limit = self.workers or len(items)
        queue = list(enumerate(items))
        pending: dict[Any, int] = {}
        while queue or pending:
            while queue and len(pending) < limit:
                i, item = queue.pop(0)
                pending[remote.remote(fn, item)] = i
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                i = pending.pop(ref)
                try:
                    value = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:
                    cause = getattr(exc, "cause", None)
                    fatal = fatal_error(cause) if isinstance(cause, BaseException) else None
                    if fatal is not None:
                        for ref in pending:
                            ray.cancel(ref)
                        raise fatal from None
                    yield i, False, _failure(cause) if isinstance(cause, BaseException) else _failure(exc)
                except ray.exceptions.RayError as exc:
                    yield i, False, (f"Ray task failed after {self.max_retries} retries: {type(exc).__name__}", True)
                else:
                    ok, result = value
                    if ok:
                        yield i, True, result
                    elif result[0] == "fatal":
                        for ref in pending:
                            ray.cancel(ref)
                        raise OutputError(result[1])
                    else:
                        yield i, False, (result[1], False)


def _ray_task(fn: Callable[[Any], Any], item: Any) -> tuple[bool, Any]:
    """A Ray task: ``fn(item)``; a known input error comes back as a value (one line at the driver: no
    worker traceback in the log, no retry of what will fail again); anything else raises, and Ray retries it."""
    try:
        return True, fn(item)
    except CurateError as exc:
        if isinstance(exc, OutputError):
            return False, ("fatal", str(exc))
        if getattr(exc, "transient", False) or getattr(exc, "unexpected", False):
            raise  # may pass on another try (a flaky node, a bug that depends on the machine): Ray retries it
        return False, ("input", str(exc))


class _LocalShared:
    def __init__(self, value: Any) -> None:
        self.value = value

    def get(self) -> Any:
        return self.value


class _RayShared:
    def __init__(self, ref: Any) -> None:
        self.ref = ref

    def get(self) -> Any:
        import ray

        return ray.get(self.ref)


def shared(handle: Any) -> Any:
    """The value behind a handle from ``Executor.share`` (inside a task)."""
    return handle.get()


def make_executor(name: str = "local", workers: int | None = None, ray_address: str | None = None, **options: Any) -> Executor:
    """The executor called ``name``: ``local`` worker processes or ``ray`` tasks."""
    if name == "local":
        return LocalExecutor(workers)
    if name == "ray":
        return RayExecutor(workers, ray_address, **options)
    raise CurateError(f"unknown executor {name!r}; choose local or ray")
