"""HTTP responses as crawlers store them: the header block, and the transfer and content codings of the body.

Lines of the header block may end in CRLF or, as in ClueWeb09, a bare LF. Codings are undone
last to first (``chunked``; ``gzip``, ``deflate``, ``br`` when the brotli module is there,
``zstd``): wget, Heritrix, Webrecorder and browsertrix store bodies as sent, CommonCrawl
decoded, and some recorders decode but keep the header. Decompression runs in 1 MB steps,
so memory stays bounded whatever the ratio.
"""

from __future__ import annotations

import re
import zlib

_HTTP_END = re.compile(rb"\r?\n\r?\n")
_HTTP_STATUS = re.compile(rb"[ \t]*HTTP/\d+(?:\.\d+)?[ \t]+(\d{3})(?!\d)", re.I)
_HTTP_FIELD = re.compile(rb"\n([^:\r\n]+):([^\r\n]*)")
_CHUNK_SIZE = re.compile(rb"[ \t]*([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?\r?\n")
_STEP = 1 << 20  # decompressed bytes per step: memory stays bounded whatever the ratio


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


_HEAD_BULK = re.compile(rb"<(script|style)\b|<!--")
_BODY_START = re.compile(rb"<body[\s>/]")
_HEAD_END = re.compile(rb"</head\s*>")


def _drop_bulk(head: bytes, low: bytes, tags: tuple[bytes, ...]) -> bytes:
    """``head`` without its comments and the elements named in ``tags`` (linear: one search
    for each element's end; an element left open is kept to the end, as it is)."""
    out, pos = [], 0
    for m in _HEAD_BULK.finditer(low):
        if m.start() < pos:
            continue  # inside an element already dropped
        tag = m.group(1)
        if tag is None:
            end = low.find(b"-->", m.end())
            end = end + 3 if end >= 0 else -1
        elif tag in tags:
            end = low.find(b"</" + tag, m.end())
            end = low.find(b">", end) + 1 if end >= 0 else -1
        else:
            continue
        if end <= 0:
            break
        out.append(head[pos : m.start()])
        pos = end
    out.append(head[pos:])
    return b"".join(out)


def cut_html(body: bytes, limit: int) -> tuple[bytes, str | None]:
    """An HTML body longer than ``limit`` bytes made to fit: ``(html, how)``.

    What comes before ``<body>`` (or ``</head>``) first loses its comments and inline scripts,
    then, if it still leaves less than half of ``limit`` to the body, its styles: a page with 1 MB
    of inline scripts in its ``<head>`` keeps its article (issue 26). ``how``: ``None`` (it fits
    now, nothing cut), ``cut`` (cut at ``limit``), ``cut_before_body`` (the cut falls before the
    end of the ``<body>`` tag: no text is left).
    """
    low = body.lower()
    m = _BODY_START.search(low) or _HEAD_END.search(low)
    split = m.start() if m else len(body)
    head = body[:split]
    for tags in ((b"script",), (b"script", b"style")):
        head = _drop_bulk(head, head.lower(), tags)
        if len(head) < limit // 2:
            break
    out = head + body[split:]
    if len(out) <= limit:
        return out, None
    tag_end = low.find(b">", split) + 1 - split if m is not None and m.group().startswith(b"<body") else 0
    return out[:limit], "cut_before_body" if m is not None and len(head) + max(tag_end, 1) > limit else "cut"
