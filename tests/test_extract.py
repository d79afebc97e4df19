"""`curate extract`: WARC files to documents, on the CommonCrawl sample and on damaged files."""

from __future__ import annotations

import gzip
import json
import re
import threading
import time
import zlib
from pathlib import Path

import pandas as pd
import pytest

from curate.dataset import read_success
from curate.stages.extract.extract_stage import source_for
from curate.stages.extract.sandbox import ExtractCrash, Sandbox
from curate.warc.charset import decode_html, looks_binary
from curate.warc.records import WarcReader
from curate.warc.writer import WarcWriter, http_head, record_id
from tests.conftest import SAMPLE, prose

CC = SAMPLE / "cc"
needs_sample = pytest.mark.skipif(not (CC / "MANIFEST.json").exists(), reason="sample_data/cc not built")
DATE = "2021-01-15T10:00:00Z"


def article(i: int, words: int = 150) -> bytes:
    paras = "".join(f"<p>{prose(i * 10 + k, words // 3)}</p>" for k in range(3))
    return f"<html><head><title>Story {i}</title></head><body><nav><a href=/>Home</a></nav><article><h1>Story {i}</h1>{paras}</article></body></html>".encode()


def make_warc(path: Path, pages: list[dict]) -> Path:
    """A gzip-per-record WARC: request + response per page (page: url, body, status, ctype)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        w = WarcWriter(fh)
        for i, p in enumerate(pages):
            rid = record_id(f"{path.name}/{i}")  # unique across files, as the WARC spec asks
            w.request(p["url"], record_id(f"{path.name}/{i}/request"), DATE, http_head("GET / HTTP/1.1", [("Host", "example.org")]))
            head = http_head(f"HTTP/1.1 {p.get('status', '200 OK')}", [("Content-Type", p["ctype"])] if p.get("ctype") else [])
            w.response(p["url"], rid, DATE, head, p["body"])
    return path


def pages(n: int, start: int = 0) -> list[dict]:
    return [{"url": f"https://example.org/{start + i}", "body": article(start + i), "ctype": "text/html; charset=utf-8"} for i in range(n)]


def members(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each gzip member."""
    out, pos = [], 0
    while pos < len(data):
        d = zlib.decompressobj(31)
        d.decompress(data[pos:])
        end = len(data) - len(d.unused_data)
        out.append((pos, end))
        pos = end
    return out


# --------------------------------------------------------------------------- the sample


@needs_sample
def test_sample_extract_matches_manifest(run, tmp_path):
    out = tmp_path / "ex"
    res = run("extract", "--in", CC, "--out", out, "--keep-rejected", "--workers", 1)
    manifest = json.loads((CC / "MANIFEST.json").read_text())
    recs = {r["record_id"]: r for r in manifest["records"]}
    kept, rej = pd.read_parquet(out), pd.read_parquet(out / "_rejected")
    assert len(kept) + len(rej) == len(recs) and set(kept["id"]) | set(rej["id"]) == set(recs)
    assert f"extract: {len(recs)} -> {len(kept)} docs" in res.stdout
    assert len(list(out.glob("part-*.parquet"))) == 4  # one shard per WARC file
    # every record the manifest says is not a document is rejected for that reason
    for _, row in rej.iterrows():
        want = recs[row["id"]]["expect"]
        assert want == row["reason"] or (
            want is None and row["reason"] == "empty" and recs[row["id"]]["kind"] in ("navigation_only", "thin")
        )
    # a page over --max-html-bytes is cut there and extracted (issue 17), no longer rejected as too_large
    assert {recs[i]["expect"] for i in kept["id"]} == {None, "too_large"}
    big = kept[kept["id"].map(lambda i: recs[i]["expect"] == "too_large")]
    assert (
        len(big) == 1 and json.loads(big["meta"].iloc[0])["html_truncated"] == 1_000_000 and "row 1 of a very long" in big["text"].iloc[0]
    )
    for kind in ("udhr", "handbook", "pile_copy", "charset_wrong", "charset_missing", "charset_meta_only", "no_content_type"):
        assert all(i in set(kept["id"]) for i, r in recs.items() if r["kind"] == kind), kind
    assert set(kept["source"]) == {"cc/CC-MAIN-2020-50", "cc/CC-MAIN-2021-04"}
    for _, row in kept.head(20).iterrows():
        r = recs[row["id"]]
        meta = json.loads(row["meta"])
        assert row["url"] == r["url"] and row["source"] == f"cc/{r['snapshot']}"
        assert meta["warc_file"] == r["warc_file"] and meta["warc_offset"] == r["warc_offset"]
        assert re.match(r"\d{4}-\d\d-\d\dT", meta["warc_date"]) and meta["content_type"] == r["content_type"]
    # wrong or missing charsets decode to the right text; utf-8 read as latin-1 is repaired
    text = {r["charset_note"]: kept.set_index("id").loc[i, "text"] for i, r in recs.items() if r.get("charset_note")}
    assert "Considérant" in text["windows-1252 bytes declared utf-8"]
    assert "unveräußerlichen" in text["windows-1252 bytes declared UTF-8"]
    assert "Considérant" in text["utf-8 bytes declared iso-8859-1 (mojibake for ftfy)"]
    assert "Принимая" in text["koi8-r, declared nowhere"]
    assert "世界人权宣言" in text["GB18030, declared nowhere"] and "人類社会" in text["Shift_JIS, declared only in <meta>"]
    assert not kept["text"].str.contains("Ã©|Ã¤|\ufffd").any()
    # boilerplate is gone from a copied Pile document: its paragraphs are there, the menus are not
    copy = next(i for i, r in recs.items() if r["kind"] == "pile_copy" and i in set(kept["id"]))
    ctext = kept.set_index("id").loc[copy, "text"]
    assert "Accept all" not in ctext and "Most read" not in ctext and "Privacy policy" not in ctext
    stats = read_success(out)
    assert stats["counters"]["truncated_html"] == 1
    assert stats["counters"]["records"] == {"warcinfo": 4, "request": len(recs), "response": len(recs), "metadata": len(recs)}
    assert stats["counters"]["ftfy_fixed"] >= 1 and stats["counters"]["charset"]["detected"] >= 3


@needs_sample
def test_same_output_for_one_or_two_workers_and_resume(run, tmp_path):
    n = len(json.loads((CC / "MANIFEST.json").read_text())["records"])
    run("extract", "--in", CC, "--out", tmp_path / "a", "--workers", 1)  # in a helper process, with a time limit
    run("extract", "--in", CC, "--out", tmp_path / "b", "--workers", 2, "--record-timeout", 0)  # in the workers
    a, b = pd.read_parquet(tmp_path / "a"), pd.read_parquet(tmp_path / "b")
    assert a.equals(b)
    shard = tmp_path / "b" / "part-00002.parquet"
    before = pd.read_parquet(shard)
    shard.unlink()
    res = run("extract", "--in", CC, "--out", tmp_path / "b", "--workers", 1, "--record-timeout", 0)
    assert pd.read_parquet(shard).equals(before) and f"extract: {n} -> " in res.stdout
    assert pd.read_parquet(tmp_path / "b").equals(a)
    with pytest.raises(AssertionError, match="other parameters"):
        run("extract", "--in", CC, "--out", tmp_path / "b", "--workers", 2, "--record-timeout", 0, "--extractor", "justext")


# --------------------------------------------------------------------------- damaged files


def test_bad_inputs_are_counted_and_the_rest_is_read(run, tmp_path, caplog):
    d = tmp_path / "in"
    make_warc(d / "good.warc.gz", pages(6))

    def damaged(name: str) -> tuple[bytes, list[tuple[int, int]]]:  # the same pages, record ids of its own
        data = make_warc(tmp_path / "src" / name, pages(6)).read_bytes()
        return data, members(data)  # request/response pairs: response k is member 2k+1

    data, spans = damaged("truncated.warc.gz")
    (d / "truncated.warc.gz").write_bytes(data[: spans[9][0] + (spans[9][1] - spans[9][0]) // 2])  # cut inside response 4
    data, spans = damaged("corrupt.warc.gz")
    s, e = spans[5]
    (d / "corrupt.warc.gz").write_bytes(data[: s + 40] + bytes(60) + data[s + 100 :])  # response 2's deflate data
    data, spans = damaged("lying.warc.gz")
    raw = [gzip.decompress(data[a:b]) for a, b in spans]
    cl = re.search(rb"Content-Length: (\d+)", raw[3])
    lie = raw[3].replace(cl.group(0), b"Content-Length: %d" % (int(cl.group(1)) - 100), 1)  # response 1 lies
    (d / "lying.warc.gz").write_bytes(
        b"".join(gzip.compress(m, mtime=0) if k != 3 else gzip.compress(lie, mtime=0) for k, m in enumerate(raw))
    )
    big = b"<html><body>" + b"<p>" + b"word " * (10 << 20) + b"</p></body></html>"  # 50 MB of HTML
    make_warc(d / "odd.warc.gz", [*pages(2, 100), {"url": "https://example.org/big", "body": big, "ctype": "text/html"},
                                  {"url": "https://example.org/bin", "body": bytes(range(256)) * 40, "ctype": "text/html"},
                                  {"url": "https://example.org/pdf", "body": b"%PDF-1.4 ...", "ctype": "application/pdf"},
                                  {"url": "https://example.org/404", "body": article(9), "ctype": "text/html", "status": "404 Not Found"},
                                  *pages(1, 200)])  # fmt: skip
    (d / "garbage.warc.gz").write_bytes(b"this is not a WARC file at all\n" * 20)

    res = run("extract", "--in", d, "--out", tmp_path / "out", "--source", "cc/TEST", "--keep-rejected", "--workers", 1,
              "--max-record-bytes", 20_000_000)  # the 50 MB page stays over the hard cap (too_large)  # fmt: skip
    kept, rej = pd.read_parquet(tmp_path / "out"), pd.read_parquet(tmp_path / "out" / "_rejected")
    by_file = kept.assign(f=kept["meta"].map(lambda m: json.loads(m)["warc_file"])).groupby("f")["url"].apply(sorted).to_dict()
    u = [f"https://example.org/{i}" for i in range(6)]
    assert by_file["good.warc.gz"] == u
    assert by_file["truncated.warc.gz"] == u[:4]  # everything before the cut
    assert by_file["corrupt.warc.gz"] == sorted(u[:2] + u[3:])  # only the corrupt member is lost
    assert by_file["lying.warc.gz"] == sorted(u[:1] + u[2:])  # the lying record is rejected, the rest read
    assert by_file["odd.warc.gz"] == ["https://example.org/100", "https://example.org/101", "https://example.org/200"]
    reasons = rej.groupby("url")["reason"].first().to_dict()
    assert reasons["https://example.org/big"] == "too_large" and reasons["https://example.org/bin"] == "binary"
    assert reasons["https://example.org/pdf"] == "not_html" and reasons["https://example.org/404"] == "not_200"
    assert reasons["https://example.org/1"] == "bad_length"
    c = read_success(tmp_path / "out")["counters"]
    assert c["truncated"] == 1 and c["corrupt_gzip"] == 1 and c["unreadable"] == 1 and c["resynced"] >= 2
    for name in ("truncated.warc.gz", "corrupt.warc.gz", "lying.warc.gz", "garbage.warc.gz"):
        assert name in res.stderr, name  # every damaged file is named in a warning
    assert "Traceback" not in res.stderr


def test_reader_on_a_plain_uncompressed_warc(tmp_path):
    data = make_warc(tmp_path / "x.warc.gz", pages(3)).read_bytes()
    plain = b"".join(gzip.decompress(data[a:b]) for a, b in members(data))
    (tmp_path / "x.warc").write_bytes(plain[: len(plain) - 200])
    counters: dict = {}
    recs = [r for r in WarcReader(tmp_path / "x.warc", 10**6, counters) if r.rtype == "response"]
    assert [r.damaged for r in recs] == [None, None, "truncated"] and counters["truncated"] == 1


def test_record_timeout_kills_and_restarts_the_helper(run, tmp_path):
    """resiliparse needs many seconds on deep nesting and holds the GIL: the helper is killed at the limit."""
    nested = b"<html><body>" + b"<div><span>" * 12000 + b"deep " * 500 + b"</span></div>" * 12000 + b"</body></html>"
    make_warc(
        tmp_path / "in" / "t.warc.gz", [*pages(1), {"url": "https://example.org/deep", "body": nested, "ctype": "text/html"}, *pages(1, 50)]
    )
    t0 = time.monotonic()
    res = run(
        "extract",
        "--in",
        tmp_path / "in",
        "--out",
        tmp_path / "out",
        "--source",
        "cc/T",
        "--record-timeout",
        "0.5",
        "--keep-rejected",
        "--workers",
        1,
    )
    assert time.monotonic() - t0 < 20
    assert "rejected: timeout 1" in res.stdout
    kept = pd.read_parquet(tmp_path / "out")
    assert sorted(kept["url"]) == ["https://example.org/0", "https://example.org/50"]  # the record after the timeout is extracted
    assert "https://example.org/deep took over 0.5 s" in res.stderr


def test_sandbox_crash_is_counted_not_fatal():
    box = Sandbox("resiliparse")
    assert "hello" in box.extract("<p>hello world</p>", 5)
    nested = "<html><body>" + "<div><span>" * 12000 + "x" + "</span></div>" * 12000 + "</body></html>"
    threading.Timer(0.3, lambda: box.proc.kill()).start()
    with pytest.raises(ExtractCrash):
        box.extract(nested, 30)
    assert "again" in box.extract("<p>again</p>", 5)  # a new helper
    box.close()


def test_sandbox_streams_a_group_and_times_each_page():
    """A group of pages goes to the helper as one stream; the slow page in the middle times out on its
    own limit (not the group's), and the pages after it are sent again to a new helper and answered."""
    from curate.stages.extract.sandbox import ExtractTimeout

    box = Sandbox("resiliparse")
    nested = "<html><body>" + "<div><span>" * 12000 + "deep " * 500 + "</span></div>" * 12000 + "</body></html>"
    htmls = [f"<html><body><p>page number {i} of the group</p></body></html>" for i in range(40)]
    htmls.insert(7, nested)
    t0 = time.monotonic()
    out = box.extract_many(htmls, 0.5)
    assert time.monotonic() - t0 < 15
    assert isinstance(out[7], ExtractTimeout) and box.restarts == 1
    texts = [t for i, t in enumerate(out) if i != 7]
    assert all(isinstance(t, str) for t in texts)
    assert [int(t.split()[2]) for t in texts] == list(range(40))  # every other page, in order
    assert box.extract_many([], 0.5) == []
    box.close()


def test_sandbox_runs_an_extractor_an_installed_package_registers(tmp_path, monkeypatch):
    """The helper finds its extractor by registry name: one from a package's ``curate.extractors`` entry point runs there too."""
    (tmp_path / "shoutpkg.py").write_text("def shout(html):\n    return html.upper()\n")
    dist = tmp_path / "shoutpkg-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: shoutpkg\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[curate.extractors]\nshout = shoutpkg:shout\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    box = Sandbox("shout")
    try:
        assert box.extract("<p>hello</p>", 60) == "<P>HELLO</P>"
    finally:
        box.close()


@pytest.mark.parametrize("extractor", ["trafilatura", "justext"])
def test_other_extractors(run, tmp_path, extractor):
    make_warc(tmp_path / "in" / "CC-MAIN-2021-04" / "x.warc.gz", pages(3))
    res = run("extract", "--in", tmp_path / "in", "--out", tmp_path / "out", "--extractor", extractor, "--workers", 1)
    assert "extract: 3 -> 3 docs" in res.stdout
    kept = pd.read_parquet(tmp_path / "out")
    assert set(kept["source"]) == {"cc/CC-MAIN-2021-04"}
    first = prose(0, 50)[:40]
    assert any(first in t for t in kept["text"]) and not any("Home" == t.split("\n")[0] for t in kept["text"])
    assert read_success(tmp_path / "out")["params"]["extractor"] == extractor


# --------------------------------------------------------------------------- pieces


def test_source_from_path_or_option(run, tmp_path):
    assert source_for(Path("data/crawl-data/CC-MAIN-2020-50/segments/1/warc/CC-MAIN-20201123-00000.warc.gz")) == "cc/CC-MAIN-2020-50"
    assert source_for(Path("x.warc.gz"), "cc/mine") == "cc/mine"
    make_warc(tmp_path / "in" / "x.warc.gz", pages(1))
    res = run("extract", "--in", tmp_path / "in", "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 1 and "x.warc.gz: no CC-MAIN-YYYY-WW snapshot name in the path; name the source with --source" in res.stderr
    res = run("extract", "--in", tmp_path / "nothing", "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 1 and "no such file or directory" in res.stderr


def test_decode_html():
    assert decode_html("Grüße".encode("cp1252"), "utf-8")[0] == "Grüße"  # declared wrongly: detected
    assert decode_html('<meta charset="koi8-r"><p>Привет</p>'.encode("koi8-r"), None)[1:] == ("koi8-r", "meta")
    assert decode_html(b"\xef\xbb\xbfhello", "latin1") == ("hello", "utf-8", "bom")
    assert decode_html(b"plain ascii", "us-ascii") == ("plain ascii", "cp1252", "http")
    text, _, how = decode_html("Ünïcödé".encode(), "iso-8859-1")  # mojibake: repaired later by clean_text
    assert how == "http" and text == "ÃœnÃ¯cÃ¶dÃ©"
    assert looks_binary(bytes(range(256))) and looks_binary(b"\x89PNG\r\n\x1a\n\x00\x00") and not looks_binary("Grüße <b>".encode())
