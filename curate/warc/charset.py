"""HTML bytes to text: the charset of a page, tried strictly in turn, and a test for binary bodies.

The order (:func:`decode_html`): a byte-order mark, the HTTP ``charset``, a ``<meta>``
charset, strict UTF-8, then uchardet's guess (resiliparse). Each is tried strictly, so a wrong
declaration falls through to the next; labels follow WHATWG (``latin1`` is windows-1252).
"""

from __future__ import annotations

import codecs
import re

_META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([A-Za-z0-9_:.\-]{1,40})""", re.I)
_CTRL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 12, 13, 27))
_CHARSET_LABEL = re.compile(r"[a-z0-9_.:\-]{1,40}")


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
