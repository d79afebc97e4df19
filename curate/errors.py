"""Error types a user sees as one line on stderr (never a traceback)."""


class CurateError(Exception):
    """A user-facing error: bad input, a wrong path, a bad option. One line, non-zero exit."""


class ParamError(CurateError):
    """An option value that makes no sense (a usage error: exit 2, naming the option)."""

    def __init__(self, option: str, message: str) -> None:
        self.option = option
        super().__init__(f"{option}: {message}")


class ShardError(CurateError):
    """One or more shards of a stage failed; the finished shards stay on disk."""

    def __init__(self, stage: str, failures: list[tuple[str, str]], total: int, transient: bool = False) -> None:
        self.failures = failures
        self.transient = transient
        advice = "re-run to complete the rest" if transient else "fix the cause, then re-run to complete the rest"
        super().__init__(f"{stage}: {len(failures)} of {total} shard(s) failed (named above); finished shards are kept: {advice}")


class StageFailed(CurateError):
    """A stage ran but its records failed (it kept nothing because of errors): no ``_SUCCESS`` is written."""


class OutputError(CurateError):
    """Writing a stage's output failed (disk full, no permission, read-only file system).

    Every other shard would fail the same way, so the stage stops at the first one; the
    files already under their final names are complete, the one being written is removed.
    """


def output_error(path: object, exc: BaseException) -> OutputError:
    """``cannot write PATH: No space left on device``: one line from an OSError, without its noise."""
    import os

    errno = getattr(exc, "errno", None)
    why = os.strerror(errno) if isinstance(errno, int) and errno > 0 else (getattr(exc, "strerror", None) or str(exc) or type(exc).__name__)
    return OutputError(f"cannot write {path}: {why}")
