"""curate.warc.writer: what it writes reads back the same with warcio, FastWARC and curate's reader,
and in warcio's layout it is warcio's bytes."""

from __future__ import annotations

import gzip
import io
import zlib
from pathlib import Path

import pytest
from fastwarc.warc import ArchiveIterator as FastIterator
from fastwarc.warc import WarcRecordType
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from curate.warc.records import WarcReader
from curate.warc.writer import WarcWriter, http_head, record_bytes, record_id, sha1_digest, warc_fields

DATE = "2021-01-15T10:00:00Z"
INFO = {"software": "curate tests", "isPartOf": "CC-MAIN-2021-04", "format": "WARC File Format 1.0"}
PAGES = [
    (
        "https://example.org/",
        "200 OK",
        [("Content-Type", "text/html; charset=utf-8")],
        "<html><body><p>Grüße aus Köln</p></body></html>".encode(),
    ),
    ("https://example.org/gone", "404 Not Found", [("Content-Type", "text/html"), ("Server", "nginx")], b"<html>gone</html>"),
    ("https://example.org/empty", "204 No Content", [], b""),
]
VERSIONS = ["WARC/1.0", "WARC/1.1"]


def write_sample(out: io.BytesIO | object, version: str = "WARC/1.0", gz: bool = True) -> list[dict]:
    """A warcinfo, then request, response and metadata per page; returns what each record should read back as."""
    w = WarcWriter(out, version=version, gzip=gz)
    info_id = record_id("info")
    expect = [
        {
            "type": "warcinfo",
            "id": info_id,
            "uri": None,
            "block": warc_fields(INFO),
            "offset": w.warcinfo(info_id, DATE, INFO, filename="x.warc.gz"),
        }
    ]
    for i, (url, status, headers, body) in enumerate(PAGES):
        req, resp, meta = record_id(f"{i}/request"), record_id(f"{i}/response"), record_id(f"{i}/metadata")
        req_head = http_head("GET / HTTP/1.1", [("Host", "example.org")])
        off = w.request(url, req, DATE, req_head, fields=[("WARC-Warcinfo-ID", info_id)])
        expect.append({"type": "request", "id": req, "uri": url, "block": req_head, "offset": off})
        off = w.response(url, resp, DATE, http_head(f"HTTP/1.1 {status}", headers), body, fields=[("WARC-Concurrent-To", req)])
        expect.append({"type": "response", "id": resp, "uri": url, "status": int(status[:3]), "payload": body, "offset": off})
        off = w.metadata(url, meta, DATE, {"fetchTimeMs": 100 + i}, fields=[("WARC-Concurrent-To", resp)])
        expect.append({"type": "metadata", "id": meta, "uri": url, "block": f"fetchTimeMs: {100 + i}\r\n".encode(), "offset": off})
    return expect


def sample_file(tmp_path: Path, version: str, gz: bool) -> tuple[Path, list[dict]]:
    path = tmp_path / ("x.warc.gz" if gz else "x.warc")
    with open(path, "wb") as fh:
        expect = write_sample(fh, version, gz)
    return path, expect


@pytest.mark.parametrize("gz", [True, False])
@pytest.mark.parametrize("version", VERSIONS)
def test_warcio_reads_back_every_record_and_digest(tmp_path, version, gz):
    path, expect = sample_file(tmp_path, version, gz)
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh, check_digests="raise")  # a wrong digest raises
        got = []
        for rec in it:
            body = rec.content_stream().read()
            got.append((rec, body, it.get_record_offset()))
    assert len(got) == len(expect)
    for (rec, body, offset), want in zip(got, expect, strict=True):
        h = rec.rec_headers
        assert (rec.rec_type, h.protocol, h.get_header("WARC-Record-ID"), h.get_header("WARC-Date")) == (
            want["type"],
            version,
            want["id"],
            DATE,
        )
        assert h.get_header("WARC-Target-URI") == want["uri"] and offset == want["offset"]
        if want["type"] == "response":
            assert rec.http_headers.get_statuscode() == str(want["status"]) and body == want["payload"]
            assert h.get_header("WARC-Payload-Digest") == sha1_digest(want["payload"])
        elif want["type"] == "request":
            assert rec.http_headers.protocol == "GET" and body == b""
        else:
            assert body == want["block"]
    assert got[0][0].rec_headers.get_header("WARC-Filename") == "x.warc.gz"


@pytest.mark.parametrize("gz", [True, False])
@pytest.mark.parametrize("version", VERSIONS)
def test_fastwarc_reads_back_every_record_and_digest(tmp_path, version, gz):
    path, expect = sample_file(tmp_path, version, gz)
    with open(path, "rb") as fh:
        got = []
        for rec in FastIterator(fh, record_types=WarcRecordType.any_type, parse_http=False):
            assert rec.verify_block_digest()  # of the whole block, before the HTTP head is parsed
            rec.parse_http()
            if rec.is_http:  # FastWARC checks a payload digest of HTTP records only (warcio checks the metadata's)
                assert rec.verify_payload_digest()
            status = rec.http_headers.status_code if rec.record_type == WarcRecordType.response else None
            got.append(
                (
                    str(rec.record_type),
                    rec.headers["WARC-Record-ID"],
                    rec.headers.get("WARC-Target-URI"),
                    rec.stream_pos,
                    status,
                    rec.reader.read(),
                )
            )
    assert len(got) == len(expect)
    for (rtype, rid, uri, pos, status, body), want in zip(got, expect, strict=True):
        assert (rtype, rid, uri, pos) == (want["type"], want["id"], want["uri"], want["offset"])
        if want["type"] == "response":
            assert (status, body) == (want["status"], want["payload"])
        elif want["type"] != "request":
            assert body == want["block"]


@pytest.mark.parametrize("gz", [True, False])
@pytest.mark.parametrize("version", VERSIONS)
def test_curate_reads_back_every_record(tmp_path, version, gz):
    path, expect = sample_file(tmp_path, version, gz)
    counters: dict = {}
    got = list(WarcReader(path, 1 << 20, counters))
    assert [(r.rtype, r.offset) for r in got] == [(e["type"], e["offset"]) for e in expect]
    responses = [(r.record_id, r.url, r.date, r.status, r.length) for r in got if r.rtype == "response"]
    assert responses == [(e["id"][1:-1], e["uri"], DATE, e["status"], len(e["payload"])) for e in expect if e["type"] == "response"]
    assert got[2].body == PAGES[0][3]  # the one page that is a document candidate (200, HTML): its body as sent
    assert [(r.reason, r.damaged) for r in got if r.rtype == "response"] == [(None, None), ("not_200", None), ("not_200", None)]
    assert counters == {"records": {"warcinfo": 1, "request": 3, "response": 3, "metadata": 3}}  # nothing damaged, nothing counted else


def warcio_sample(version: str, gz: bool) -> bytes:
    """The records of ``write_sample``, written by warcio 1.8.1 as sample_data/build_cc.py called it."""
    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=gz, warc_version=version)
    info_id = record_id("info")
    payload = warc_fields(INFO)
    w.write_record(w.create_warc_record("", "warcinfo", payload=io.BytesIO(payload), length=len(payload), warc_content_type="application/warc-fields",
                                        warc_headers_dict={"WARC-Record-ID": info_id, "WARC-Date": DATE, "WARC-Filename": "x.warc.gz"}))  # fmt: skip
    for i, (url, status, headers, body) in enumerate(PAGES):
        req, resp, meta = record_id(f"{i}/request"), record_id(f"{i}/response"), record_id(f"{i}/metadata")
        w.write_record(w.create_warc_record(url, "request", http_headers=StatusAndHeaders("GET / HTTP/1.1", [("Host", "example.org")], is_http_request=True),
                                            warc_headers_dict={"WARC-Record-ID": req, "WARC-Date": DATE, "WARC-Warcinfo-ID": info_id}))  # fmt: skip
        w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(body), length=None, http_headers=StatusAndHeaders(status, headers, protocol="HTTP/1.1"),
                                            warc_headers_dict={"WARC-Record-ID": resp, "WARC-Date": DATE, "WARC-Concurrent-To": req}))  # fmt: skip
        block = f"fetchTimeMs: {100 + i}\r\n".encode()
        w.write_record(w.create_warc_record(url, "metadata", payload=io.BytesIO(block), length=len(block), warc_content_type="application/warc-fields",
                                            warc_headers_dict={"WARC-Record-ID": meta, "WARC-Date": DATE, "WARC-Concurrent-To": resp}))  # fmt: skip
    return buf.getvalue()


@pytest.mark.parametrize("gz", [True, False])
@pytest.mark.parametrize("version", VERSIONS)
def test_the_typed_records_are_warcios_bytes(version, gz):
    ours = io.BytesIO()
    write_sample(ours, version, gz)
    assert ours.getvalue() == warcio_sample(version, gz)


def test_fields_in_the_callers_order_with_computed_values():
    head, body = http_head("HTTP/1.1 200 OK", [("Content-Type", "text/html")]), b"<p>hi</p>"
    fields = [("WARC-Type", "response"), ("WARC-Date", DATE), ("WARC-Record-ID", "<urn:uuid:1>"), ("Content-Length", None),
              ("WARC-Target-URI", "http://x/"), ("WARC-Payload-Digest", None), ("WARC-Block-Digest", None), ("WARC-Identified-Payload-Type", "text/html")]  # fmt: skip
    out = io.BytesIO()
    w = WarcWriter(out, level=6)
    assert w.write(fields, body, http=head) == 0
    data = gzip.decompress(out.getvalue())
    assert out.getvalue() == zlib.compress(data, 6, wbits=31)  # one gzip member, mtime 0, at the level asked for
    lines = data.split(b"\r\n\r\n", 1)[0].decode().split("\r\n")
    assert lines == ["WARC/1.0", "WARC-Type: response", f"WARC-Date: {DATE}", "WARC-Record-ID: <urn:uuid:1>", f"Content-Length: {len(head + body)}",
                     "WARC-Target-URI: http://x/", f"WARC-Payload-Digest: {sha1_digest(body)}", f"WARC-Block-Digest: {sha1_digest(head + body)}",
                     "WARC-Identified-Payload-Type: text/html"]  # fmt: skip
    assert data.endswith(head + body + b"\r\n\r\n") and w.offset == len(out.getvalue())
    # no Content-Length listed: added last; plain records follow each other
    assert (
        record_bytes("WARC/1.1", [("WARC-Type", "resource")], b"abc")
        == b"WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 3\r\n\r\nabc\r\n\r\n"
    )
    plain = io.BytesIO()
    p = WarcWriter(plain, gzip=False)
    assert (p.write([("WARC-Type", "resource")], b"a"), p.write([("WARC-Type", "resource")], b"b")) == (0, len(plain.getvalue()) // 2)


def test_refuses_what_it_cannot_write():
    with pytest.raises(ValueError, match="WARC-Target-URI: no value given"):
        record_bytes("WARC/1.0", [("WARC-Target-URI", None)])
    with pytest.raises(ValueError, match="WARC/1.0 or WARC/1.1"):
        WarcWriter(io.BytesIO(), version="WARC/0.18")


def test_same_calls_same_bytes():
    a, b = io.BytesIO(), io.BytesIO()
    write_sample(a)
    write_sample(b)
    assert a.getvalue() == b.getvalue()
    assert record_id("x") == record_id("x") != record_id("y")
    assert http_head("HTTP/1.1 200 OK", [("X-Name", "Zoë ☃")]) == b"HTTP/1.1 200 OK\r\nX-Name: Zo\xeb ?\r\n\r\n"  # Latin-1, else '?'
