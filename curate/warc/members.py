"""Gzip framing of archive files: one member at a time, or the whole file as one decompressed stream.

CommonCrawl and most crawlers compress every record as its own gzip member, so a damaged
record costs only its member and reading resumes at the next one (:func:`_next_member`). A
file gzipped as a whole (``gzip x.warc``) is told apart by inflating its first record
(:func:`_several_records_per_member`) and read through :class:`_GzipStream`. One member may
inflate to ``CURATE_MAX_DECOMPRESSED_BYTES``; past that it is a decompression bomb.
"""

from __future__ import annotations

import bisect
import io
import re
import zlib
from array import array
from collections import deque
from typing import Any

from curate.limits import max_decompressed_bytes
from curate.warc.arc import _arc_line

_PROBE_BYTES = 1 << 20
_WARC_LINE = re.compile(rb"\nWARC/(?:1\.[01]|0\.1[78])\r?\n")


def _member(fh: Any, offset: int, limit: int | None = None) -> tuple[str, int, int, bytes]:
    """Decompress the gzip member at ``offset``: (``ok``|``eof``|``corrupt``|``bomb``, end offset, size, first 64 kB).

    Memory stays bounded (at most 1 MB of output per call; deflate inflates up to 1,032:1),
    and a member that inflates past ``limit`` (default ``CURATE_MAX_DECOMPRESSED_BYTES``) is
    a ``bomb``: its end is not looked for.
    """
    limit = limit if limit is not None else max_decompressed_bytes()
    fh.seek(offset)
    d = zlib.decompressobj(31)
    size, head, pos = 0, b"", offset
    while True:
        chunk = fh.read(1 << 16)
        if not chunk:
            return "eof", pos, size, head
        data = chunk
        while True:
            try:
                out = d.decompress(data, 1 << 20)
            except zlib.error:
                return "corrupt", pos, size, head
            size += len(out)
            if len(head) < 65536:
                head += out[: 65536 - len(head)]
            if d.eof:
                return "ok", pos + len(chunk) - len(d.unused_data), size, head
            if size > limit:
                return "bomb", pos, size, head
            data = d.unconsumed_tail
            if not data:
                break
        pos += len(chunk)


def _next_member(fh: Any, start: int, file_size: int, limit: int | None = None, arc: bool = False) -> int | None:
    """Offset of the first complete gzip member at or after ``start`` that holds a WARC (or ARC) record (and is no bomb)."""
    pos = start
    while pos < file_size:
        fh.seek(pos)
        block = fh.read(1 << 20)
        if not block:
            return None
        i = block.find(b"\x1f\x8b\x08")
        while i >= 0:
            state, _, _, head = _member(fh, pos + i, limit)
            if state == "ok" and (_arc_line(head.split(b"\n", 1)[0], 5) is not None if arc else head.startswith(b"WARC/")):
                return pos + i
            i = block.find(b"\x1f\x8b\x08", i + 1)
        pos += max(1, len(block) - 2)
    return None


def _several_records_per_member(fh: Any) -> bool:
    """Whether the first gzip member holds more than its first WARC record: a WARC gzipped as a whole
    (``gzip file.warc``) rather than record by record. Inflates the first record (at most 64 MiB);
    when its Content-Length cannot be read, looks for a second record header in the member's first MiB."""
    fh.seek(0)
    d = zlib.decompressobj(31)
    head, size, need = b"", 0, None
    done = False
    while not done:
        data = fh.read(1 << 16)
        if not data:
            break
        while data:
            try:
                out = d.decompress(data, 1 << 20)
            except zlib.error:
                done = True
                break
            size += len(out)
            if need is None and len(head) < _PROBE_BYTES:
                head += out
                end = head.find(b"\r\n\r\n")
                m = re.search(rb"\nContent-Length:[ \t]*(\d{1,18})\r\n", head[: end + 2], re.I) if end >= 0 else None
                if m is not None and head.startswith(b"WARC/"):
                    need = end + 4 + int(m.group(1)) + 4  # header, block, CRLFCRLF
                    if need > 64 << 20:
                        return False
            if need is not None and size > need + 2:
                return True  # the member goes on after the record
            if d.eof or (need is None and len(head) >= _PROBE_BYTES):
                done = True
                break
            data = d.unconsumed_tail
    return need is None and _WARC_LINE.search(head, 1) is not None


class _GzipStream:
    """The decompressed bytes of a gzip file (its members one after another) as a forward-reading file.

    Used for a WARC gzipped as a whole and for ``.arc.gz`` files. ``read``, ``tell`` and
    ``seek``: seeking back within the last ``HISTORY`` bytes is free; further
    back it inflates again from the latest gzip member start before the target (the file's
    start for a single member). ``state`` tells why the data ended: None (it has not),
    ``end``, ``truncated`` (inside a member), ``corrupt`` (``error`` says how) or ``bomb``
    (past ``limit`` decompressed bytes). Member starts are kept (decompressed -> compressed
    offset), 16 bytes a member.
    """

    HISTORY = 8 << 20
    STEP = 1 << 20  # decompressed bytes per piece

    def __init__(self, fh: Any, limit: int) -> None:
        self.fh, self.limit = fh, limit
        self.ustarts = array("q")  # member starts, decompressed offsets (increasing) ...
        self.cstarts = array("q")  # ... and compressed ones
        self.rewinds = 0
        self._reset(0, 0)

    def _reset(self, coffset: int, upos: int) -> None:
        self.fh.seek(coffset)
        self.cnext = coffset  # compressed offset of the next byte read from fh
        self.buf = b""  # compressed bytes not yet inflated
        self.d: Any = None  # the current member's decompressor (None: between members)
        self.member_cstart = coffset
        self.chunks: deque[tuple[int, bytes]] = deque()  # (uncompressed offset, bytes): history and unread
        self.produced = upos  # uncompressed offset after the last chunk
        self.pos = upos
        self.state: str | None = None
        self.error: str | None = None

    def restart(self, coffset: int) -> None:
        """Inflate on from the gzip member at ``coffset`` (after a corrupt member); offsets go on counting."""
        self._reset(coffset, self.produced)

    def member_at(self, upos: int) -> int | None:
        """The compressed offset of the gzip member that starts at decompressed offset ``upos``, if one does."""
        i = bisect.bisect_left(self.ustarts, upos)
        return self.cstarts[i] if i < len(self.ustarts) and self.ustarts[i] == upos else None

    def _read_compressed(self) -> bytes:
        data = self.fh.read(1 << 16)
        self.cnext += len(data)
        return data

    def _more(self) -> bytes:
        """The next piece of decompressed output; b"" at the end (``state`` set)."""
        while self.state is None:
            if not self.buf:
                self.buf = self._read_compressed()
                if not self.buf:
                    self.state = "end" if self.d is None else "truncated"
                    return b""
            if self.d is None:  # a member starts here
                while len(self.buf) < 3:
                    more = self._read_compressed()
                    if not more:
                        break
                    self.buf += more
                if not self.buf.startswith(b"\x1f\x8b\x08"):
                    tail = self.buf + self.fh.read(1 << 16)
                    if not tail.strip(b"\x00"):  # zero padding after the last member
                        self.state = "end"
                    else:
                        self.state, self.error = "corrupt", "data after a gzip member is not a gzip member"
                    return b""
                self.member_cstart = self.cnext - len(self.buf)
                if not self.ustarts or self.produced > self.ustarts[-1]:
                    self.ustarts.append(self.produced)
                    self.cstarts.append(self.member_cstart)
                self.d = zlib.decompressobj(31)
            try:
                out = self.d.decompress(self.buf, self.STEP)
            except zlib.error as exc:
                self.state, self.error = "corrupt", str(exc)
                return b""
            if self.d.eof:
                self.buf, self.d = self.d.unused_data, None
            else:
                self.buf = self.d.unconsumed_tail
            if out:
                if self.produced + len(out) > self.limit:
                    self.state = "bomb"
                    return b""
                return out
        return b""

    def _at(self, n: int) -> bytes:
        """Up to ``n`` bytes at ``pos`` (without moving it), inflating more when needed."""
        while self.produced <= self.pos:
            out = self._more()
            if not out:
                return b""
            self.chunks.append((self.produced, out))
            self.produced += len(out)
            while self.chunks and self.chunks[0][0] + len(self.chunks[0][1]) < self.pos - self.HISTORY:
                self.chunks.popleft()
        for start, data in reversed(self.chunks):
            if start <= self.pos:
                off = self.pos - start
                return data[off : off + n] if off or n < len(data) else data
        return b""  # not reached: seek() rewinds before the history

    def read(self, n: int = -1) -> bytes:
        n = (1 << 62) if n is None or n < 0 else n
        out = []
        while n > 0:
            piece = self._at(n)
            if not piece:
                break
            out.append(piece)
            self.pos += len(piece)
            n -= len(piece)
        return out[0] if len(out) == 1 else b"".join(out)

    def tell(self) -> int:
        return self.pos

    def seek(self, target: int, whence: int = 0) -> int:
        if whence == 1:
            target += self.pos
        elif whence != 0:
            raise io.UnsupportedOperation("seek from the end of a gzip stream")
        oldest = self.chunks[0][0] if self.chunks else self.produced
        if target < oldest:
            i = bisect.bisect_right(self.ustarts, target) - 1
            self._reset(self.cstarts[i], self.ustarts[i]) if i >= 0 else self._reset(0, 0)
            self.rewinds += 1
        self.pos = target
        return target

    def skip_to(self, target: int) -> bool:
        """Move to ``target``, inflating what lies before it; False when the data ends first."""
        self.seek(target)
        return target == 0 or bool(self._at(1)) or self.produced >= target
