"""HTML pages in WARC files to main-content text documents (the ``extract`` stage).

One WARC file becomes one output shard. Records are read with FastWARC; ``response``
records with HTTP 200 and an HTML content type are decoded (BOM, then the HTTP charset, a
``<meta>`` charset, then uchardet's guess; strict decoding, so a wrong declaration falls
through to the next), their main content is extracted (resiliparse by default, or
trafilatura, or jusText with the English stoplist), Unicode is repaired with the clean
stage's ``clean_text``, and the document gets ``source`` ``cc/<snapshot>``, the URL, the
WARC-Record-ID as ``id`` and the WARC date and content type in ``meta``.

Every other record is counted: non-``response`` records (requests, metadata) under
``counters.records``; responses that are not documents under a reason (``not_200``,
``not_html``, ``too_large``, ``binary``, ``decode_error``, ``bad_http``, ``empty``,
``timeout``, ``extractor_error``, ``extractor_crash``, ``record_error`` (anything else that
failed on one record), and for damaged files ``truncated``,
``bad_length``, ``corrupt``, ``decompression_bomb``).

Limits. A gzip member (one record) may inflate to ``CURATE_MAX_DECOMPRESSED_BYTES`` (4 GiB):
past that it is a ``decompression_bomb`` and the reader skips to the next member; a record
whose header declares more than that is ``too_large`` and not inflated at all. Memory is
bounded either way (decompression in 1 MB steps; bodies read up to ``max_html_bytes``).

Damaged files. FastWARC stops at the first gzip error or bad WARC header and ends silently
on a truncated file, so each read pass is checked: a record is confirmed when the next one
parses; at the end of a pass, the last record's own gzip member is decompressed to see
whether it is complete and as long as its Content-Length says. After an error the reader
resynchronises at the next gzip member that holds a WARC record, so one bad record costs
that record, not the rest of the file (CommonCrawl compresses every record separately).

Time limit. Extraction of one record runs in a helper process fed through a pipe; when it
overruns ``record_timeout`` the helper is killed and restarted and the record counted
under ``timeout``. A signal (SIGALRM) cannot do this: resiliparse extracts in native code
holding the GIL, and a page of 30,000 nested ``<div><span>`` took it 139 s here, during which
a Python signal handler never runs. The pipe costs a few tens of microseconds per record;
``record_timeout=0`` extracts in-process without a limit.
"""

from __future__ import annotations

import atexit
import codecs
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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa

from curate.dataset import Inputs, files_fingerprint, input_name
from curate.errors import CurateError
from curate.limits import max_decompressed_bytes
from curate.runtime import Common, Context, FileBatch, Stage, param
from curate.schema import BASE_SCHEMA, rejected_schema
from curate.stages.extractors import EXTRACTORS, extractor_function
from curate.storage import as_path, glob_paths, open_input

log = logging.getLogger("curate")

WARC_SUFFIXES = (".warc.gz", ".warc")
HTML_TYPES = ("text/html", "application/xhtml+xml")
SNAPSHOT_IN_PATH = re.compile(r"CC-MAIN-\d{4}-\d{2}")
BATCH_RECORDS = 512
_META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([A-Za-z0-9_:.\-]{1,40})""", re.I)
_SNIFF_HTML = re.compile(rb"^\s*(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body)\b", re.I | re.S)
_CTRL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 12, 13, 27))
_CHARSET_LABEL = re.compile(r"[a-z0-9_.:\-]{1,40}")
_REJECTED_SCHEMA = rejected_schema(BASE_SCHEMA)


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

    def _read_exactly(self, fd: int, n: int, deadline: float) -> bytes:
        chunks, left = [], n
        while left:
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise ExtractTimeout
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                raise ExtractTimeout
            data = os.read(fd, min(left, 1 << 20))
            if not data:
                raise ExtractCrash("the extraction helper exited")
            chunks.append(data)
            left -= len(data)
        return b"".join(chunks)

    def extract(self, html: str, timeout: float) -> str:
        proc = self.proc if self.proc is not None and self.proc.poll() is None else self._start()
        payload = html.encode("utf-8", "surrogatepass")
        deadline = time.monotonic() + timeout
        try:
            proc.stdin.write(struct.pack("<Q", len(payload)) + payload)  # type: ignore[union-attr]
            fd = proc.stdout.fileno()  # type: ignore[union-attr]
            head = self._read_exactly(fd, 9, deadline)
            status, n = head[:1], struct.unpack("<Q", head[1:])[0]
            body = self._read_exactly(fd, n, deadline + 5.0).decode("utf-8", "surrogatepass")
        except ExtractTimeout:
            self.close()
            self.restarts += 1
            raise
        except (BrokenPipeError, ExtractCrash, OSError) as exc:
            first = self.served == 0
            self.close()
            self.restarts += 1
            if first:
                raise CurateError(f"the {self.extractor} extraction helper did not start ({exc}); try --record-timeout 0") from exc
            raise ExtractCrash(str(exc)) from exc
        self.served += 1
        if status == b"1":
            raise RuntimeError(body)
        return body


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


def decode_html(body: bytes, http_charset: str | None) -> tuple[str | None, str, str]:
    """``(text, codec, how)``: BOM, then the HTTP charset, the ``<meta>`` charset, a detected one.

    Each is tried strictly, so a wrong declaration falls through to the next; when none
    decodes, UTF-8 with replacement characters is used unless they exceed 1% (text None).
    """
    for bom, enc in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
        if body.startswith(bom):
            return body[len(bom) :].decode(enc, "replace"), enc, "bom"
    m = _META_CHARSET.search(body[:4096])
    tried: set[str] = set()
    for label, how in ((http_charset, "http"), (m.group(1).decode("ascii", "replace") if m else None, "meta")):
        enc = _codec(label)
        if enc and enc not in tried:
            tried.add(enc)
            try:
                return body.decode(enc), enc, how
            except (UnicodeDecodeError, LookupError):
                continue
    from resiliparse.parse.encoding import detect_encoding

    detected = _codec(detect_encoding(body))
    for enc, how in ((detected, "detected"), ("utf-8", "detected")):
        if enc and enc not in tried:
            tried.add(enc)
            try:
                return body.decode(enc), enc, how
            except (UnicodeDecodeError, LookupError):
                continue
    text = body.decode("utf-8", "replace")
    if text.count("\ufffd") > 0.01 * max(1, len(text)):
        return None, "utf-8", "failed"
    return text, "utf-8", "replaced"


# --------------------------------------------------------------------------- reading WARC files


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
    length: int = 0  # declared payload length
    body: bytes | None = None
    reason: str | None = None  # why it is not a document (decided while reading)
    damaged: str | None = None  # short body / read error: truncated, bad_length or corrupt


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


def _next_member(fh: Any, start: int, file_size: int, limit: int | None = None) -> int | None:
    """Offset of the first complete gzip member at or after ``start`` that holds a WARC record (and is no bomb)."""
    pos = start
    while pos < file_size:
        fh.seek(pos)
        block = fh.read(1 << 20)
        if not block:
            return None
        i = block.find(b"\x1f\x8b\x08")
        while i >= 0:
            state, _, _, head = _member(fh, pos + i, limit)
            if state == "ok" and head.startswith(b"WARC/"):
                return pos + i
            i = block.find(b"\x1f\x8b\x08", i + 1)
        pos += max(1, len(block) - 2)
    return None


def _next_plain_record(fh: Any, start: int, file_size: int) -> int | None:
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
    """Records of one WARC file, confirmed intact, with damage counted and named in warnings."""

    def __init__(self, path: Path, max_body: int, counters: dict[str, Any]) -> None:
        self.path = path
        self.max_body = max_body
        self.member_cap = max_decompressed_bytes()  # the most one gzip member (one record) may inflate to
        self.counters = counters

    def _count(self, key: str, n: int = 1) -> None:
        self.counters[key] = self.counters.get(key, 0) + n

    def _read(self, rec: Any, raw: RawRecord) -> None:
        """Fill ``raw`` from ``rec``; the body is read only for candidate documents."""
        recs = self.counters.setdefault("records", {})
        recs[raw.rtype] = recs.get(raw.rtype, 0) + 1
        if raw.rtype != "response":
            return
        h = rec.headers
        raw.record_id = (h.get("WARC-Record-ID") or "").strip().strip("<>") or None
        raw.url = h.get("WARC-Target-URI")
        raw.date = h.get("WARC-Date")
        if h.get("WARC-Truncated"):
            self._count("warc_truncated")
        try:
            rec.parse_http()
            raw.status = rec.http_headers.status_code
            raw.content_type = rec.http_headers.get("Content-Type")
            raw.charset = rec.http_charset
        except Exception:  # noqa: BLE001 - a malformed HTTP header block is the record's problem
            raw.reason = "bad_http"
            return
        if raw.status is None:
            raw.reason = "bad_http"
            return
        raw.length = rec.content_length
        mime = (raw.content_type or "").split(";")[0].strip().lower()
        if raw.status != 200:
            raw.reason = "not_200"
        elif mime and mime not in HTML_TYPES:
            raw.reason = "not_html"
        elif raw.length > self.max_body:
            raw.reason = "too_large"
        if raw.reason:
            return
        raw.body = rec.reader.read(self.max_body + 1)
        if len(raw.body) < raw.length:
            raw.damaged = "short"
        elif len(raw.body) > self.max_body:
            raw.reason, raw.body = "too_large", None
        elif not mime:
            if _SNIFF_HTML.match(raw.body[:1024]):
                self._count("sniffed_html")
            else:
                raw.reason, raw.body = "not_html", None

    def __iter__(self) -> Iterator[RawRecord]:
        from fastwarc.warc import ArchiveIterator

        size = self.path.stat().st_size
        with open_input(self.path) as fh:  # a local file, or an fsspec file object (s3://...): fastwarc reads both
            gz = fh.read(2) == b"\x1f\x8b"
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
                        pending = RawRecord(offset=rec.stream_pos, rtype=str(getattr(rtype, "name", rtype)))
                        if gz and rec.content_length > self.member_cap:
                            # declared larger than a gzip member may inflate: fastwarc would inflate it all to
                            # skip it, so the reader jumps to the next member instead (too_large)
                            pending.reason, pending.length, oversize = "too_large", rec.content_length, True
                            recs = self.counters.setdefault("records", {})
                            recs[pending.rtype] = recs.get(pending.rtype, 0) + 1
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
            where = f"after the record at byte {last.offset:,}" if last is not None else f"at byte {start:,}"
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

    def _damaged(self, raw: RawRecord) -> None:
        what = {
            "truncated": "is cut off by the end of the file (truncated); kept the records before it",
            "bad_length": "has a Content-Length that does not match its data (bad_length)",
            "corrupt": "is in a corrupt gzip member (corrupt)",
            "decompression_bomb": f"is in a gzip member that inflates past {self.member_cap:,} bytes "
            "(decompression_bomb; CURATE_MAX_DECOMPRESSED_BYTES); skipped to the next record",
        }.get(raw.damaged or "", raw.damaged)
        log.warning("extract: %s: the %s record at byte %d %s", self.path, raw.rtype, raw.offset, what)


# --------------------------------------------------------------------------- the stage


def find_warc_files(inputs: list[str]) -> list[Path]:
    """WARC files under the given directories (recursive), files or globs, in a stable order (see :func:`warc_inputs`)."""
    return warc_inputs(inputs).files  # type: ignore[return-value]


def warc_inputs(inputs: list[str]) -> Inputs:
    """WARC files under the given directories (recursive), files or globs, in a stable order, and their fingerprint.

    Files and directories whose name starts with ``.`` or ``_`` (partial downloads,
    manifests) are skipped.
    """
    out: list[Path] = []
    prints: list[str] = []
    locations = []
    for raw in inputs:
        p = as_path(raw)
        if p.is_dir():
            found = sorted(
                f
                for f in p.rglob("*")
                if f.name.endswith(WARC_SUFFIXES)
                and f.is_file()
                and not any(part.startswith((".", "_")) for part in f.relative_to(p).parts)
            )
            if not found:
                raise CurateError(f"{p}: no WARC files ({', '.join(WARC_SUFFIXES)}) under this directory")
            root = p
        elif p.is_file():
            if not p.name.endswith(WARC_SUFFIXES):
                raise CurateError(f"{p}: not a WARC file (expected {' or '.join(WARC_SUFFIXES)})")
            found, root = [p], p.parent
        elif any(ch in raw for ch in "*?["):
            found = [f for f in glob_paths(raw) if f.name.endswith(WARC_SUFFIXES) and f.is_file()]
            if not found:
                raise CurateError(f"{raw}: no WARC files match")
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
    """Main-content text of the HTML pages in WARC files (source = cc/<snapshot>).

    Keeps `response` records with HTTP 200 and an HTML content type, decodes them with the
    declared or detected charset, extracts the main content, repairs Unicode, and writes
    one shard per WARC file with url, id (the WARC-Record-ID) and meta (WARC date, content
    type, charset). Other records are counted under a reason (not_200, not_html,
    too_large, binary, decode_error, empty, timeout, ...); a truncated or corrupt file keeps
    what could be read and is named in a warning. A run in which every page fails to
    extract (extractor_error, ...) exits 1 instead of writing an empty output.

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
        "inputs": "Directory (searched recursively), .warc.gz file or glob (repeatable).",
        "out": "Output dataset directory (one shard per WARC file).",
        "keep_rejected": "Also write skipped records to OUT/_rejected/ with a reason (text empty).",
    }
    error_reasons: ClassVar[frozenset[str]] = frozenset({"extractor_error", "extractor_crash", "record_error", "decode_error", "timeout"})
    extractor: str = param("resiliparse", "Main-content extractor.", choices=EXTRACTORS)
    source: str | None = param(None, "The documents' source [default: cc/<snapshot>, the CC-MAIN-YYYY-WW part of each file's path].",
                               metavar="NAME")  # fmt: skip
    max_html_bytes: int = param(1_000_000, "Records with a larger HTML body are skipped (too_large).", min=1)
    record_timeout: float = param(5.0, "Seconds one record's extraction may take (timeout); 0: no limit, extract in-process.", min=0.0)
    min_chars: int = param(1, "Documents with less extracted text are rejected (empty).", min=1)

    def __post_init__(self) -> None:
        extractor_function(self.extractor)

    def params(self) -> dict[str, Any]:
        return {
            "extractor": self.extractor,
            "max_html_bytes": self.max_html_bytes,
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

    def _extract(self, html: str) -> str:
        if self.record_timeout > 0:
            return sandbox(self.extractor).extract(html, self.record_timeout)
        return extractor_function(self.extractor)(html)

    def read(self, path: Path) -> Iterator[FileBatch]:
        from curate.stages.clean import CleanStage

        clean = CleanStage()
        source = source_for(path, self.source)
        label = warc_label(path)
        counters: dict[str, Any] = {}  # the whole file's: reported with the last batch
        kept: list[dict[str, Any]] = []
        rejected: list[dict[str, Any]] = []
        html_bytes = docs_in = 0

        def batch(final: bool) -> FileBatch:
            return FileBatch(
                pa.Table.from_pylist(kept, schema=BASE_SCHEMA),
                pa.Table.from_pylist(rejected, schema=_REJECTED_SCHEMA),
                counters if final else {},
                docs_in=docs_in,
                bytes_in=html_bytes,
                source=source,
            )

        seen_ids: set[str] = set()
        for raw in WarcReader(path, self.max_html_bytes, counters):
            if raw.rtype != "response":
                continue
            docs_in += 1
            html_bytes += raw.length
            meta: dict[str, Any] = {"warc_file": label, "warc_offset": raw.offset, "warc_date": raw.date, "content_type": raw.content_type}
            reason = raw.damaged or raw.reason
            text = ""
            if reason is None:
                try:
                    text, reason = self._document(raw, meta, clean, counters)
                except CurateError:
                    raise
                except Exception as exc:  # noqa: BLE001 - one record from a stranger must never stop the file
                    log.warning("extract: %s: the record at byte %d failed (%s: %s), skipped (record_error)", label, raw.offset,
                                type(exc).__name__, exc)  # fmt: skip
                    text, reason = "", "record_error"
                    first_error(counters, "record_error", exc)
            if reason is not None:
                meta.update(status=raw.status, length=raw.length)
            rid = raw.record_id or f"{label}@{raw.offset}"
            if rid in seen_ids:  # a WARC file from elsewhere may repeat a record id: ids must stay unique
                counters["duplicate_record_id"] = counters.get("duplicate_record_id", 0) + 1
                rid = f"{rid}@{raw.offset}"
            seen_ids.add(rid)
            doc = {
                "id": rid,
                "text": text,
                "source": source,
                "url": raw.url,
                "meta": json.dumps(meta, ensure_ascii=False),
            }
            if reason is None:
                kept.append(doc)
            else:
                rejected.append({**doc, "reason": reason})
            if len(kept) + len(rejected) >= BATCH_RECORDS:
                yield batch(final=False)
                kept, rejected, html_bytes, docs_in = [], [], 0, 0
        yield batch(final=True)

    def _document(self, raw: RawRecord, meta: dict[str, Any], clean: Any, counters: dict[str, Any]) -> tuple[str, str | None]:
        """The cleaned main text of a candidate record, or ``("", reason)``."""
        body = raw.body or b""
        if not body.strip():
            return "", "empty"
        if looks_binary(body):
            return "", "binary"
        html, enc, how = decode_html(body, raw.charset)
        cs = counters.setdefault("charset", {})
        cs[how] = cs.get(how, 0) + 1
        if html is None:
            return "", "decode_error"
        meta["charset"] = enc
        try:
            text = self._extract(html)
        except ExtractTimeout:
            log.warning("extract: %s: %s took over %.1f s, skipped (timeout)", meta["warc_file"], raw.url, self.record_timeout)
            return "", "timeout"
        except ExtractCrash as exc:
            log.warning("extract: %s: %s crashed the extractor (%s), skipped", meta["warc_file"], raw.url, exc)
            first_error(counters, "extractor_crash", exc)
            return "", "extractor_crash"
        except CurateError:
            raise
        except Exception as exc:  # noqa: BLE001 - one page must never stop the file
            log.debug("extract: %s: %s: %s", meta["warc_file"], raw.url, exc)
            first_error(counters, "extractor_error", exc)
            return "", "extractor_error"
        text, fixed = clean.clean_text(text or "")
        if fixed:
            counters["ftfy_fixed"] = counters.get("ftfy_fixed", 0) + 1
        if len(text) < self.min_chars:
            return "", "empty"
        return text, None
