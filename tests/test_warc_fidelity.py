"""`curate extract` on WARC and ARC files written by other tools (issue 17).

Each fixture in tests/data/warc/ (built by tests/data/make_warc_fixtures.py; README.md there)
has a framing the synthetic CommonCrawl-style files lack. For each, curate must read what
warcio 1.8.1 reads: the same response records with the same URLs and statuses, bodies equal
to warcio's decoded ones, and extracted text that comes from the decoded HTML. Then: charset
decoding of late-non-ASCII UTF-8, pages over --max-html-bytes, and CJK punctuation in clean.
"""

from __future__ import annotations

import gzip
import html
import io
import json
import logging
import re
import sys
import zlib
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator

from curate.dataset import read_success
from curate.stages.clean import CleanStage
from curate.stages.extract.extract_stage import ExtractStage
from curate.warc import members as extract_module
from curate.warc.charset import decode_html
from curate.warc.http import dechunk, decode_payload, parse_http_head
from curate.warc.records import WarcReader
from tests.test_extract import make_warc
from tests.test_fuzz import SLOW, check_warc, mutated

DATA = Path(__file__).resolve().parent / "data" / "warc"


# --------------------------------------------------------------------------- helpers


def warcio_responses(data: bytes) -> list[dict]:
    """The HTTP responses warcio reads from ``data``: url (angle brackets stripped), status, decoded body (or the error)."""
    out = []
    for rec in ArchiveIterator(io.BytesIO(data), arc2warc=False):
        if rec.rec_type != "response" or rec.http_headers is None:
            continue
        url = rec.rec_headers.get_header("WARC-Target-URI") or rec.rec_headers.get_header("uri")
        try:
            body: bytes | str = rec.content_stream().read()
        except Exception as exc:  # noqa: BLE001 - warcio cannot decode it (brotli 1.2's API, say)
            body = f"{type(exc).__name__}: {exc}"
        out.append({"url": url.strip("<>"), "status": int(rec.http_headers.get_statuscode()), "body": body})
    return out


def curate_responses(path: Path, max_body: int = 1_000_000, **kw) -> tuple[list, dict]:
    counters: dict = {}
    return [r for r in WarcReader(path, max_body, counters, **kw) if r.rtype == "response"], counters


def extract(path: Path, caplog=None, **params) -> tuple[dict, dict, dict]:
    """Run the stage's reader on one file, in-process: ({url: kept row}, {url: rejected row}, counters)."""
    stage = ExtractStage(record_timeout=0, source="cc/test", **params)
    batches = list(stage.read(path))
    kept = pa.concat_tables([b.kept for b in batches]).to_pylist()
    rejected = pa.concat_tables([b.rejected for b in batches]).to_pylist()
    ids = [r["id"] for r in kept + rejected]
    assert len(ids) == len(set(ids)) == sum(b.docs_in for b in batches)
    return {r["url"]: r for r in kept}, {r["url"]: r for r in rejected}, batches[-1].counters


def paragraphs(body: bytes) -> list[str]:
    """The paragraphs of a fixture page (what the extracted text must hold)."""
    return [html.unescape(p) for p in re.findall(r"<p>(.*?)</p>", body.decode("utf-8", "replace"))]


def assert_same_as_warcio(path: Path, data: bytes | None = None, **kw) -> tuple[list, dict, list[dict]]:
    """Record count, URLs and statuses as warcio reads them; bodies equal where warcio could decode them."""
    ours, counters = curate_responses(path, **kw)
    theirs = warcio_responses(data if data is not None else path.read_bytes())
    assert [(r.url, r.status) for r in ours] == [(w["url"], w["status"]) for w in theirs]
    assert counters["records"]["response"] == len(theirs)
    return ours, counters, theirs


# --------------------------------------------------------------------------- 1. Content-Encoding


def test_content_encoded_bodies_are_decoded():
    path = DATA / "content-encoding.warc.gz"
    ours, counters, theirs = assert_same_as_warcio(path)
    by_url = {r.url.rsplit("/", 1)[1]: r for r in ours}
    warcio_body = {w["url"].rsplit("/", 1)[1]: w["body"] for w in theirs}
    for name in ("gzip", "deflate-zlib", "deflate-raw", "gzip-cut", "stored-decoded", "plain"):
        assert by_url[name].body == warcio_body[name], name  # what warcio decodes, byte for byte
    # warcio 1.8.1 leaves x-gzip and zstd coded, and fails on brotli 1.2's API: checked against the codecs themselves
    import brotli
    import zstandard

    assert isinstance(warcio_body["br"], str) or warcio_body["br"] == by_url["br"].body
    raw = {w.url.rsplit("/", 1)[1]: w for w in curate_responses(path, max_body=10**6)[0]}
    assert by_url["x-gzip"].body.startswith(b"<!DOCTYPE html>") and gzip.decompress(warcio_body["x-gzip"]) == by_url["x-gzip"].body
    assert zstandard.ZstdDecompressor().decompress(warcio_body["zstd"]) == by_url["zstd"].body
    assert by_url["br"].body.startswith(b"<!DOCTYPE html>") and by_url["br"].decoded == "br" and raw["br"].reason is None
    assert brotli.compress(by_url["br"].body)  # the module is importable here: br is decoded
    assert counters["http_decoded"] == {"gzip": 2, "x-gzip": 1, "deflate": 2, "br": 1, "zstd": 1}
    assert counters["http_encoding_ignored"] == 1 and counters["http_decode_partial"] == 1 and counters["warc_truncated"] == 1
    reasons = {r.url.rsplit("/", 1)[1]: r.reason for r in ours}
    assert reasons["gzip-garbage"] == "bad_encoding" and reasons["compress"] == "unsupported_encoding" and reasons["moved"] == "not_200"

    kept, rejected, c = extract(path)
    assert sorted(u.rsplit("/", 1)[1] for u in kept) == sorted(
        ["gzip", "x-gzip", "deflate-zlib", "deflate-raw", "br", "zstd", "stored-decoded", "gzip-cut", "plain"]
    )
    for url, row in kept.items():
        assert "\x1f" not in row["text"] and "\ufffd" not in row["text"]
        first = paragraphs(by_url[url.rsplit("/", 1)[1]].body)[0]
        assert first[:80] in row["text"], url  # the text comes from the decoded HTML
    assert json.loads(kept["https://news.example/gzip"]["meta"])["http_decoded"] == "gzip"
    assert json.loads(kept["https://news.example/gzip-cut"]["meta"])["warc_truncated"] == "length"
    assert {r["reason"] for r in rejected.values()} == {"bad_encoding", "unsupported_encoding", "not_200"}
    assert "binary" not in c.get("rejected", {})


def test_brotli_without_the_module_is_its_own_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "brotli", None)  # import brotli raises ImportError
    ours, counters = curate_responses(DATA / "content-encoding.warc.gz")
    br = next(r for r in ours if r.url.endswith("/br"))
    assert br.reason == "unsupported_encoding" and counters["unsupported_encoding"] == {"br": 1, "compress": 1}


def test_gzip_bomb_is_counted_not_inflated(monkeypatch):
    path = DATA / "gzip-bomb.warc.gz"
    assert_same_as_warcio(path)
    # 8 MiB of markup from 8 kB (1000:1): over the record cap at more than CURATE_MAX_DECOMPRESSION_RATIO (100)
    kept, rejected, _ = extract(path, max_record_bytes=2 << 20)
    assert sorted(kept) == ["https://bomb.example/after", "https://bomb.example/before"]
    assert rejected["https://bomb.example/bomb"]["reason"] == "decompression_bomb"
    monkeypatch.setenv("CURATE_MAX_DECOMPRESSED_BYTES", str(1 << 20))  # the shared limit applies too
    assert extract(path)[1]["https://bomb.example/bomb"]["reason"] == "decompression_bomb"
    monkeypatch.delenv("CURATE_MAX_DECOMPRESSED_BYTES")
    # under the default limits it is a (very) long page: cut at --max-html-bytes and extracted
    kept, _, c = extract(path)
    assert "https://bomb.example/bomb" in kept and c["truncated_html"] == 1


def test_decode_payload_bounds_and_partial_streams():
    page = b"<html><body><p>" + b"word " * 5000 + b"</p></body></html>"
    assert decode_payload(gzip.compress(page), ["gzip"], 10**6) == (page, "ok", ["gzip"])
    assert decode_payload(gzip.compress(page), ["gzip"], 1000)[1] == "over"  # stops at the cap
    out, st, _ = decode_payload(gzip.compress(page), ["gzip"], 10**6, keep=100)  # inflated to the end, 101 bytes kept
    assert (out, st) == (page[:101], "ok")
    out, st, _ = decode_payload(gzip.compress(page)[:-30], ["gzip"], 10**6)
    assert st == "partial" and page.startswith(out) and len(out) > 10000
    assert decode_payload(gzip.compress(page) * 2, ["gzip"], 10**6)[0] == page * 2  # members one after another
    assert decode_payload(b"\x1f\x8b\x08\x00garbage", ["gzip"], 10**6)[1] == "bad"
    assert decode_payload(page, ["gzip"], 10**6) == (page, "ignored", [])
    assert decode_payload(page, ["identity"], 10**6) == (page, "ok", [])
    assert decode_payload(page, ["compress"], 10**6)[1] == "unsupported"
    both = b"%x\r\n%s\r\n0\r\n\r\n" % (len(gzip.compress(page)), gzip.compress(page))
    assert decode_payload(both, ["gzip", "chunked"], 10**6) == (page, "ok", ["chunked", "gzip"])


# --------------------------------------------------------------------------- 2. Transfer-Encoding: chunked


def test_chunked_bodies_are_dechunked():
    path = DATA / "chunked.warc"
    ours, counters, theirs = assert_same_as_warcio(path)
    by_url = {r.url.rsplit("/", 1)[1] or "home": r for r in ours}
    warcio_body = {w["url"].rsplit("/", 1)[1] or "home": w["body"] for w in theirs}
    for name in ("home", "gz", "cut", "dechunked"):
        assert by_url[name].body == warcio_body[name], name
    # a malformed chunk-size line: warcio keeps the raw rest (size lines and all); curate keeps what decoded
    assert warcio_body["malformed"].startswith(by_url["malformed"].body) and len(by_url["malformed"].body) == 800
    assert counters["http_decoded"] == {"chunked": 4, "gzip": 1}
    assert counters["http_decode_partial"] == 2 and counters["http_encoding_ignored"] == 1
    kept, _, _ = extract(path)
    assert len(kept) == 5
    for row in kept.values():
        assert not re.search(r"\b0{2}[0-9a-f]{4}\b", row["text"]) and not row["text"].rstrip().endswith(" 0"), row["url"]
    first = paragraphs(by_url["home"].body)[0]
    assert kept["http://www.registry.example/"]["text"].count(first[:60]) == 1


def test_dechunk_framings():
    assert dechunk(b"4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nTrailer: x\r\n\r\n") == (b"Wikipedia", "ok")
    assert dechunk(b"4\nWiki\n5\npedia\n0\n\n") == (b"Wikipedia", "ok")  # bare LF
    assert dechunk(b"4\r\nWiki\r\n5\r\nped") == (b"Wikiped", "partial")  # cut inside a chunk
    assert dechunk(b"4\r\nWiki\r\n") == (b"Wiki", "partial")  # no final chunk
    assert dechunk(b"4\r\nWiki\r\nnot hex\r\nrest") == (b"Wiki", "partial")
    assert dechunk(b"<html>not chunked</html>") == (b"<html>not chunked</html>", "ignored")
    assert dechunk(b"") == (b"", "partial")


# --------------------------------------------------------------------------- 3. a WARC gzipped as one member


def test_whole_file_gzip_reads_every_record(caplog):
    path = DATA / "whole-file-gzip.warc.gz"
    with pytest.raises(Exception, match="non-chunked gzip"):
        warcio_responses(path.read_bytes())  # warcio refuses it as it is: compare with what it reads decompressed
    ours, counters, _ = assert_same_as_warcio(path, gzip.decompress(path.read_bytes()))
    assert [r.damaged for r in ours] == [None] * 5 and ours[-1].reason == "not_200"  # the 302, not truncated
    assert counters["whole_gzip_files"] == 1 and "truncated" not in counters
    plain = gzip.decompress(path.read_bytes())
    for r in ours:  # offsets are decompressed offsets there, and say so
        assert r.uncompressed and plain[r.offset : r.offset + 8] == b"WARC/1.0" and r.index >= 2
    kept, rejected, _ = extract(path)
    assert len(kept) == 4 and [r["reason"] for r in rejected.values()] == ["not_200"]
    meta = json.loads(kept["https://blog.example/post-2"]["meta"])
    assert meta["warc_offset_uncompressed"] is True and plain[meta["warc_offset"] :].startswith(b"WARC/1.0")
    assert not [m for m in caplog.messages if "truncated" in m]


@pytest.mark.parametrize("history", [None, 512])  # 512 bytes: looking back re-inflates from the start of the member
def test_whole_file_gzip_damage_names_records_and_uncompressed_offsets(tmp_path, caplog, monkeypatch, history):
    if history:
        monkeypatch.setattr(extract_module._GzipStream, "HISTORY", history)
        monkeypatch.setattr(extract_module._GzipStream, "STEP", 256)
    plain = gzip.decompress((DATA / "whole-file-gzip.warc.gz").read_bytes())
    cut = tmp_path / "cut.warc.gz"
    full = gzip.compress(plain, mtime=0)
    cut.write_bytes(full[: len(full) * 3 // 4])
    caplog.set_level(logging.WARNING, "curate")
    ours, counters = curate_responses(cut)
    assert counters["truncated"] == 1 and [r.damaged for r in ours[:-1]] == [None] * (len(ours) - 1)
    assert ours[-1].damaged == "truncated" or ours[-1].reason is not None
    assert any("uncompressed byte" in m and "#" in m for m in caplog.messages), caplog.messages
    # a bad WARC header inside good gzip data: the reader finds the next record (seeking back in the stream)
    second = plain.index(b"WARC/1.0", plain.index(b"blog.example/post-1"))
    bad = tmp_path / "bad.warc.gz"
    bad.write_bytes(gzip.compress(plain[:second] + b"WARX" + plain[second + 4 :], mtime=0))
    caplog.clear()
    ours, counters = curate_responses(bad)
    urls = [r.url for r in ours if not r.damaged]
    assert "https://blog.example/post-3" in urls and counters["bad_warc_header"] == 1 and counters["resynced"] == 1
    assert any("bad WARC header after the record #" in m and "uncompressed byte" in m for m in caplog.messages)


def test_per_record_gzip_warnings_name_the_record_number(tmp_path, caplog):
    data = (DATA / "content-encoding.warc.gz").read_bytes()
    plain = next(r for r in curate_responses(DATA / "content-encoding.warc.gz")[0] if r.url.endswith("/plain"))
    (tmp_path / "t.warc.gz").write_bytes(data[: plain.offset + 400])  # cut inside that record's gzip member
    caplog.set_level(logging.WARNING, "curate")
    curate_responses(tmp_path / "t.warc.gz")
    assert any(re.search(r"the response record #\d+ at byte [\d,]+ is cut off", m) for m in caplog.messages), caplog.messages


# --------------------------------------------------------------------------- 4. ClueWeb09: bare-LF HTTP headers


def test_lf_only_http_headers_are_parsed():
    path = DATA / "clueweb09-lf-headers.warc.gz"
    ours, counters, theirs = assert_same_as_warcio(path)
    assert [r.content_type for r in ours] == ["text/html", "text/html; charset=ISO-8859-1", None, "text/html"]
    for r, w in zip(ours, theirs):
        if r.body is not None:
            assert r.body == w["body"]
    assert counters["lf_http_headers"] == 4 and counters["sniffed_html"] == 1
    kept, rejected, _ = extract(path)
    assert len(kept) == 3 and [r["reason"] for r in rejected.values()] == ["not_200"]
    assert "Café crème." in kept["http://www.shop.example/catalogue"]["text"]
    assert not any(t["text"].startswith(("HTTP/1.1", "Server:")) for t in kept.values())
    assert parse_http_head(b"HTTP/1.1 200 OK\nContent-Type: text/html\n\nbody") == (200, {b"content-type": b"text/html"}, 41, True)
    assert parse_http_head(b"HTTP/1.1 200 OK\r\nX: a\r\n  b\r\n\r\n")[1] == {b"x": b"a b"}  # a folded line
    assert parse_http_head(b"HTTP/1.0 404\r\n", whole=True)[0] == 404 and parse_http_head(b"GET / HTTP/1.1\r\n\r\n") is None


# --------------------------------------------------------------------------- 5. wget's <URI>


def test_wget_target_uri_loses_its_angle_brackets():
    path = DATA / "wget-angle-brackets.warc.gz"
    plain, rest = b"", path.read_bytes()
    while rest:
        members = zlib.decompressobj(31)
        plain += members.decompress(rest)
        rest = members.unused_data
    raw_uris = re.findall(rb"WARC-Target-URI: (\S+)", plain)
    assert len(raw_uris) == 8 and all(u.startswith(b"<http://") and u.endswith(b">") for u in raw_uris)  # as wget writes them
    ours, _, _ = assert_same_as_warcio(path)
    assert [r.url for r in ours] == [
        "http://example.com/",
        "http://example.com/about",
        "http://example.com/news",
        "http://example.com/robots.txt",
    ]
    kept, _, _ = extract(path)
    assert sorted(kept) == ["http://example.com/", "http://example.com/about", "http://example.com/news"]


# --------------------------------------------------------------------------- 6. ARC files


@pytest.mark.parametrize("name", ["old-crawl.arc", "old-crawl.arc.gz"])
def test_arc_files_are_read(name):
    path = DATA / name
    ours, counters, theirs = assert_same_as_warcio(path)
    assert counters["arc_files"] == 1 and counters["records"] == {"arc_header": 1, "response": 5, "resource": 1}  # resource: dns:
    for r, w in zip(ours, theirs):
        if r.body is not None:
            assert r.body == w["body"], r.url
    assert ours[1].url == "http://www.archive.example/a page with spaces.html" and ours[0].date == "2008-04-30T20:48:25Z"
    data = path.read_bytes()
    for r in ours:  # offsets point at the record: its gzip member in an .arc.gz, its header line in an .arc
        assert not r.uncompressed
        at = zlib.decompressobj(31).decompress(data[r.offset :]) if name.endswith(".gz") else data[r.offset :]
        assert at.startswith(r.url.encode()), r.url
    kept, rejected, _ = extract(path)
    assert sorted(kept) == [
        "http://www.archive.example/",
        "http://www.archive.example/a page with spaces.html",
        "http://www.archive.example/news",
    ]
    assert {u: r["reason"] for u, r in rejected.items()} == {"http://www.archive.example/gone": "not_200",
                                                             "http://www.archive.example/logo.gif": "not_html"}  # fmt: skip
    for url, row in kept.items():
        assert row["id"].startswith(f"{name}@") and json.loads(row["meta"])["warc_date"] == "2008-04-30T20:48:25Z"
        assert paragraphs(next(r.body for r in ours if r.url == url))[0][:80] in row["text"]


def test_arc_files_by_name_and_in_directories(run, tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    for name in ("old-crawl.arc", "old-crawl.arc.gz", "wget-angle-brackets.warc.gz"):
        (d / name).write_bytes((DATA / name).read_bytes())
    (d / "later.warc.zst").write_bytes(b"not read")
    res = run("extract", "--in", d, "--out", tmp_path / "o", "--source", "cc/old", "--workers", 1, "--record-timeout", 0)
    assert "extract: 14 -> 9 docs" in res.stdout
    assert "1 file(s) skipped" in res.stderr and "later.warc.zst" in res.stderr  # named, not silently left out
    res = run("extract", "--in", d / "old-crawl.arc.gz", "--out", tmp_path / "o2", "--source", "cc/old", "--workers", 1)
    assert "extract: 5 -> 3 docs" in res.stdout
    assert read_success(tmp_path / "o2")["counters"]["arc_files"] == 1


def test_damaged_arc_files(tmp_path, caplog):
    data = (DATA / "old-crawl.arc.gz").read_bytes()
    caplog.set_level(logging.WARNING, "curate")
    (tmp_path / "cut.arc.gz").write_bytes(data[: len(data) - 200])
    ours, counters = curate_responses(tmp_path / "cut.arc.gz")
    assert counters["truncated"] == 1 and [r.url for r in ours if not r.damaged][:3] == [
        "http://www.archive.example/", "http://www.archive.example/a page with spaces.html", "http://www.archive.example/gone"]  # fmt: skip
    # a corrupt member costs that record: the reader goes on at the next member
    starts = [r.offset for r in curate_responses(DATA / "old-crawl.arc.gz")[0]]
    bad = bytearray(data)
    bad[starts[1] + 30 : starts[1] + 60] = bytes(30)
    (tmp_path / "bad.arc.gz").write_bytes(bytes(bad))
    ours, counters = curate_responses(tmp_path / "bad.arc.gz")
    assert counters["corrupt_gzip"] == 1 and counters["resynced"] == 1
    assert "http://www.archive.example/news" in [r.url for r in ours if not r.damaged]
    # a plain ARC with a broken header line: skipped up to the next record header
    plain = (DATA / "old-crawl.arc").read_bytes().replace(b"http://www.archive.example/gone 192.0.2.10", b"garbage", 1)
    (tmp_path / "bad.arc").write_bytes(plain)
    ours, counters = curate_responses(tmp_path / "bad.arc")
    assert counters["bad_arc_header"] == 1 and "http://www.archive.example/news" in [r.url for r in ours]


@SLOW
@given(st.data())
def test_reader_on_damaged_whole_gzip_and_arc_files(data):
    name = data.draw(st.sampled_from(["whole-file-gzip.warc.gz", "old-crawl.arc.gz", "old-crawl.arc", "chunked.warc"]))
    check_warc(data.draw(mutated((DATA / name).read_bytes())), name.endswith(".gz"))


# --------------------------------------------------------------------------- decoding: UTF-8 before detection


def test_undeclared_utf8_with_late_non_ascii_decodes_as_utf8():
    path = DATA / "late-utf8.warc.gz"
    (raw,), _ = curate_responses(path)
    first = re.search(rb"[\x80-\xff]", raw.body).start()
    assert first > 100_000 and raw.charset is None and b"charset" not in raw.body
    assert decode_html(raw.body, None)[1:] == ("utf-8", "utf8")
    kept, _, c = extract(path)
    text = kept["https://paper.example/long-story"]["text"]
    assert "airlines\u2019 caf\u00e9 menus \u2014 cr\u00e8me br\u00fbl\u00e9e" in text and "Â" not in text and "â€" not in text
    assert c["charset"] == {"utf8": 1}
    # declarations still come first; a page that is not UTF-8 still goes to detection
    assert decode_html("Grüße".encode("cp1252") * 50, None)[2] == "detected"
    assert decode_html("<meta charset=koi8-r>Привет".encode("koi8-r"), None)[1:] == ("koi8-r", "meta")
    assert decode_html(b"plain ascii", None) == ("plain ascii", "utf-8", "utf8")


# --------------------------------------------------------------------------- large pages


def test_large_page_is_cut_at_max_html_bytes_and_extracted():
    path = DATA / "large-page.warc.gz"
    ours, counters, theirs = assert_same_as_warcio(path)
    big = ours[0]
    assert big.truncated and len(big.body) == 1_000_000 and theirs[0]["body"][:1_000_000] == big.body
    assert big.body[-1:] == b"\xe6"  # the cut splits a 3-byte character
    text, enc, how = decode_html(big.body, big.charset, truncated=True)
    assert (enc, how) == ("utf-8", "http") and "\ufffd" not in text and text.endswith("x")
    assert counters["truncated_html"] == 1
    kept, _, c = extract(path)
    row = kept["https://big.example/article"]
    assert json.loads(row["meta"])["html_truncated"] == 1_000_000 and "\u6f22" not in row["text"] and "\ufffd" not in row["text"]
    assert paragraphs(big.body)[0][:80] in row["text"] and c["truncated_html"] == 1 and c["charset"] == {"http": 2}
    # above the hard cap the record is skipped, as before
    kept, rejected, _ = extract(path, max_record_bytes=1_000_000)
    assert rejected["https://big.example/article"]["reason"] == "too_large" and "https://big.example/small" in kept


@pytest.mark.parametrize("codec", ["utf-8", "shift_jis", "gb18030", "utf-16-le", "euc-kr"])
def test_a_cut_inside_a_multibyte_character_still_decodes(codec):
    sample = {"shift_jis": "日本語の文章。", "gb18030": "中文的句子。", "euc-kr": "한국어 문장."}.get(codec, "Grüße 漢字 ok")
    body = (sample * 200).encode(codec)
    for cut in range(len(body) - 8, len(body)):
        text, enc, _ = decode_html(body[:cut], codec, truncated=True)
        assert enc.replace("_", "-") == codecs_name(codec) and "\ufffd" not in text and (sample * 200).startswith(text)


def codecs_name(label: str) -> str:
    import codecs

    return codecs.lookup(label).name.replace("_", "-")


# --------------------------------------------------------------------------- CJK punctuation


@pytest.mark.parametrize(
    "text",
    [
        "你好，世界！今天天气怎么样？我们去公园吧。",
        "他说：“你好！”（这是引号）；然后走了。",
        "日本語の文章です。本当ですか？はい！「引用」：ここ；",
        "価格は１２３円です！（税込）",
        "한국어 문장입니다，정말？",
    ],
)
def test_cjk_fullwidth_punctuation_is_kept(text):
    out = CleanStage().clean_text(text)[0]
    for ch in "，。！？：；（）":
        assert out.count(ch) == text.count(ch), ch
    assert "１" not in out  # full-width digits are still folded


def test_fullwidth_latin_is_still_folded():
    c = CleanStage()
    assert c.clean_text("This is ｆｕｌｌ ｗｉｄｔｈ text！")[0] == "This is full width text!"
    assert c.clean_text("ﬁne ＡＢＣ")[0] == "fine ABC"
    assert c.clean_text("Ｕﾀｰﾝ")[0] == "Uターン"  # half-width katakana widened, as ftfy does
    assert c.clean_text("我买了ＩＢＭ的电脑，价格１２３元！")[0] == "我买了IBM的电脑，价格123元！"
    mixed = c.clean_text("In Chinese: 你好，世界！ In English： hello！")[0]
    assert mixed == "In Chinese: 你好，世界！ In English: hello!"
    assert c.clean_text("cafÃ© 你好，世界！ ｅ\u0301")[0] == "café 你好，世界！ \u00e9"  # the ftfy path too, NFC after


def test_extract_keeps_cjk_punctuation(tmp_path):
    zh = "".join(f"<p>第{i}段：这是一个关于城市历史的长句子，我们讨论了河流、音乐和语言！真的吗？是的。</p>" for i in range(8))
    ja = "".join(f"<p>第{i}章：これは長い日本語の文章です。本当ですか？はい、そうです！（注）</p>" for i in range(8))
    pages = [{"url": f"https://cjk.example/{k}", "body": f"<html><body><article>{b}</article></body></html>".encode(),
              "ctype": "text/html; charset=utf-8"} for k, b in (("zh", zh), ("ja", ja))]  # fmt: skip
    path = make_warc(tmp_path / "cjk.warc.gz", pages)
    kept, _, _ = extract(path)
    assert "这是一个关于城市历史的长句子，我们讨论了河流、音乐和语言！真的吗？" in kept["https://cjk.example/zh"]["text"]
    assert "本当ですか？はい、そうです！（注）" in kept["https://cjk.example/ja"]["text"]


# --------------------------------------------------------------------------- the fixtures


def test_fixtures_are_what_the_builder_writes():
    sys.path.insert(0, str(DATA.parent))
    try:
        import make_warc_fixtures as builder
    finally:
        sys.path.pop(0)
    for name, make in builder.FIXTURES.items():
        data = make()
        assert (DATA / name).read_bytes() == data, f"{name}: run tests/data/make_warc_fixtures.py"
        assert len(data) < 50_000
