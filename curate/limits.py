"""Limits on what untrusted input may cost: decompressed sizes, one line, one record.

Every limit has a default that real data never reaches and an environment variable to
change it (read when a file is opened, so a test or a worker sees the current value).
The README's "Guarantees" section lists them all with the measured memory of each case.
"""

from __future__ import annotations

import io
import os
from typing import Any

from curate.errors import CurateError

#: A compressed file (or one WARC gzip member) may inflate to at least this many bytes.
DEFAULT_MAX_DECOMPRESSED_BYTES = 4 << 30
#: ... and, for a whole compressed JSON-lines file, to this many times its compressed size.
DEFAULT_MAX_DECOMPRESSION_RATIO = 100.0


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw.replace("_", ""))
    except ValueError:
        raise CurateError(f"{name}={raw!r}: not a number") from None
    if value <= 0:
        raise CurateError(f"{name}={raw!r}: must be positive")
    return value


def max_decompressed_bytes() -> int:
    """``CURATE_MAX_DECOMPRESSED_BYTES`` (default 4 GiB)."""
    return int(_env_number("CURATE_MAX_DECOMPRESSED_BYTES", DEFAULT_MAX_DECOMPRESSED_BYTES))


def max_decompression_ratio() -> float:
    """``CURATE_MAX_DECOMPRESSION_RATIO`` (default 100)."""
    return _env_number("CURATE_MAX_DECOMPRESSION_RATIO", DEFAULT_MAX_DECOMPRESSION_RATIO)


def decompressed_limit(compressed_size: int | None) -> int:
    """How far a compressed file of ``compressed_size`` bytes may inflate: the larger of the two limits.

    Text compresses 3-10x; a decompression bomb 1,000x (gzip) to 30,000x (zstd). The ratio
    lets a genuine 15 GB Pile file (45 GB of text) through while a 10 kB bomb stops at 4 GiB.
    """
    floor = max_decompressed_bytes()
    if not compressed_size:
        return floor
    return max(floor, int(max_decompression_ratio() * compressed_size))


class DecompressionLimit(Exception):
    """A compressed stream inflated past its limit (a decompression bomb, or a limit set too low)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"decompresses to more than {limit:,} bytes")
        self.limit = limit


def bomb_message(path: Any, limit: int) -> str:
    """The one-line error for a file that inflates past ``limit``."""
    return (
        f"{path}: decompresses to more than {limit:,} bytes, a decompression bomb? (limit: the larger of "
        f"CURATE_MAX_DECOMPRESSED_BYTES and CURATE_MAX_DECOMPRESSION_RATIO x its size; raise them if the file is genuine)"
    )


class CappedReader(io.RawIOBase):
    """Counts the bytes read from a decompressing stream and raises :class:`DecompressionLimit` past ``limit``."""

    def __init__(self, inner: Any, limit: int, also_close: Any = None) -> None:
        self.inner, self.limit, self.total, self.also_close = inner, limit, 0, also_close

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = self.inner.readinto(b)
        self.total += n or 0
        if self.total > self.limit:
            raise DecompressionLimit(self.limit)
        return n

    def close(self) -> None:
        self.inner.close()
        if self.also_close is not None:
            self.also_close.close()
        super().close()
