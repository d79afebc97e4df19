"""Records of WARC and ARC files (:class:`WarcReader`), confirmed intact, with damage counted and named.

Formats: WARC gzipped record by record (CommonCrawl), gzipped as a whole (offsets are then
decompressed offsets, ``RawRecord.uncompressed``), or plain; ARC, plain or gzipped. WARC
records are parsed by FastWARC, ARC header lines by :mod:`curate.warc.arc`; the HTTP response
in a ``response`` record is judged here (status, content type, size) and its body read with
its codings undone (:mod:`curate.warc.http`).

Damaged files. FastWARC stops at the first gzip error or bad WARC header and ends silently
on a truncated file, so each read pass is checked: a record is confirmed when the next one
parses; at the end of a pass, the last record's own gzip member is decompressed to see
whether it is complete and as long as its Content-Length says. After an error the reader
resynchronises at the next gzip member that holds a record, so one bad record costs that
record, not the rest of the file. In a file gzipped as a whole, a bad WARC header is skipped
to the next ``WARC/1.`` line (the stream keeps 8 MB of history to look back in); a corrupt or
cut gzip stream ends what can be read of its member. Warnings name a record by its number in
the file and its offset (``#12 at uncompressed byte 3,456``).

Limits. A payload larger than ``max_record`` (stored or decoded) is ``too_large``: a coded
body is read whole to be undone, so this bounds memory; one that got there inflating more than
``CURATE_MAX_DECOMPRESSION_RATIO`` times its size (or past ``CURATE_MAX_DECOMPRESSED_BYTES``)
is a ``decompression_bomb``, and so is a gzip member inflating past the latter; a record
whose header declares more than that is ``too_large`` and not inflated at all.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curate.limits import decompressed_limit, max_decompressed_bytes, max_decompression_ratio
from curate.storage import open_input
from curate.warc.arc import _ARC_LINE_MAX, _arc_date, _arc_line, _readline
from curate.warc.http import cut_html, decode_payload, http_codings, parse_http_head
from curate.warc.members import _GzipStream, _member, _next_member, _several_records_per_member

log = logging.getLogger("curate")

WARC_SUFFIXES = (".warc.gz", ".warc")
ARC_SUFFIXES = (".arc.gz", ".arc")
ARCHIVE_SUFFIXES = WARC_SUFFIXES + ARC_SUFFIXES
DEFAULT_MAX_RECORD_BYTES = 64 << 20
HEAD_BYTES = 64 << 10  # the most an HTTP header block may take
HTML_TYPES = ("text/html", "application/xhtml+xml")
_SNIFF_HTML = re.compile(rb"^\s*(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body)\b", re.I | re.S)
_CT_CHARSET = re.compile(r"""charset\s*=\s*["']?([^"';,\s]+)""", re.I)


@dataclass
class RawRecord:
    """What the reader keeps of one WARC or ARC record (the body only for candidate documents)."""

    offset: int
    rtype: str
    record_id: str | None = None
    url: str | None = None
    date: str | None = None
    status: int | None = None
    content_type: str | None = None
    charset: str | None = None
    length: int = 0  # the stored HTTP payload's length
    body: bytes | None = None  # the payload, transfer and content codings undone, cut at max_body
    reason: str | None = None  # why it is not a document (decided while reading)
    damaged: str | None = None  # short body / read error: truncated, bad_length or corrupt
    index: int = 0  # the record's number in its file (0: the first)
    pos: int = 0  # where it starts in what the reader reads (decompressed bytes for a gzip stream)
    uncompressed: bool = False  # ``offset`` counts decompressed bytes (no gzip member starts there)
    truncated: bool = False  # the body was cut at max_body (truncated_html)
    cut_before_body: bool = False  # ... and the cut fell before <body> (rejected: cut_before_body)
    decoded: str | None = None  # the codings undone, e.g. "chunked,gzip"
    warc_truncated: str | None = None  # the WARC-Truncated header (the crawler cut the payload)


def _member_length_ok(size: int, head: bytes) -> bool:
    """Whether a decompressed record is as long as its WARC Content-Length says (headers + body + CRLFCRLF)."""
    end = head.find(b"\r\n\r\n")
    m = re.search(rb"\r\nContent-Length:\s*(\d+)", head[: end + 2], re.I) if end >= 0 else None
    return bool(m) and end + 4 + int(m.group(1)) + 4 == size


def _next_plain_record(fh: Any, start: int, file_size: int | float) -> int | None:
    """Offset of the first ``WARC/1.`` line after ``start`` in uncompressed data (a file, or a :class:`_GzipStream`); None if there is none."""
    pos = start
    while pos < file_size:
        fh.seek(pos)
        block = fh.read(1 << 20)
        if not block:
            return None
        i = block.find(b"\nWARC/1.")
        if i >= 0:
            return pos + i + 1
        pos += max(1, len(block) - 8)
    return None


class WarcReader:
    """Records of one WARC (or ARC) file, confirmed intact, with damage counted and named in warnings.

    ``max_body``: longer candidate bodies are read whole, lose the scripts and styles before
    their ``<body>`` and are cut there (:func:`curate.warc.http.cut_html`; ``truncated_html``);
    ``max_record``: a payload larger than this, stored or decoded, is not read (``too_large``).
    """

    def __init__(self, path: Path, max_body: int, counters: dict[str, Any], max_record: int = DEFAULT_MAX_RECORD_BYTES) -> None:
        self.path = path
        self.max_body = max_body
        self.max_record = max_record
        self.member_cap = max_decompressed_bytes()  # the most one gzip member (one record) may inflate to
        self.counters = counters
        self.n = 0  # records seen

    def _count(self, key: str, n: int = 1) -> None:
        self.counters[key] = self.counters.get(key, 0) + n

    def _count_in(self, key: str, sub: str) -> None:
        d = self.counters.setdefault(key, {})
        d[sub] = d.get(sub, 0) + 1

    def _new(self, offset: int, rtype: str, stream: _GzipStream | None = None) -> RawRecord:
        raw = RawRecord(offset=offset, rtype=rtype, index=self.n, pos=offset)
        self.n += 1
        if stream is not None:
            member = stream.member_at(offset)
            if member is None:
                raw.uncompressed = True
            else:
                raw.offset = member
        return raw

    def _where(self, raw: RawRecord) -> str:
        return f"#{raw.index} at {'uncompressed ' if raw.uncompressed else ''}byte {raw.offset:,}"

    def _read(self, rec: Any, raw: RawRecord) -> None:
        """Fill ``raw`` from a FastWARC record; the body is read only for candidate documents."""
        self._count_in("records", raw.rtype)
        if raw.rtype != "response":
            return
        h = rec.headers
        raw.record_id = (h.get("WARC-Record-ID") or "").strip().strip("<>") or None
        url = h.get("WARC-Target-URI")
        raw.url = url.strip().strip("<>") if url else url  # wget writes <http://...> (WARC/1.0's grammar)
        raw.date = h.get("WARC-Date")
        truncated = h.get("WARC-Truncated")
        if truncated:
            self._count("warc_truncated")
            raw.warc_truncated = truncated
        self._http(rec.reader.read, rec.content_length, raw)

    def _http(self, read: Any, block_len: int, raw: RawRecord) -> None:
        """Parse the HTTP response in a record's block of ``block_len`` bytes (``read(n)`` reads on), judge it, read its body."""
        head = read(min(block_len, 1 << 14))
        parsed = parse_http_head(head, whole=len(head) >= block_len)
        if parsed is None and len(head) < min(block_len, HEAD_BYTES):  # a long header block (cookies, CSP)
            head += read(min(block_len, HEAD_BYTES) - len(head))
            parsed = parse_http_head(head, whole=len(head) >= block_len)
        if parsed is None:
            raw.reason = "bad_http"
            return
        status, headers, size, lf_only = parsed
        if lf_only:
            self._count("lf_http_headers")
        raw.status = status
        ctype = headers.get(b"content-type")
        if ctype is not None:
            raw.content_type = ctype.decode("utf-8", "replace")
            m = _CT_CHARSET.search(raw.content_type)
            raw.charset = m.group(1) if m else None
        payload = max(0, block_len - size)
        raw.length = payload
        mime = (raw.content_type or "").split(";")[0].strip().lower()
        if status != 200:
            raw.reason = "not_200"
        elif mime and mime not in HTML_TYPES:
            raw.reason = "not_html"
        elif payload > self.max_record:
            raw.reason = "too_large"
        if raw.reason:
            return
        codings = http_codings(headers)
        want = payload  # whole (at most max_record): a coded one to be undone, a long one to drop its <head> bulk before the cut
        body = head[size : size + want]
        if len(body) < want:
            body += read(want - len(body))
        if len(body) < want:
            raw.body, raw.damaged = body, "short"
            return
        if codings:
            limit = min(self.max_record, self.member_cap)
            body, st, undone = decode_payload(body, codings, limit)
            for c in undone:
                self._count_in("http_decoded", c)
            if undone:
                raw.decoded = ",".join(undone)
            if st == "over":
                bomb = limit == self.member_cap < self.max_record or limit > max_decompression_ratio() * max(1, payload)
                raw.reason = "decompression_bomb" if bomb else "too_large"
                return
            if st in ("bad", "unsupported"):
                raw.reason = "bad_encoding" if st == "bad" else "unsupported_encoding"
                if st == "unsupported":
                    self._count_in("unsupported_encoding", ",".join(codings)[:40])
                return
            if st == "partial":
                self._count("http_decode_partial")
            elif st == "ignored":
                self._count("http_encoding_ignored")
        if len(body) > self.max_body:
            body, how = cut_html(body, self.max_body)
            if how is None:
                self._count("head_bulk_dropped")  # it fits without its <head> scripts (and styles)
            else:
                raw.truncated = True
                self._count("truncated_html")
                raw.cut_before_body = how == "cut_before_body"
        raw.body = body
        if not mime:
            if _SNIFF_HTML.match(body[:1024]):
                self._count("sniffed_html")
            else:
                raw.reason, raw.body = "not_html", None

    def __iter__(self) -> Iterator[RawRecord]:
        size = self.path.stat().st_size
        with open_input(self.path) as fh:  # a local file, or an fsspec file object (s3://...): fastwarc reads both
            gz = fh.read(2) == b"\x1f\x8b"
            fh.seek(0)
            if gz:
                _, _, _, head = _member(fh, 0, 1 << 16)  # only the first 64 kB are inflated
            else:
                head = fh.read(_ARC_LINE_MAX)
            named_arc = self.path.name.endswith(ARC_SUFFIXES)
            if head.startswith(b"filedesc://") or (named_arc and _arc_line(head.split(b"\n", 1)[0], 5) is not None):
                kind = "arc"
            elif gz:
                kind = "stream" if _several_records_per_member(fh) else "members"
            else:
                kind = "plain"
            if kind == "arc":
                yield from self._iter_arc(fh, gz, size)
            elif kind == "stream":
                yield from self._iter_stream(fh, size)
            else:
                yield from self._iter_warc(fh, gz, size)

    def _iter_warc(self, fh: Any, gz: bool, size: int) -> Iterator[RawRecord]:
        """A plain WARC file, or one gzip member per record (as CommonCrawl and most crawlers write)."""
        from fastwarc.warc import ArchiveIterator

        start = 0
        while start < size:
            fh.seek(start)
            pending: RawRecord | None = None
            error: str | None = None
            oversize = False
            try:
                for rec in ArchiveIterator(fh, parse_http=False):
                    if pending is not None:
                        yield pending  # confirmed: the next record's header parsed
                    rtype = rec.record_type
                    pending = self._new(rec.stream_pos, str(getattr(rtype, "name", rtype)))
                    if gz and rec.content_length > self.member_cap:
                        # declared larger than a gzip member may inflate: fastwarc would inflate it all to
                        # skip it, so the reader jumps to the next member instead (too_large)
                        pending.reason, pending.length, oversize = "too_large", rec.content_length, True
                        self._count_in("records", pending.rtype)
                        self._count("records_over_member_cap")
                        break
                    try:
                        self._read(rec, pending)
                    except OSError as exc:
                        pending.damaged, error = "corrupt", str(exc) or type(exc).__name__
                        break
                    if pending.damaged:
                        break
            except OSError as exc:
                error = str(exc) or type(exc).__name__
            start = yield from self._after_pass(fh, pending, error, start, size, gz, oversize)

    def _after_pass(
        self, fh: Any, last: RawRecord | None, error: str | None, start: int, size: int, gz: bool, oversize: bool = False
    ) -> Iterator[RawRecord]:
        """Judge the pass's last record, report damage, and return where to read on (``size``: done)."""
        resume = start + 1 if last is None else last.offset + 1
        if last is not None:
            if oversize:
                pass  # not inflated: the next member is looked for below
            elif gz:
                state, end, dsize, head = _member(fh, last.offset, self.member_cap)
                if state == "ok":
                    resume = end
                    if last.damaged == "short" or not _member_length_ok(dsize, head):
                        last.damaged = "bad_length"
                elif state == "bomb":
                    last.damaged = "decompression_bomb"
                    self._count("decompression_bomb")
                else:
                    last.damaged = "truncated" if state == "eof" else "corrupt"
            elif last.damaged == "short":
                last.damaged = "truncated" if error is None else "bad_length"
            elif error is not None:
                last.damaged = "bad_length"  # the next header did not parse: this record's length is suspect
            if last.damaged:
                self._damaged(last)
            yield last
        if error is None and (not gz or resume >= size) and not oversize:
            if last is not None and last.damaged == "truncated":
                self._count("truncated")
            return size
        if last is not None and last.damaged == "truncated":
            self._count("truncated")
            return size
        nxt = _next_member(fh, resume, size, self.member_cap) if gz else _next_plain_record(fh, resume, size)
        if error is not None:
            kind = "corrupt_gzip" if gz and re.search(r"gzip|deflate|decompress|zlib|data error", error, re.I) else "bad_warc_header"
            self._count(kind)
            where = f"after the record {self._where(last)}" if last is not None else f"at byte {start:,}"
            then = f"resuming at byte {nxt:,}" if nxt is not None else "nothing readable after it"
            log.warning("extract: %s: %s %s (%s); %s", self.path, kind.replace("_", " "), where, error, then)
        if nxt is None:
            if last is None and start == 0:
                self._count("unreadable")
                log.warning("extract: %s: no WARC record could be read", self.path)
            elif error is None and not oversize and (last is None or last.damaged != "decompression_bomb"):
                self._count("truncated")
                log.warning("extract: %s: the last %d byte(s) are not a complete WARC record (truncated file?)", self.path, size - resume)
            return size
        self._count("resynced")
        self._count("skipped_bytes", nxt - resume)
        return nxt

    def _iter_stream(self, fh: Any, size: int) -> Iterator[RawRecord]:
        """A WARC whose gzip members hold several records (``gzip file.warc``: one member for the whole file).

        FastWARC reads the decompressed stream; offsets are decompressed offsets (except where
        a gzip member starts). Damage: a cut or corrupt gzip stream ends the readable data (the
        records before are kept; reading goes on at the next intact member, if any); a bad
        WARC header in good data is skipped to the next ``WARC/1.`` line, as in a plain file.
        """
        from fastwarc.warc import ArchiveIterator

        self._count("whole_gzip_files")
        stream = _GzipStream(fh, decompressed_limit(size))
        start = 0
        while True:
            stream.seek(start)
            pending: RawRecord | None = None
            error: str | None = None
            try:
                for rec in ArchiveIterator(stream, parse_http=False):
                    if pending is not None:
                        yield pending
                    rtype = rec.record_type
                    pending = self._new(rec.stream_pos, str(getattr(rtype, "name", rtype)), stream)
                    try:
                        self._read(rec, pending)
                    except OSError as exc:
                        pending.damaged, error = "corrupt", str(exc) or type(exc).__name__
                        break
                    if pending.damaged:
                        break
            except OSError as exc:
                error = str(exc) or type(exc).__name__
            nxt = yield from self._after_stream_pass(fh, stream, pending, error, start, size)
            if nxt is None:
                return
            start = nxt

    def _after_stream_pass(
        self, fh: Any, stream: _GzipStream, last: RawRecord | None, error: str | None, start: int, size: int
    ) -> Iterator[RawRecord]:
        """Judge the pass's last record, report damage, and return the offset to read on from (None: done)."""
        st = stream.state
        ended = st in ("truncated", "corrupt", "bomb")
        if last is not None:
            if last.damaged in ("short", "corrupt"):
                last.damaged = {"truncated": "truncated", "corrupt": "corrupt", "bomb": "decompression_bomb", "end": "truncated"}.get(
                    st or "", "bad_length" if last.damaged == "short" else "corrupt"
                )
            elif error is not None and not ended:
                last.damaged = "bad_length"  # the next header did not parse: this record's length is suspect
            if last.damaged:
                self._damaged(last)
            yield last
        where = f"after the record {self._where(last)}" if last is not None else f"at uncompressed byte {start:,}"
        if st == "truncated" or (st == "end" and last is not None and last.damaged == "truncated"):
            self._count("truncated")
            if last is None or last.damaged != "truncated":
                log.warning("extract: %s: the gzip data ends inside a member %s (truncated file?)", self.path, where)
            return None
        if st == "bomb":
            self._count("decompression_bomb")
            log.warning("extract: %s: the gzip stream inflates past %s bytes %s (decompression_bomb; CURATE_MAX_DECOMPRESSED_BYTES, "
                        "CURATE_MAX_DECOMPRESSION_RATIO); the rest is skipped", self.path, f"{stream.limit:,}", where)  # fmt: skip
            return None
        if st == "corrupt":
            self._count("corrupt_gzip")
            nxt = _next_member(fh, stream.member_cstart + 1, size, self.member_cap)
            then = f"resuming at the gzip member at byte {nxt:,}" if nxt is not None else "nothing readable after it"
            log.warning("extract: %s: corrupt gzip %s (%s); %s", self.path, where, stream.error, then)
            if nxt is None:
                return None
            self._count("resynced")
            self._count("skipped_bytes", nxt - stream.member_cstart)
            stream.restart(nxt)
            return stream.pos
        if error is None:
            return None
        resume = start + 1 if last is None else last.pos + 1
        nxt = _next_plain_record(stream, resume, float("inf"))
        self._count("bad_warc_header")
        then = f"resuming at uncompressed byte {nxt:,}" if nxt is not None else "nothing readable after it"
        log.warning("extract: %s: bad WARC header %s (%s); %s", self.path, where, error, then)
        if nxt is None:
            if last is None and start == 0:
                self._count("unreadable")
            return None
        self._count("resynced")
        self._count("skipped_bytes", nxt - resume)
        return nxt

    def _iter_arc(self, fh: Any, gz: bool, size: int) -> Iterator[RawRecord]:
        """An ARC file (the Internet Archive's format before WARC; CommonCrawl's until 2012), plain or gzipped.

        A record is a header line (URL, IP address, date, MIME type, ..., length) and that
        many bytes (the HTTP response), then a newline; the first (``filedesc://``) describes
        the file and names the header line's fields (5 in version 1, 10 in version 2).
        """
        self._count("arc_files")
        src: Any = _GzipStream(fh, decompressed_limit(size)) if gz else fh
        stream = src if gz else None
        if not gz:
            fh.seek(0)
        fields = 5
        in_bad = False
        while True:
            at = src.tell()
            line = _readline(src, _ARC_LINE_MAX)
            if line and not line.endswith(b"\n") and len(line) < _ARC_LINE_MAX:  # the data ends inside a line
                if stream is None or stream.state in (None, "end"):
                    self._count("truncated")
                    log.warning("extract: %s: the last %d byte(s) are not a complete ARC record (truncated file?)", self.path, len(line))
                    break
                line = b""  # the stream's state says why it ended
            if not line:
                if stream is not None and stream.state == "corrupt":
                    self._count("corrupt_gzip")
                    nxt = _next_member(fh, stream.member_cstart + 1, size, self.member_cap, arc=True)
                    then = f"resuming at the gzip member at byte {nxt:,}" if nxt is not None else "nothing readable after it"
                    log.warning("extract: %s: corrupt gzip in the member at byte %s (%s); %s", self.path,
                                f"{stream.member_cstart:,}", stream.error, then)  # fmt: skip
                    if nxt is not None:
                        self._count("resynced")
                        stream.restart(nxt)
                        continue
                elif stream is not None and stream.state == "bomb":
                    self._count("decompression_bomb")
                    log.warning("extract: %s: the gzip data inflates past %s bytes (decompression_bomb); the rest is skipped",
                                self.path, f"{stream.limit:,}")  # fmt: skip
                elif stream is not None and stream.state == "truncated":
                    self._count("truncated")
                    log.warning("extract: %s: the gzip data ends inside a member (truncated file?)", self.path)
                break
            if not line.strip():
                continue  # the newline after a record
            parsed = _arc_line(line, fields)
            if parsed is None:
                if not in_bad:
                    self._count("bad_arc_header")
                    log.warning("extract: %s: after record #%d, the line at %sbyte %s is not an ARC record header "
                                "(bad_arc_header); looking for the next", self.path, self.n - 1, "uncompressed " if gz else "",
                                f"{at:,}")  # fmt: skip
                in_bad = True
                self._count("skipped_bytes", len(line))
                continue
            in_bad = False
            url, date, length = parsed
            scheme = url.split(":", 1)[0].lower()
            rtype = "arc_header" if scheme == "filedesc" else "response" if scheme in ("http", "https") else "resource"
            raw = self._new(at, rtype, stream)
            raw.url = url
            raw.date = _arc_date(date.decode("ascii"))
            block_at = src.tell()
            self._count_in("records", rtype)
            if rtype == "response":
                try:
                    self._http(lambda k, _end=block_at + length: src.read(max(0, min(k, _end - src.tell()))), length, raw)
                except OSError as exc:
                    raw.damaged = "corrupt"
                    log.debug("extract: %s: %s", self.path, exc)
            elif rtype == "arc_header":
                desc = src.read(min(length, 1 << 16)).split(b"\n")
                if len(desc) > 1 and len(desc[1].split()) >= 5:
                    fields = len(desc[1].split())  # the field names of the header lines
            complete = stream.skip_to(block_at + length) if stream is not None else block_at + length <= size
            if not complete or raw.damaged == "short":
                st = stream.state if stream is not None else None
                raw.damaged = "corrupt" if st == "corrupt" else "decompression_bomb" if st == "bomb" else "truncated"
                if raw.damaged == "truncated":
                    self._count("truncated")
                self._damaged(raw)
                yield raw
                if raw.damaged == "corrupt" and stream is not None:
                    continue  # the next line read sees the end and looks for the next member
                break
            if stream is None:
                fh.seek(block_at + length)
            yield raw

    def _damaged(self, raw: RawRecord) -> None:
        what = {
            "truncated": "is cut off by the end of the file (truncated); kept the records before it",
            "bad_length": "has a Content-Length that does not match its data (bad_length)",
            "corrupt": "is in a corrupt gzip member (corrupt)",
            "decompression_bomb": f"is in a gzip member that inflates past {self.member_cap:,} bytes "
            "(decompression_bomb; CURATE_MAX_DECOMPRESSED_BYTES); skipped to the next record",
        }.get(raw.damaged or "", raw.damaged)
        log.warning("extract: %s: the %s record %s %s", self.path, raw.rtype, self._where(raw), what)
