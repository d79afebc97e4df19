"""The ARC format (the Internet Archive's before WARC; CommonCrawl's until 2012): record header lines and dates.

FastWARC reads no ARC; :class:`curate.warc.records.WarcReader` reads ARC records with these.
A record is a header line (URL, IP address, date, MIME type, ..., length) and that many bytes.
"""

from __future__ import annotations

from typing import Any

_ARC_LINE_MAX = 1 << 13


def _arc_line(line: bytes, fields: int) -> tuple[str, bytes, int] | None:
    """``(url, date, length)`` of an ARC record header line of ``fields`` fields (5 in version 1, 10 in
    version 2), split from the right as a URL may hold spaces; None if it is not one."""
    line = line.rstrip(b"\r\n")
    for n in (fields, 5) if fields != 5 else (5,):
        parts = line.rsplit(b" ", n - 1)
        if len(parts) == n and parts[-1].isdigit() and len(parts[-1]) <= 18 and b":" in parts[0]:
            date = parts[2]
            if date.isdigit() and 12 <= len(date) <= 14:
                return parts[0].decode("utf-8", "replace"), date, int(parts[-1])
    return None


def _readline(f: Any, limit: int) -> bytes:
    """One line of at most ``limit`` bytes from a seekable file (fsspec's readline takes no limit)."""
    start = f.tell()
    block = f.read(limit)
    i = block.find(b"\n")
    if i < 0 or i + 1 == len(block):
        return block
    f.seek(start + i + 1)
    return block[: i + 1]


def _arc_date(stamp: str) -> str | None:
    """An ARC date (YYYYMMDDhhmmss) as the ISO form WARC-Date has."""
    if len(stamp) < 14 or not stamp[:14].isdigit():
        return None
    s = stamp
    return f"{s[:4]}-{s[4:6]}-{s[6:8]}T{s[8:10]}:{s[10:12]}:{s[12:14]}Z"
