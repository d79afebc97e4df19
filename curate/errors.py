"""Error types a user sees as one line on stderr (never a traceback)."""


class CurateError(Exception):
    """A user-facing error: bad input, a wrong path, a bad option. One line, non-zero exit."""


class ShardError(CurateError):
    """One or more shards of a stage failed; the finished shards stay on disk."""

    def __init__(self, stage: str, failures: list[tuple[str, str]], total: int) -> None:
        self.failures = failures
        first = "; ".join(f"{name}: {msg}" for name, msg in failures[:3])
        more = f" (and {len(failures) - 3} more)" if len(failures) > 3 else ""
        super().__init__(
            f"{stage}: {len(failures)} of {total} shard(s) failed: {first}{more}; finished shards are kept, re-run to complete the rest"
        )
