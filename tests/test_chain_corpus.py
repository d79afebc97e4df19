"""benchmarks/bench_chain_corpus.py: a deterministic CommonCrawl-like WARC corpus that `curate extract` reads.

Offline: the corpus is built from the repository's own texts (``--sources repo``: sample_data/ and
tests/data/udhr.json), with the source cache in a temporary directory.
"""

from __future__ import annotations

import base64
import codecs
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import zlib
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.conftest import ROOT, SAMPLE

SCRIPT = ROOT / "benchmarks" / "bench_chain_corpus.py"
CURATE = Path(sys.executable).with_name("curate")
PAGES = 200
PER_FILE = 60  # 4 WARC files: 60 + 60 + 60 + 20 captures
CODECS = {"utf-8": "utf-8", "windows-1252": "cp1252", "iso-8859-1": "latin-1", "iso-8859-15": "iso8859-15", "iso-8859-2": "iso8859-2",
          "iso-8859-7": "iso8859-7", "iso-8859-9": "iso8859-9", "shift_jis": "shift_jis", "euc-jp": "euc-jp", "gb2312": "gb2312", "gbk": "gbk",
          "big5": "big5", "euc-kr": "euc-kr", "koi8-r": "koi8-r", "windows-1251": "cp1251", "windows-1250": "cp1250",
          "windows-1254": "cp1254", "windows-1256": "cp1256"}  # fmt: skip

pytestmark = pytest.mark.skipif(not (SAMPLE / "pile" / "MANIFEST.json").exists(), reason="sample_data not built")


def build(out: Path, cache: Path, workers: int, hashseed: str, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONHASHSEED=hashseed)
    cmd = [sys.executable, str(SCRIPT), "--pages", str(PAGES), "--seed", "7", "--out", str(out), "--pages-per-file", str(PER_FILE),
           "--workers", str(workers), "--sources", "repo", "--cache", str(cache), "-q", *extra]  # fmt: skip
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("chain") / "corpus"
    res = build(out, out.parent / "cache", 1, "1")
    assert res.returncode == 0, res.stderr
    assert "200 pages in 4 WARC files" in res.stdout
    return out


@pytest.fixture(scope="module")
def rows(corpus: Path) -> list[dict]:
    return [json.loads(line) for line in gzip.decompress((corpus / "pages.jsonl.gz").read_bytes()).splitlines()]


@pytest.fixture(scope="module")
def manifest(corpus: Path) -> dict:
    return json.loads((corpus / "manifest.json").read_text())


def test_same_bytes_for_a_seed_whatever_the_workers_and_hash_seed(corpus: Path, tmp_path: Path):
    # a fresh source cache too: the text bank is rebuilt, and must come out the same
    res = build(tmp_path / "again", tmp_path / "cache", 2, "2")
    assert res.returncode == 0, res.stderr
    first, again = tree(corpus), tree(tmp_path / "again")
    assert sorted(first) == sorted(again)
    assert [name for name in first if first[name] != again[name]] == []
    # another seed is another corpus
    res = build(tmp_path / "other", tmp_path / "cache", 1, "1", "--seed", "8")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "other" / "pages.jsonl.gz").read_bytes() != first["pages.jsonl.gz"]


def test_layout_and_manifest(corpus: Path, rows: list[dict], manifest: dict):
    files = sorted(p.relative_to(corpus).as_posix() for p in corpus.rglob("*.warc.gz"))
    assert len(files) == 4
    for f in files:
        assert re.fullmatch(r"crawl-data/CC-MAIN-2020-50/segments/\d{13}\.\d+/warc/CC-MAIN-\d{14}-\d{14}-\d{5}\.warc\.gz", f), f
    listed = gzip.decompress((corpus / "crawl-data" / "CC-MAIN-2020-50" / "warc.paths.gz").read_bytes()).decode().split()
    assert sorted(listed) == files
    assert [f["file"] for f in manifest["files"]] == listed
    for f in manifest["files"]:
        assert hashlib.sha256((corpus / f["file"]).read_bytes()).hexdigest() == f["sha256"]
    assert len(rows) == PAGES and [r["n"] for r in rows] == list(range(PAGES))
    assert manifest["records"] == {"warcinfo": 4, "request": PAGES, "response": PAGES, "metadata": PAGES}
    assert sum(manifest["counts"]["kind"].values()) == PAGES
    assert Counter(r["kind"] for r in rows) == Counter(manifest["counts"]["kind"])
    # a mix: mostly English articles, some other languages, legacy charsets, non-200 and non-HTML records, duplicates
    html = [r for r in rows if r["expect"] == "doc"]
    assert 0.75 <= sum(r["lang"] == "en" for r in html) / len(html) <= 0.92
    assert len({r["lang"] for r in html}) >= 5
    assert any(r["charset"] != "utf-8" for r in html)
    assert {r["declared"] for r in html} >= {"header", "meta", "header+meta", "none"}
    assert {r["expect"] for r in rows} == {"doc", "not_200", "not_html"}
    assert {"article", "forum", "near_dup", "exact_dup", "redirect", "error", "non_html"} <= {r["kind"] for r in rows}
    assert manifest["duplicates"]["clusters"] >= 3
    assert manifest["params"] == {"pages": PAGES, "seed": 7, "pages_per_file": PER_FILE, "snapshot": "CC-MAIN-2020-50", "sources": "repo"}


def test_records_as_commoncrawl_writes_them(corpus: Path, rows: list[dict]):
    by_url = {r["url"]: r for r in rows}
    seen = 0
    for f in sorted(corpus.rglob("*.warc.gz")):
        data = f.read_bytes()
        # one gzip member per record
        members, pos = 0, 0
        while pos < len(data):
            d = zlib.decompressobj(31)
            d.decompress(data[pos:])
            assert d.eof
            pos = len(data) - len(d.unused_data)
            members += 1
        with open(f, "rb") as fh:
            recs = list(ArchiveIterator(fh))
        assert members == len(recs)
        types = [r.rec_type for r in recs]
        assert types[0] == "warcinfo" and types[1:] == ["request", "response", "metadata"] * ((len(types) - 1) // 3)
        with open(f, "rb") as fh:
            for rec in ArchiveIterator(fh):
                h = rec.rec_headers
                assert h.protocol == "WARC/1.0"
                assert re.fullmatch(r"<urn:uuid:[0-9a-f-]{36}>", h.get_header("WARC-Record-ID"))
                assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", h.get_header("WARC-Date"))
                if rec.rec_type != "response":
                    continue
                seen += 1
                assert h.get_header("Content-Type") == "application/http; msgtype=response"
                row = by_url[h.get_header("WARC-Target-URI")]
                assert h.get_header("WARC-Record-ID") == f"<{row['record_id']}>"
                assert rec.http_headers.get_statuscode() == str(row["status"])
                assert rec.http_headers.get_header("Content-Type") == row["content_type"]
                body = rec.content_stream().read()
                assert len(body) == row["bytes"]
                assert h.get_header("WARC-Payload-Digest") == "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()
                if row["status"] in (301, 302, 307, 308):
                    assert rec.http_headers.get_header("Location") == row["location"]
                if row["expect"] != "doc":
                    continue
                # the bytes are in the charset the manifest names, declared where it says
                text = body.decode(CODECS[row["charset"]])
                assert "<html" in text[:400] and "</html>" in text
                ctype = row["content_type"] or ""
                declared = row["declared"].split(" ")[0]
                assert ("charset=" in ctype) == ("header" in declared)
                meta = re.search(r"<meta[^>]{0,200}?charset\s*=", text[:4096], re.I) is not None
                assert meta == ("meta" in declared)
                if "wrong" not in row["declared"] and "charset=" in ctype:
                    label = ctype.split("charset=")[1]
                    assert codecs.lookup(label).name == codecs.lookup(CODECS[row["charset"]]).name
    assert seen == PAGES


def test_exact_copies_have_the_original_bytes(corpus: Path, rows: list[dict]):
    clusters = [json.loads(line) for line in gzip.decompress((corpus / "duplicates.jsonl.gz").read_bytes()).splitlines()]
    by_id = {r["record_id"]: r for r in rows}

    def payload(row: dict) -> bytes:
        with open(corpus / row["file"], "rb") as fh:
            fh.seek(row["offset"])
            rec = next(iter(ArchiveIterator(fh)))
            return rec.content_stream().read()

    types = Counter()
    for c in clusters:
        orig = by_id[c["original"]["record_id"]]
        assert orig["kind"] in ("article", "forum", "product", "docs", "qa") and orig["url"] == c["original"]["url"]
        for cp in c["copies"]:
            row = by_id[cp["record_id"]]
            assert row["n"] > orig["n"] and row["dup"]["of"] == orig["n"] and row["url"] != orig["url"]
            types[cp["type"]] += 1
            if cp["type"] == "exact_html":
                assert payload(row) == payload(orig)
            elif cp["type"] == "near":
                assert 0.0 < cp["jaccard_word5"] < 1.0 and cp["edits"]
    assert types["near"] >= 1


def test_curate_extract_keeps_the_html_pages(corpus: Path, rows: list[dict], tmp_path: Path):
    out = tmp_path / "extract"
    res = subprocess.run([str(CURATE), "extract", "--in", str(corpus), "--out", str(out), "--workers", "1", "--keep-rejected"],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr
    kept = pd.read_parquet(out)
    rejected = pd.read_parquet(out / "_rejected")
    assert len(kept) + len(rejected) == PAGES
    expect = Counter(r["expect"] for r in rows)
    reasons = Counter(rejected["reason"])
    assert reasons["not_200"] == expect["not_200"]
    assert reasons["not_html"] == expect["not_html"]
    # every HTML 200 page is a document, except the few whose main content is empty (login forms, JavaScript apps)
    assert len(kept) + reasons["empty"] == expect["doc"]
    assert len(kept) >= 0.9 * expect["doc"]
    assert set(reasons) <= {"not_200", "not_html", "empty"}
    by_id = {r["record_id"]: r for r in rows}
    assert all(by_id[i]["expect"] == "doc" for i in kept["id"])
    assert set(kept["source"]) == {"cc/CC-MAIN-2020-50"}
    assert list(kept["url"]) == [by_id[i]["url"] for i in kept["id"]]
    # the same page under another URL extracts to the same text
    text = dict(zip(kept["id"], kept["text"]))
    copies = [r for r in rows if r.get("dup", {}).get("type") == "exact_html" and r["record_id"] in text]
    for r in copies:
        orig = next(x for x in rows if x["n"] == r["dup"]["of"])
        assert text[r["record_id"]] == text[orig["record_id"]]


def test_refuses_to_overwrite_what_it_did_not_write(tmp_path: Path):
    (tmp_path / "mine.txt").write_text("keep me")
    res = build(tmp_path, tmp_path / "cache", 1, "1")
    assert res.returncode != 0 and "not a corpus of this builder" in res.stderr and "Traceback" not in res.stderr
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def test_captures_are_the_size_of_commoncrawls(corpus: Path, rows: list[dict]):
    # issue 26: ~23 KB of WARC.gz per capture as in CommonCrawl (the corpus made ~7 KB); the bulk is
    # <head> scripts and styles and an icon sprite, as on real pages, which extraction must skip
    files = sorted((corpus / "crawl-data").rglob("*.warc.gz"))
    per_page = sum(f.stat().st_size for f in files) / PAGES
    assert 17_000 < per_page < 30_000, per_page
    html = [r for r in rows if r["status"] == 200 and "html" in (r["content_type"] or "")]
    mean = sum(r["bytes"] for r in html) / len(html)
    assert 60_000 < mean < 130_000, mean  # CommonCrawl: 85 KB (2019-09) to 164 KB (2024-51) uncompressed per capture
