"""Writing WARC files: the one writer of the tests, ``sample_data/`` and the benchmarks.

WARC/1.0 or /1.1 records (warcinfo, request, response, metadata, or any other type), each its
own gzip member or plain, with the digests warcio writes (``WARC-Block-Digest``,
``WARC-Payload-Digest``: sha1, base32). Record ids and dates are the caller's, so the same
calls write the same bytes. The standard library only: a file written here is read back by
warcio, FastWARC and curate alike (``tests/test_warc_writer.py``).

Two ways to write a record:

- :meth:`WarcWriter.warcinfo`, :meth:`~WarcWriter.request`, :meth:`~WarcWriter.response` and
  :meth:`~WarcWriter.metadata` lay the header fields out as warcio 1.8's ``WARCWriter`` does
  for the same record (given ``WARC-Record-ID`` and ``WARC-Date``, then the caller's fields,
  ``WARC-Type``, ``WARC-Target-URI``, the digests, ``Content-Type``, ``Content-Length``) and
  compress at warcio's level 9: ``sample_data/build_cc.py`` writes warcio's bytes with them;
- :meth:`WarcWriter.write` takes the fields in the caller's order (CommonCrawl's, say), and
  computes those given as ``None``: ``Content-Length``, ``WARC-Block-Digest``,
  ``WARC-Payload-Digest``.

Reading is :mod:`curate.warc`'s business; nothing here reads.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import BinaryIO

#: the ``Content-Type`` of each record type, as warcio writes it
CONTENT_TYPES = {
    "warcinfo": "application/warc-fields",
    "request": "application/http; msgtype=request",
    "response": "application/http; msgtype=response",
    "revisit": "application/http; msgtype=response",
    "metadata": "application/warc-fields",
}
_NO_PAYLOAD_DIGEST = ("warcinfo", "revisit")  # as warcio: these records get a block digest only
Fields = Sequence[tuple[str, str | None]]


def sha1_digest(data: bytes) -> str:
    """``sha1:<base32>``, the digest form of ``WARC-Block-Digest`` and ``WARC-Payload-Digest``."""
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def record_id(name: str) -> str:
    """``<urn:uuid:...>``: a WARC-Record-ID derived from ``name`` (a uuid5), the same on every run."""
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, name)}>"


def http_head(start_line: str, headers: Iterable[tuple[str, str]] = ()) -> bytes:
    """An HTTP message head as a record block holds it: start line, one line per header, a blank line.

    Encoded as Latin-1 (HTTP's header charset); a character outside it becomes ``?``."""
    text = start_line + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    return text.encode("latin-1", "replace")


def warc_fields(fields: Mapping[str, object]) -> bytes:
    """An ``application/warc-fields`` block (a warcinfo's or a metadata record's): ``name: value`` lines."""
    return "".join(f"{k}: {v}\r\n" for k, v in fields.items()).encode("utf-8")


def record_bytes(version: str, fields: Fields, payload: bytes = b"", http: bytes = b"") -> bytes:
    """One uncompressed record: the version line, the header fields, the block (``http`` + ``payload``), two CRLFs.

    A field whose value is ``None`` is computed (``Content-Length``, ``WARC-Block-Digest``,
    ``WARC-Payload-Digest``); ``Content-Length`` is added last when not listed."""
    block = http + payload
    computed = {"content-length": lambda: str(len(block)), "warc-block-digest": lambda: sha1_digest(block),
                "warc-payload-digest": lambda: sha1_digest(payload)}  # fmt: skip
    lines = [version]
    for name, value in fields:
        if value is None:
            if name.lower() not in computed:
                raise ValueError(f"WARC field {name}: no value given and none to compute")
            value = computed[name.lower()]()
        lines.append(f"{name}: {value}")
    if not any(name.lower() == "content-length" for name, _ in fields):
        lines.append(f"Content-Length: {len(block)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + block + b"\r\n\r\n"


class WarcWriter:
    """Records into a binary file object, each its own gzip member (``gzip=False``: plain).

    ``version``: ``WARC/1.0`` or ``WARC/1.1``; ``level``: the gzip level (warcio's is 9).
    Every method returns the offset of the record it wrote (counted from the first write)."""

    def __init__(self, out: BinaryIO, *, version: str = "WARC/1.0", gzip: bool = True, level: int = 9) -> None:
        if version not in ("WARC/1.0", "WARC/1.1"):
            raise ValueError(f"WARC version {version!r}: WARC/1.0 or WARC/1.1")
        self.out = out
        self.version = version
        self.gzip = gzip
        self.level = level
        self.offset = 0  # bytes written so far

    def write(self, fields: Fields, payload: bytes = b"", *, http: bytes = b"") -> int:
        """One record with the header ``fields`` in the order given (``None``: computed, see :func:`record_bytes`)."""
        data = record_bytes(self.version, fields, payload, http)
        if self.gzip:
            co = zlib.compressobj(self.level, zlib.DEFLATED, 31)  # a gzip member, mtime 0, no file name
            data = co.compress(data) + co.flush()
        start = self.offset
        self.out.write(data)
        self.offset += len(data)
        return start

    def _warcio(self, rtype: str, uri: str | None, rid: str, date: str, fields: Fields, payload: bytes, http: bytes = b"") -> int:
        """A record with warcio's field order (what ``create_warc_record`` + ``write_record`` give)."""
        head: list[tuple[str, str | None]] = [("WARC-Record-ID", rid), ("WARC-Date", date), *fields, ("WARC-Type", rtype)]
        if uri:
            head.append(("WARC-Target-URI", uri))
        if rtype not in _NO_PAYLOAD_DIGEST:
            head.append(("WARC-Payload-Digest", None))
        head += [("WARC-Block-Digest", None), ("Content-Type", CONTENT_TYPES[rtype]), ("Content-Length", None)]
        return self.write(head, payload, http=http)

    def warcinfo(self, rid: str, date: str, info: Mapping[str, object], *, filename: str | None = None) -> int:
        """The file's warcinfo record: ``info`` as warc-fields (``filename``: its ``WARC-Filename``)."""
        return self._warcio("warcinfo", None, rid, date, [("WARC-Filename", filename)] if filename else [], warc_fields(info))

    def request(self, uri: str, rid: str, date: str, http: bytes, *, fields: Fields = ()) -> int:
        """An HTTP request (``http``: its head, see :func:`http_head`); ``fields``: more WARC fields, after id and date."""
        return self._warcio("request", uri, rid, date, fields, b"", http)

    def response(self, uri: str, rid: str, date: str, http: bytes, payload: bytes, *, fields: Fields = ()) -> int:
        """An HTTP response: the head ``http`` and the body ``payload`` as sent."""
        return self._warcio("response", uri, rid, date, fields, payload, http)

    def metadata(self, uri: str, rid: str, date: str, info: Mapping[str, object] | bytes, *, fields: Fields = ()) -> int:
        """A metadata record about ``uri``: ``info`` as warc-fields (or the block as bytes)."""
        return self._warcio("metadata", uri, rid, date, fields, info if isinstance(info, bytes) else warc_fields(info))
