"""HTML pages in WARC (and ARC) files to main-content text documents (the ``extract`` stage).

One WARC file becomes one output shard. Records are read with FastWARC; the HTTP response
in a ``response`` record is parsed here (status line and headers, lines ending in CRLF or,
as in ClueWeb09, a bare LF); responses with HTTP 200 and an HTML content type have their
transfer and content codings undone (``chunked``; ``gzip``, ``deflate``, ``br`` when the
brotli module is there, ``zstd``: wget, Heritrix, Webrecorder and browsertrix store bodies as
sent, CommonCrawl decoded), are decoded (BOM, then the HTTP charset, a ``<meta>`` charset,
then strict UTF-8, then uchardet's guess; strict decoding, so a wrong declaration falls
through to the next), their main content is extracted (resiliparse by default, or
trafilatura, or jusText with the English stoplist), Unicode is repaired with the clean
stage's ``clean_text``, and the document gets ``source`` ``cc/<snapshot>``, the URL (wget's
``<...>`` around it removed), the WARC-Record-ID as ``id`` and the WARC date and content type
in ``meta``. ARC files (``.arc``, ``.arc.gz``: the Internet Archive's format, CommonCrawl's
until 2012) are read by a small parser here (FastWARC reads no ARC); their records have no
id, so ``id`` is ``file@offset``.

Every other record is counted: non-``response`` records (requests, metadata) under
``counters.records``; responses that are not documents under a reason (``not_200``,
``not_html``, ``too_large``, ``binary``, ``decode_error``, ``bad_http``,
``unsupported_encoding``, ``bad_encoding``, ``empty``, ``timeout``, ``extractor_error``,
``extractor_crash``, ``record_error`` (anything else that failed on one record), and for
damaged files ``truncated``, ``bad_length``, ``corrupt``, ``decompression_bomb``).

Limits. An HTML body longer than ``max_html_bytes`` is cut there and extracted
(``truncated_html``; CommonCrawl itself cuts payloads at 1 MiB, ``WARC-Truncated``); a
decoder that is not final drops a character the cut splits. A payload larger than
``max_record_bytes`` (64 MiB), stored or decoded, is ``too_large``: a coded body is read
whole to be undone, so this bounds memory; decoding stops there, and a body that got there
inflating more than ``CURATE_MAX_DECOMPRESSION_RATIO`` times its size (or past
``CURATE_MAX_DECOMPRESSED_BYTES``) is a ``decompression_bomb``. A gzip member (one record)
may inflate to ``CURATE_MAX_DECOMPRESSED_BYTES`` (4 GiB): past that it is a
``decompression_bomb`` and the reader skips to the next member; a record whose header
declares more than that is ``too_large`` and not inflated at all. Decompression runs in
1 MB steps.

Gzip framing. CommonCrawl and most crawlers compress every record as its own gzip member;
a file gzipped as a whole (``gzip x.warc``: one member, or members of several records) is
told apart by inflating its first record, and then read as one decompressed stream
(``whole_gzip_files``): its offsets are decompressed offsets, and ``meta`` says so
(``warc_offset_uncompressed``). Warnings name a record by its number in the file and its
offset (``#12 at uncompressed byte 3,456``).

Damaged files. FastWARC stops at the first gzip error or bad WARC header and ends silently
on a truncated file, so each read pass is checked: a record is confirmed when the next one
parses; at the end of a pass, the last record's own gzip member is decompressed to see
whether it is complete and as long as its Content-Length says. After an error the reader
resynchronises at the next gzip member that holds a WARC record, so one bad record costs
that record, not the rest of the file (CommonCrawl compresses every record separately).
In a file gzipped as a whole, a bad WARC header is skipped to the next ``WARC/1.`` line
(the stream keeps 8 MB of history to look back in); a corrupt or cut gzip stream ends what
can be read of its member.

Time limit. Extraction of one record runs in a helper process fed through a pipe; when it
overruns ``record_timeout`` the helper is killed and restarted and the record counted
under ``timeout``. A signal (SIGALRM) cannot do this: resiliparse extracts in native code
holding the GIL, and a page of 30,000 nested ``<div><span>`` took it 139 s here, during which
a Python signal handler never runs. The pipe costs a few tens of microseconds per record;
``record_timeout=0`` extracts in-process without a limit.
"""

from __future__ import annotations

import atexit
import bisect
import codecs
import io
import json
import logging
import os
import re
import select
import struct
import subprocess
import sys
import time
import zlib
from array import array
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa

from curate.dataset import Inputs, files_fingerprint, input_name
from curate.errors import CurateError
from curate.limits import decompressed_limit, max_decompressed_bytes, max_decompression_ratio
from curate.runtime import Common, Context, FileBatch, Stage, param
from curate.schema import BASE_SCHEMA, rejected_schema
from curate.stages.extractors import EXTRACTORS, extractor_function
from curate.storage import as_path, glob_paths, open_input

log = logging.getLogger("curate")

WARC_SUFFIXES = (".warc.gz", ".warc")
ARC_SUFFIXES = (".arc.gz", ".arc")
ARCHIVE_SUFFIXES = WARC_SUFFIXES + ARC_SUFFIXES
DEFAULT_MAX_RECORD_BYTES = 64 << 20
HEAD_BYTES = 64 << 10  # the most an HTTP header block may take
HTML_TYPES = ("text/html", "application/xhtml+xml")
SNAPSHOT_IN_PATH = re.compile(r"CC-MAIN-\d{4}-\d{2}")
BATCH_RECORDS = 512
#: pages extracted as one group (one stream to the helper process): at most this many, or this much HTML
GROUP_RECORDS, GROUP_CHARS = 64, 8 << 20
_META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([A-Za-z0-9_:.\-]{1,40})""", re.I)
_SNIFF_HTML = re.compile(rb"^\s*(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body)\b", re.I | re.S)
_CTRL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 12, 13, 27))
_CHARSET_LABEL = re.compile(r"[a-z0-9_.:\-]{1,40}")
_REJECTED_SCHEMA = rejected_schema(BASE_SCHEMA)
_HTTP_END = re.compile(rb"\r?\n\r?\n")
_HTTP_STATUS = re.compile(rb"[ \t]*HTTP/\d+(?:\.\d+)?[ \t]+(\d{3})(?!\d)", re.I)
_HTTP_FIELD = re.compile(rb"\n([^:\r\n]+):([^\r\n]*)")
_CT_CHARSET = re.compile(r"""charset\s*=\s*["']?([^"';,\s]+)""", re.I)
_CHUNK_SIZE = re.compile(rb"[ \t]*([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?\r?\n")
_STEP = 1 << 20  # decompressed bytes per step: memory stays bounded whatever the ratio
_ARC_LINE_MAX = 1 << 13
_PROBE_BYTES = 1 << 20
_WARC_LINE = re.compile(rb"\nWARC/(?:1\.[01]|0\.1[78])\r?\n")


# --------------------------------------------------------------------------- the time-limited helper process


class ExtractTimeout(Exception):
    """One record's extraction overran the time limit."""


class ExtractCrash(Exception):
    """The helper process died while extracting one record."""


class Sandbox:
    """A helper process that extracts text from HTML; killed and restarted when a record overruns.

    Protocol on the helper's stdin/stdout: request = 8-byte length + UTF-8 HTML; answer =
    1 status byte (``0`` text, ``1`` error message) + 8-byte length + UTF-8 payload.
    """

    def __init__(self, extractor: str) -> None:
        self.extractor = extractor
        self.proc: subprocess.Popen | None = None
        self.served = 0
        self.restarts = 0

    def _start(self) -> subprocess.Popen:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "curate.stages.extractors", "--serve", self.extractor],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
            start_new_session=True,  # Ctrl-C in the terminal goes to curate, which stops it; no traceback from here
        )
        return self.proc

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.proc.kill()
                self.proc.wait(timeout=5)
            except Exception:  # noqa: BLE001 - best effort
                pass
            for fh in (self.proc.stdin, self.proc.stdout):
                try:
                    fh.close()  # type: ignore[union-attr]
                except Exception:  # noqa: BLE001
                    pass
            self.proc = None

    def extract(self, html: str, timeout: float) -> str:
        """One page's text (raises ExtractTimeout, ExtractCrash, or RuntimeError for the extractor's own error)."""
        (result,) = self.extract_many([html], timeout)
        if isinstance(result, BaseException):
            raise result
        return result

    def extract_many(self, htmls: list[str], timeout: float) -> list[str | BaseException]:
        """Each page's text, or the exception that stands for its failure, in order.

        The pages go to the helper in one stream and their answers come back as they are
        done: one wake-up per group rather than per page (a round trip between two cores
        costs ~90 us here, several per page). Each page still has ``timeout`` seconds from
        when the helper could start it; on a timeout or a crash the helper is restarted and
        the pages after that one are sent again.
        """
        results: list[str | BaseException] = []
        while len(results) < len(htmls):
            results.extend(self._stream(htmls[len(results) :], timeout))
        return results

    def _stream(self, htmls: list[str], timeout: float) -> list[str | BaseException]:
        """Answers for a prefix of ``htmls``: all of them, or up to and including the first timeout or crash."""
        proc = self.proc if self.proc is not None and self.proc.poll() is None else self._start()
        payloads = [h.encode("utf-8", "surrogatepass") for h in htmls]
        ends: list[int] = []  # where each page's request ends in the stream
        for p in payloads:
            ends.append((ends[-1] if ends else 0) + 8 + len(p))
        request = memoryview(b"".join(struct.pack("<Q", len(p)) + p for p in payloads))
        wfd, rfd = proc.stdin.fileno(), proc.stdout.fileno()  # type: ignore[union-attr]
        os.set_blocking(wfd, False)
        results: list[str | BaseException] = []
        written: list[float] = []  # when each page's request was all in the pipe
        answer = bytearray()
        sent = 0
        answered = time.monotonic()  # when the last answer came (the helper was free from then on)
        try:
            while len(results) < len(htmls):
                k = len(results)
                now = time.monotonic()
                # page k runs from when the helper had it and was done with the one before
                start = max(answered, written[k]) if k < len(written) else now
                if len(answer) >= 9:
                    start += 5.0  # the tail of a long answer: 5 s more
                wait = start + timeout - now
                if wait <= 0:
                    raise ExtractTimeout
                ready, writable, _ = select.select([rfd], [wfd] if sent < len(request) else [], [], wait)
                if writable:
                    try:
                        sent += os.write(wfd, request[sent : sent + (1 << 20)])
                    except BlockingIOError:
                        pass
                    while len(written) < len(ends) and ends[len(written)] <= sent:
                        written.append(time.monotonic())
                if not ready:
                    continue
                data = os.read(rfd, 1 << 20)
                if not data:
                    raise ExtractCrash("the extraction helper exited")
                answer += data
                while len(answer) >= 9 and len(results) < len(htmls):
                    need = 9 + struct.unpack_from("<Q", answer, 1)[0]
                    if len(answer) < need:
                        break
                    status, body = answer[:1], bytes(answer[9:need]).decode("utf-8", "surrogatepass")
                    del answer[:need]
                    results.append(RuntimeError(body) if status == b"1" else body)
                    self.served += 1
                    answered = time.monotonic()
        except ExtractTimeout as exc:
            self.close()
            self.restarts += 1
            results.append(exc)
        except (BrokenPipeError, ExtractCrash, OSError) as exc:
            first = self.served == 0
            self.close()
            self.restarts += 1
            if first:
                raise CurateError(f"the {self.extractor} extraction helper did not start ({exc}); try --record-timeout 0") from exc
            results.append(ExtractCrash(str(exc)))
        return results


_SANDBOXES: dict[str, Sandbox] = {}


def sandbox(extractor: str) -> Sandbox:
    """This process's helper for ``extractor`` (started on first use, reused across files)."""
    box = _SANDBOXES.get(extractor)
    if box is None:
        box = _SANDBOXES[extractor] = Sandbox(extractor)
    return box


@atexit.register
def _close_sandboxes() -> None:
    for box in _SANDBOXES.values():
        box.close()


def first_error(counters: dict[str, Any], reason: str, exc: BaseException) -> None:
    """Remember the first error message of a reason (``counters.first_error``): what a failed run reports."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    counters.setdefault("first_error", {}).setdefault(reason, text if ": " in text else f"{type(exc).__name__}: {text}")


# --------------------------------------------------------------------------- decoding


def _codec(name: str | None) -> str | None:
    """A Python codec for a declared charset label (WHATWG aliases: latin1 means windows-1252)."""
    if not name:
        return None
    label = name.strip().strip("\"'").lower()
    if not _CHARSET_LABEL.fullmatch(label):  # a header from a stranger: "utf\x008" made codecs.lookup raise ValueError
        return None
    if label in ("latin1", "latin-1", "iso-8859-1", "iso8859-1", "us-ascii", "ascii", "l1"):
        label = "cp1252"
    try:
        return codecs.lookup(label).name
    except LookupError:
        from resiliparse.parse.encoding import map_encoding_to_html5

        mapped = map_encoding_to_html5(label, fallback_utf8=False)
        try:
            return codecs.lookup(mapped).name if mapped else None
        except LookupError:
            return None


def looks_binary(body: bytes) -> bool:
    """NUL bytes or many control bytes in the first 4 kB: not text, whatever the label says."""
    head = body[:4096]
    if not head:
        return False
    if b"\x00" in head and not head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return True
    return len(head) - len(head.translate(None, _CTRL_BYTES)) > 0.05 * len(head)


def _decode(body: bytes, enc: str, truncated: bool, errors: str = "strict") -> str:
    """``body.decode(enc, errors)``; a body cut at the size limit may end inside a multi-byte sequence,
    which is dropped instead of failing the strict decoding (an incremental decoder, not final)."""
    if truncated:
        return codecs.getincrementaldecoder(enc)(errors).decode(body, final=False)
    return body.decode(enc, errors)


def decode_html(body: bytes, http_charset: str | None, truncated: bool = False) -> tuple[str | None, str, str]:
    """``(text, codec, how)``: BOM, then the HTTP charset, the ``<meta>`` charset, strict UTF-8, a detected one.

    Each is tried strictly, so a wrong declaration falls through to the next. Strict UTF-8
    comes before detection: bytes that decode as UTF-8 are UTF-8 in practice, while uchardet
    looks at a prefix and calls a page cp1252 when its first non-ASCII bytes come late
    (``how`` is ``utf8``). When none decodes, UTF-8 with replacement characters is used unless
    they exceed 1% (text None). ``truncated``: the body was cut at the size limit, so an
    incomplete character at its very end is dropped rather than failing a codec.
    """
    for bom, enc in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
        if body.startswith(bom):
            return _decode(body[len(bom) :], enc, truncated, "replace"), enc, "bom"
    m = _META_CHARSET.search(body[:4096])
    tried: set[str] = set()
    for label, how in ((http_charset, "http"), (m.group(1).decode("ascii", "replace") if m else None, "meta")):
        enc = _codec(label)
        if enc and enc not in tried:
            tried.add(enc)
            try:
                return _decode(body, enc, truncated), enc, how
            except (UnicodeDecodeError, LookupError):
                continue
    if "utf-8" not in tried:
        tried.add("utf-8")
        try:
            return _decode(body, "utf-8", truncated), "utf-8", "utf8"
        except UnicodeDecodeError:
            pass
    from resiliparse.parse.encoding import detect_encoding

    detected = _codec(detect_encoding(body))
    if detected and detected not in tried:
        try:
            return _decode(body, detected, truncated), detected, "detected"
        except (UnicodeDecodeError, LookupError):
            pass
    text = _decode(body, "utf-8", truncated, "replace")
    if text.count("\ufffd") > 0.01 * max(1, len(text)):
        return None, "utf-8", "failed"
    return text, "utf-8", "replaced"


# --------------------------------------------------------------------------- HTTP responses: headers, transfer and content codings


def parse_http_head(data: bytes, whole: bool = False) -> tuple[int, dict[bytes, bytes], int, bool] | None:
    """``(status, headers, size, lf_only)`` of the HTTP response header block at the start of ``data``.

    Lines may end in CRLF or a bare LF (ClueWeb09 and other old crawls); header names are
    lower-cased and the first of a repeated header is kept; ``size`` counts the blank line.
    ``whole``: ``data`` is the entire block, so a header block without a blank line ends there.
    None when there is no status line, or no end of the headers within ``data``.
    """
    m = _HTTP_END.search(data)
    if m is None:
        if not whole:
            return None
        block, size = data, len(data)
    else:
        block, size = data[: m.start()], m.end()
    status = _HTTP_STATUS.match(block)
    if status is None:
        return None
    lines = block.count(b"\n")
    lf_only = block.count(b"\r\n") != lines or (m is not None and m.group(0) != b"\r\n\r\n")
    if b"\n " in block or b"\n\t" in block:  # obsolete folded continuation lines: line by line
        headers: dict[bytes, bytes] = {}
        name = b""
        for line in block.split(b"\n")[1:]:
            if line[:1] in (b" ", b"\t"):
                if name in headers:
                    headers[name] += b" " + line.strip()
                continue
            key, sep, value = line.partition(b":")
            if sep:
                name = key.strip().lower()
                if name not in headers:
                    headers[name] = value.strip()
    else:  # one regex pass; reversed, so that the first of a repeated header wins
        headers = {k.strip().lower(): v.strip() for k, v in reversed(_HTTP_FIELD.findall(block, status.end()))}
    return int(status.group(1)), headers, size, lf_only


def http_codings(headers: dict[bytes, bytes]) -> list[str]:
    """The content and transfer codings of a response, in the order they were applied (``identity`` left out)."""
    out = []
    for name in (b"content-encoding", b"transfer-encoding"):
        value = headers.get(name)
        if value:
            out += [c for c in (p.strip().lower().decode("latin-1") for p in value.split(b",")) if c and c != "identity"]
    return out


def dechunk(data: bytes) -> tuple[bytes, str]:
    """The payload of a ``Transfer-Encoding: chunked`` body, and ``ok``, ``partial`` or ``ignored``.

    ``partial``: a malformed chunk-size line, a cut chunk or no final zero-size chunk: what
    decoded before is kept. ``ignored``: the body does not start with a chunk-size line (a
    recorder stored it de-chunked but kept the header): it is returned as it is.
    """
    out: list[bytes] = []
    pos, n = 0, len(data)
    while pos < n:
        m = _CHUNK_SIZE.match(data, pos)
        if m is None:
            return (b"".join(out), "partial") if out else (data, "ignored")
        size = int(m.group(1), 16)
        pos = m.end()
        if size == 0:
            return b"".join(out), "ok"  # trailers after the last chunk are not payload
        out.append(data[pos : pos + size])
        pos += size
        if pos > n:
            break
        if data.startswith(b"\r\n", pos):
            pos += 2
        elif data.startswith(b"\n", pos):
            pos += 1
    return b"".join(out), "partial"


def _looks_like_markup(data: bytes) -> bool:
    return data.lstrip()[:1] == b"<"


class _Output:
    """Decompressed output: the first ``keep`` + 1 bytes kept, the rest only counted; ``over`` past ``cap``."""

    def __init__(self, cap: int, keep: int) -> None:
        self.cap, self.keep, self.total = cap, keep, 0
        self.pieces: list[bytes] = []

    def add(self, piece: bytes) -> bool:
        """Add a piece; True when the total went past ``cap``."""
        room = self.keep + 1 - min(self.total, self.keep + 1)
        if room and piece:
            self.pieces.append(piece if len(piece) <= room else piece[:room])
        self.total += len(piece)
        return self.total > self.cap

    def want(self) -> int:
        return min(_STEP, self.cap + 1 - self.total)

    def result(self, status: str) -> tuple[bytes, str]:
        if status == "partial" and not self.total:
            status = "bad"
        return b"".join(self.pieces), status


def _inflate(data: bytes, wbits: int, out: _Output) -> tuple[bytes, str]:
    """Inflate a zlib/gzip/raw deflate stream (``wbits``): ``(output, ok|partial|over|bad)``."""
    d = zlib.decompressobj(wbits)
    buf = data
    while True:
        want = out.want()
        try:
            piece = d.decompress(buf, want)
        except zlib.error:
            return out.result("partial")
        if out.add(piece):
            return out.result("over")
        if d.eof:
            rest = d.unused_data
            if rest[:2] == b"\x1f\x8b" and wbits > 15:  # gzip members one after another
                d, buf = zlib.decompressobj(wbits), rest
                continue
            return out.result("ok")
        buf = d.unconsumed_tail
        if not buf and len(piece) < want:  # all input taken, the stream not finished: cut short
            return out.result("partial")


def _unbrotli(data: bytes, out: _Output) -> tuple[bytes, str]:
    try:
        import brotli
    except ImportError:
        return data, "unsupported"
    d = brotli.Decompressor()
    try:
        piece = d.process(data, output_buffer_limit=_STEP)
        while True:
            if out.add(piece):
                return out.result("over")
            if d.is_finished():
                return out.result("ok")
            if d.can_accept_more_data():  # all input taken, the stream not finished
                return out.result("partial")
            piece = d.process(b"", output_buffer_limit=_STEP)
    except TypeError:  # a brotli without output_buffer_limit cannot be bounded
        return data, "unsupported"
    except brotli.error:
        return out.result("partial")


def _unzstd(data: bytes, out: _Output) -> tuple[bytes, str]:
    import zstandard

    try:
        with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True) as r:
            while True:
                piece = r.read(out.want())
                if not piece:
                    return out.result("ok")
                if out.add(piece):
                    return out.result("over")
    except zstandard.ZstdError:
        return out.result("partial")


def decode_payload(body: bytes, codings: list[str], cap: int, keep: int | None = None) -> tuple[bytes, str, list[str]]:
    """Undo the transfer and content codings of a stored HTTP body: ``(payload, status, undone)``.

    ``codings`` as :func:`http_codings` gives them (applied first to last; undone last to
    first). Decoded output is bounded: past ``cap`` bytes it stops (status ``over``), and of
    the last layer only the first ``keep`` + 1 bytes are kept (the rest is inflated to be
    counted, not kept). Status: ``ok``; ``partial`` (a malformed or cut stream: what decoded
    is kept); ``bad`` (nothing decoded); ``unsupported`` (a coding that cannot be undone
    here). A body that is not in the declared coding (it starts with markup, or lacks the gzip
    magic number) is taken as it is: recorders that store payloads decoded do not always drop
    the header (``ignored``).
    """
    status, undone = "ok", []
    layers = [c for c in codings if c != "identity"]
    for k, coding in enumerate(reversed(layers)):
        out = _Output(cap, keep if keep is not None and k == len(layers) - 1 else cap)
        if coding == "chunked":
            body, st = dechunk(body)
        elif coding in ("gzip", "x-gzip"):
            st = "ignored" if body[:2] != b"\x1f\x8b" and _looks_like_markup(body) else None
            if st is None:
                body, st = _inflate(body, 47, out)  # 47: gzip, or zlib from a server that mislabels deflate
        elif coding == "deflate":
            if len(body) >= 2 and body[0] & 0x0F == 8 and (body[0] << 8 | body[1]) % 31 == 0:
                body, st = _inflate(body, 15, out)  # RFC 9110 deflate: a zlib stream
            elif _looks_like_markup(body):
                st = "ignored"
            else:
                body, st = _inflate(body, -15, out)  # what many servers send instead: raw deflate
        elif coding == "br":  # brotli has no magic number
            st = "ignored" if _looks_like_markup(body) else None
            if st is None:
                body, st = _unbrotli(body, out)
        elif coding in ("zstd", "x-zstd"):
            st = "ignored" if body[:4] != b"\x28\xb5\x2f\xfd" and _looks_like_markup(body) else None
            if st is None:
                body, st = _unzstd(body, out)
        else:
            return body, "unsupported", undone
        if st in ("over", "bad", "unsupported"):
            return body, st, undone
        if st != "ignored":
            undone.append(coding)
        if st == "partial" or (st == "ignored" and status == "ok"):
            status = st  # partial outranks ignored
    return body, status, undone


# --------------------------------------------------------------------------- reading WARC and ARC files


@dataclass
class RawRecord:
    """What the reader keeps of one WARC record (the body only for candidate documents)."""

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
    decoded: str | None = None  # the codings undone, e.g. "chunked,gzip"
    warc_truncated: str | None = None  # the WARC-Truncated header (the crawler cut the payload)


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


def _member_length_ok(size: int, head: bytes) -> bool:
    """Whether a decompressed record is as long as its WARC Content-Length says (headers + body + CRLFCRLF)."""
    end = head.find(b"\r\n\r\n")
    m = re.search(rb"\r\nContent-Length:\s*(\d+)", head[: end + 2], re.I) if end >= 0 else None
    return bool(m) and end + 4 + int(m.group(1)) + 4 == size


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


def _next_plain_record(fh: Any, start: int, file_size: int | float) -> int | None:
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


class WarcReader:
    """Records of one WARC (or ARC) file, confirmed intact, with damage counted and named in warnings.

    ``max_body``: candidate bodies are cut there (``truncated_html``); ``max_record``: a
    payload larger than this, stored or decoded, is not read (``too_large``).
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
        want = payload if codings else min(payload, self.max_body)  # a coded body is needed whole to be undone
        body = head[size : size + want]
        if len(body) < want:
            body += read(want - len(body))
        if len(body) < want:
            raw.body, raw.damaged = body, "short"
            return
        if codings:
            limit = min(self.max_record, self.member_cap)
            body, st, undone = decode_payload(body, codings, limit, keep=self.max_body)
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
        if len(body) > self.max_body or (not codings and payload > self.max_body):
            body = body[: self.max_body]
            raw.truncated = True
            self._count("truncated_html")
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


# --------------------------------------------------------------------------- the stage


def find_warc_files(inputs: list[str]) -> list[Path]:
    """WARC and ARC files under the given directories (recursive), files or globs, in a stable order (see :func:`warc_inputs`)."""
    return warc_inputs(inputs).files  # type: ignore[return-value]


_ARCHIVE_LIKE = re.compile(r"\.w?arc(\.|$)|\.warc", re.I)


def warc_inputs(inputs: list[str]) -> Inputs:
    """WARC and ARC files under the given directories (recursive), files or globs, in a stable order, and their fingerprint.

    Files and directories whose name starts with ``.`` or ``_`` (partial downloads,
    manifests) are skipped; other files under a directory that look like archives but are
    not read (``x.warc.zst``, ``x.arc.bz2``) are named in a warning.
    """
    out: list[Path] = []
    prints: list[str] = []
    locations = []
    for raw in inputs:
        p = as_path(raw)
        if p.is_dir():
            found, skipped = [], []
            for f in sorted(p.rglob("*")):
                if any(part.startswith((".", "_")) for part in f.relative_to(p).parts) or not f.is_file():
                    continue
                if f.name.endswith(ARCHIVE_SUFFIXES):
                    found.append(f)
                elif _ARCHIVE_LIKE.search(f.name):
                    skipped.append(f.relative_to(p).as_posix())
            if skipped:
                log.warning("extract: %s: %d file(s) skipped, not %s: %s%s", p, len(skipped), "/".join(ARCHIVE_SUFFIXES),
                            ", ".join(skipped[:5]), ", ..." if len(skipped) > 5 else "")  # fmt: skip
            if not found:
                raise CurateError(f"{p}: no WARC or ARC files ({', '.join(ARCHIVE_SUFFIXES)}) under this directory")
            root = p
        elif p.is_file():
            if not p.name.endswith(ARCHIVE_SUFFIXES):
                raise CurateError(f"{p}: not a WARC or ARC file (expected {', '.join(ARCHIVE_SUFFIXES)})")
            found, root = [p], p.parent
        elif any(ch in raw for ch in "*?["):
            found = [f for f in glob_paths(raw) if f.name.endswith(ARCHIVE_SUFFIXES) and f.is_file()]
            if not found:
                raise CurateError(f"{raw}: no WARC or ARC files match")
            root = None
        else:
            raise CurateError(f"{raw}: no such file or directory")
        out.extend(found)
        prints.append(files_fingerprint(found, root))
        locations.append(p if root is not None else found[0].parent)
    seen: set[Path] = set()
    unique = []
    for f in out:
        r = f.resolve()
        if r not in seen:
            seen.add(r)
            unique.append(f)
    return Inputs([input_name(i) for i in inputs], unique, prints, locations)


def source_for(path: Path, override: str | None = None) -> str:
    """``cc/<snapshot>`` from the last CC-MAIN-YYYY-WW in the path, or ``override``."""
    if override:
        return override
    found = SNAPSHOT_IN_PATH.findall(path.as_posix())
    if not found:
        raise CurateError(f"{path}: no CC-MAIN-YYYY-WW snapshot name in the path; name the source with --source")
    # crawl-data/CC-MAIN-2020-50/... : the directory names the snapshot (file names hold timestamps)
    return f"cc/{found[0]}"


def warc_label(path: Path) -> str:
    """The file's path from ``crawl-data/`` on (as CommonCrawl lists it), else its name."""
    parts = path.as_posix().split("/")
    return "/".join(parts[parts.index("crawl-data") :]) if "crawl-data" in parts else path.name


@dataclass
class ExtractStage(Stage):
    """Main-content text of the HTML pages in WARC and ARC files (source = cc/<snapshot>).

    Keeps `response` records with HTTP 200 and an HTML content type, undoes their transfer
    and content codings (chunked; gzip, deflate, br, zstd), decodes them with the declared
    charset, else as UTF-8 if they are valid UTF-8, else a detected one, extracts the main
    content, repairs Unicode, and writes one shard per file with url, id (the
    WARC-Record-ID; ARC records: file@offset) and meta (WARC date, content type, charset).
    Files may be gzipped record by record or as a whole; HTTP headers may end lines in LF
    only. A page longer than --max-html-bytes is cut there and extracted (truncated_html);
    one larger than --max-record-bytes is skipped (too_large). A truncated or corrupt file
    keeps what could be read and is named in a warning. A run in which every page fails to
    extract (extractor_error, ...) exits 1 instead of writing an empty output.

    \b
    meta may also hold: html_truncated (the cut), http_decoded (codings
    undone), warc_truncated (WARC-Truncated), warc_offset_uncompressed.

    \b
    Reasons a response is not a document:
      not_200, not_html, too_large, binary, empty   what it is
      bad_http              no HTTP status line / header block
      unsupported_encoding  a Content-Encoding that cannot be undone here
      bad_encoding          a compressed body of which nothing decodes
      decompression_bomb    a body or gzip member inflating past the limits
      truncated, bad_length, corrupt   a damaged file
      decode_error, timeout, extractor_error, extractor_crash, record_error
                            failures (the run fails when they are all)

    \b
    Counters (in _SUCCESS):
      truncated_html        pages cut at --max-html-bytes (kept)
      http_decoded          codings undone, per coding (chunked, gzip, ...)
      http_decode_partial   malformed or cut chunked/compressed bodies:
                            what decoded was kept
      http_encoding_ignored bodies stored decoded under a coding header
      lf_http_headers       HTTP header blocks with bare-LF line ends
      charset               how pages were decoded (bom, http, meta, utf8,
                            detected, replaced, failed)
      whole_gzip_files, arc_files   files read as one gzip stream / as ARC
      warc_truncated        records the crawler cut (WARC-Truncated)
      truncated, corrupt_gzip, bad_warc_header, bad_arc_header, resynced,
      skipped_bytes, unreadable   damage found in files

    \b
    Example:
      curate extract --in data/cc --out out/cc_extract
      curate extract --in 'data/cc/**/*.warc.gz' --extractor trafilatura --out out/cc_traf
    """

    name: ClassVar[str] = "extract"
    kind: ClassVar[str] = "source"
    required_columns: ClassVar[tuple[str, ...]] = ()
    options: ClassVar[tuple[str, ...]] = ("inputs", "out", "workers", "overwrite", "keep_rejected", "executor", "ray_address")
    option_help: ClassVar[dict[str, str]] = {
        "inputs": "Directory (searched recursively), .warc(.gz) or .arc(.gz) file, or glob (repeatable).",
        "out": "Output dataset directory (one shard per WARC file).",
        "keep_rejected": "Also write skipped records to OUT/_rejected/ with a reason (text empty).",
    }
    error_reasons: ClassVar[frozenset[str]] = frozenset({"extractor_error", "extractor_crash", "record_error", "decode_error", "timeout"})
    extractor: str = param(
        "fast",
        "Main-content extractor: fast (resiliparse with a boilerplate pass and a trafilatura fallback; "
        "the best main-content F1 here), resiliparse (fastest), trafilatura, justext (MT-NLG's).",
        choices=EXTRACTORS,
    )
    source: str | None = param(None, "The documents' source [default: cc/<snapshot>, the CC-MAIN-YYYY-WW part of each file's path].",
                               metavar="NAME")  # fmt: skip
    max_html_bytes: int = param(1_000_000, "Longer HTML bodies are cut here and extracted (counted: truncated_html).", min=1)
    max_record_bytes: int = param(DEFAULT_MAX_RECORD_BYTES, "Records whose HTTP payload, stored or decoded, is larger are "
                                  "skipped (too_large): what bounds memory.", min=1)  # fmt: skip
    record_timeout: float = param(5.0, "Seconds one record's extraction may take (timeout); 0: no limit, extract in-process.", min=0.0)
    min_chars: int = param(1, "Documents with less extracted text are rejected (empty).", min=1)

    def __post_init__(self) -> None:
        extractor_function(self.extractor)

    def params(self) -> dict[str, Any]:
        return {
            "extractor": self.extractor,
            "max_html_bytes": self.max_html_bytes,
            "max_record_bytes": self.max_record_bytes,
            "record_timeout": self.record_timeout,
            "min_chars": self.min_chars,
            "source": self.source,
        }

    def inputs(self, common: Common) -> Inputs:
        found = warc_inputs(common.inputs)
        for f in found.files:
            source_for(f, self.source)  # fail early, naming the file, when a snapshot cannot be told
        return found

    def run(self, ctx: Context) -> dict[str, Any]:
        return ctx.file_pass(self.read, BASE_SCHEMA, labels=[f.name for f in ctx.files])

    def _extract_many(self, htmls: list[str]) -> list[str | BaseException]:
        """Each page's text or the exception standing for its failure (a CurateError is raised)."""
        if self.record_timeout > 0:
            return sandbox(self.extractor).extract_many(htmls, self.record_timeout)
        fn = extractor_function(self.extractor)
        out: list[str | BaseException] = []
        for html in htmls:
            try:
                out.append(fn(html))
            except CurateError:
                raise
            except Exception as exc:  # noqa: BLE001 - counted per page by _finish
                out.append(exc)
        return out

    def read(self, path: Path) -> Iterator[FileBatch]:
        from curate.stages.clean import CleanStage

        clean = CleanStage()
        source = source_for(path, self.source)
        label = warc_label(path)
        counters: dict[str, Any] = {}  # the whole file's: reported with the last batch
        out = _Batch()
        pending: list[tuple[RawRecord, dict[str, Any], str | None, str | None]] = []  # (record, meta, reason, html)
        pending_chars = 0
        seen_ids: set[str] = set()

        def batch(final: bool) -> FileBatch:
            b = FileBatch(
                pa.Table.from_pylist(out.kept, schema=BASE_SCHEMA),
                pa.Table.from_pylist(out.rejected, schema=_REJECTED_SCHEMA),
                counters if final else {},
                docs_in=out.docs_in,
                bytes_in=out.html_bytes,
                source=source,
            )
            out.__init__()
            return b

        def flush() -> Iterator[FileBatch]:
            """Extract the pending pages as one group, then finish their records in order."""
            extracted = iter(self._extract_many([html for _, _, _, html in pending if html is not None]))
            for raw, meta, reason, html in pending:
                text = ""
                if html is not None:
                    try:
                        text, reason = self._finish(next(extracted), raw, meta, clean, counters)
                    except CurateError:
                        raise
                    except Exception as exc:  # noqa: BLE001 - one record from a stranger must never stop the file
                        text, reason = "", self._record_error(label, raw, exc, counters)
                out.add(raw, meta, reason, text, source, label, seen_ids, counters)
                if len(out.kept) + len(out.rejected) >= BATCH_RECORDS:
                    yield batch(final=False)
            pending.clear()

        for raw in WarcReader(path, self.max_html_bytes, counters, self.max_record_bytes):
            if raw.rtype != "response":
                continue
            meta: dict[str, Any] = {"warc_file": label, "warc_offset": raw.offset, "warc_date": raw.date, "content_type": raw.content_type}
            if raw.uncompressed:
                meta["warc_offset_uncompressed"] = True  # inside a gzip member (a file gzipped as a whole)
            if raw.decoded:
                meta["http_decoded"] = raw.decoded
            if raw.truncated:
                meta["html_truncated"] = self.max_html_bytes
            if raw.warc_truncated:
                meta["warc_truncated"] = raw.warc_truncated
            reason = raw.damaged or raw.reason
            html = None
            if reason is None:
                try:
                    html, reason = self._prepare(raw, meta, counters)
                except CurateError:
                    raise
                except Exception as exc:  # noqa: BLE001 - one record from a stranger must never stop the file
                    reason = self._record_error(label, raw, exc, counters)
            raw.body = None  # decoded into html (or not needed): not kept while the group waits
            pending.append((raw, meta, reason, html))
            pending_chars += len(html) if html is not None else 0
            if len(pending) >= GROUP_RECORDS or pending_chars >= GROUP_CHARS:
                yield from flush()
                pending_chars = 0
        yield from flush()
        yield batch(final=True)

    @staticmethod
    def _record_error(label: str, raw: RawRecord, exc: Exception, counters: dict[str, Any]) -> str:
        log.warning("extract: %s: the record #%d at byte %d failed (%s: %s), skipped (record_error)", label, raw.index,
                    raw.offset, type(exc).__name__, exc)  # fmt: skip
        first_error(counters, "record_error", exc)
        return "record_error"

    def _prepare(self, raw: RawRecord, meta: dict[str, Any], counters: dict[str, Any]) -> tuple[str | None, str | None]:
        """The decoded HTML of a candidate record, or ``(None, reason)``."""
        body = raw.body or b""
        if not body.strip():
            return None, "empty"
        if looks_binary(body):
            return None, "binary"
        html, enc, how = decode_html(body, raw.charset, raw.truncated)
        cs = counters.setdefault("charset", {})
        cs[how] = cs.get(how, 0) + 1
        if html is None:
            return None, "decode_error"
        meta["charset"] = enc
        return html, None

    def _finish(
        self, extracted: str | BaseException, raw: RawRecord, meta: dict[str, Any], clean: Any, counters: dict[str, Any]
    ) -> tuple[str, str | None]:
        """The cleaned main text of an extracted page, or ``("", reason)``."""
        if isinstance(extracted, ExtractTimeout):
            log.warning("extract: %s: %s took over %.1f s, skipped (timeout)", meta["warc_file"], raw.url, self.record_timeout)
            return "", "timeout"
        if isinstance(extracted, ExtractCrash):
            log.warning("extract: %s: %s crashed the extractor (%s), skipped", meta["warc_file"], raw.url, extracted)
            first_error(counters, "extractor_crash", extracted)
            return "", "extractor_crash"
        if isinstance(extracted, BaseException):
            log.debug("extract: %s: %s: %s", meta["warc_file"], raw.url, extracted)
            first_error(counters, "extractor_error", extracted)
            return "", "extractor_error"
        text, fixed = clean.clean_text(extracted or "")
        if fixed:
            counters["ftfy_fixed"] = counters.get("ftfy_fixed", 0) + 1
        if len(text) < self.min_chars:
            return "", "empty"
        return text, None


class _Batch:
    """The documents and rejected records of one output batch, and what went in."""

    def __init__(self) -> None:
        self.kept: list[dict[str, Any]] = []
        self.rejected: list[dict[str, Any]] = []
        self.docs_in = self.html_bytes = 0

    def add(self, raw: RawRecord, meta: dict[str, Any], reason: str | None, text: str, source: str, label: str,
            seen_ids: set[str], counters: dict[str, Any]) -> None:  # fmt: skip
        self.docs_in += 1
        self.html_bytes += raw.length
        if reason is not None:
            meta.update(status=raw.status, length=raw.length)
        rid = raw.record_id or f"{label}@{raw.offset}"
        if rid in seen_ids:  # a WARC file from elsewhere may repeat a record id: ids must stay unique
            counters["duplicate_record_id"] = counters.get("duplicate_record_id", 0) + 1
            rid = f"{rid}@{raw.offset}"
        seen_ids.add(rid)
        doc = {"id": rid, "text": text, "source": source, "url": raw.url, "meta": json.dumps(meta, ensure_ascii=False)}
        if reason is None:
            self.kept.append(doc)
        else:
            self.rejected.append({**doc, "reason": reason})
