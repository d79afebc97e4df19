"""`curate import`: files written the way FineWeb, Dolma, datatrove, RedPajama-V2 and `datasets` write them, built here.

Every input is made in the test (pyarrow, `datasets`, plain JSON, gzip, zstandard) in the field
layout those tools really use; nothing needs the internet. The round trip (Parquet -> JSON lines
-> import -> JSON lines) is byte-stable and gives back the documents column for column.
"""

from __future__ import annotations

import gzip
import json
import math
import subprocess
import sys

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from curate.dataset import read_success, read_table
from tests.conftest import ROOT, prose

# --------------------------------------------------------------------------- inputs in the ecosystem's layouts


def fineweb_rows(n: int, flavour: str = "fineweb", start: int = 0) -> list[dict]:
    """FineWeb's columns (datatrove's ParquetWriter with its metadata expanded); -Edu and -2 add their own."""
    rows = []
    for i in range(start, start + n):
        row = {"text": prose(i, 80), "id": f"<urn:uuid:{i:08x}-0000-4000-8000-000000000000>", "dump": "CC-MAIN-2024-10",
               "url": f"https://example.org/page/{i}", "date": "2024-02-21T04:05:06Z",
               "file_path": "s3://commoncrawl/crawl-data/CC-MAIN-2024-10/segments/1707947473347.0/warc/CC-MAIN-x.warc.gz",
               "language": "en", "language_score": 0.9 + (i % 10) / 100}  # fmt: skip
        if flavour == "fineweb-2":
            row.update(language="fra", language_script="Latn", minhash_cluster_size=i % 4 + 1, top_langs='{"fra_Latn_score": 0.98}')
        else:
            row["token_count"] = 100 + i
        if flavour == "fineweb-edu":
            row.update(score=2.5 + (i % 5) / 4, int_score=3)
        rows.append(row)
    return rows


def write_parquet(path, rows: list[dict], schema: pa.Schema | None = None):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path


def write_lines(path, rows: list, compress: str | None = None):
    """JSON lines (dicts as JSON, str and bytes as they are), plain, gzip or zstd."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join((r if isinstance(r, bytes) else (r if isinstance(r, str) else json.dumps(r)).encode()) + b"\n" for r in rows)
    if compress == "gz":
        data = gzip.compress(data)
    elif compress == "zst":
        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)
    return path


def dolma_rows(n: int, source: str = "common-crawl", start: int = 0) -> list[dict]:
    return [{"id": f"{source}-{i}", "text": prose(i, 60), "source": source, "added": "2023-08-01T00:00:00.000Z",
             "created": "2020-01-01T00:00:00.000Z", "version": "v1",
             "metadata": {"url": f"http://news.example.com/{i}", "warc_date": "2020-01-01", "length": 300 + i}}
            for i in range(start, start + n)]  # fmt: skip


def redpajama_doc(i: int) -> dict:
    """A line of a RedPajama-V2 documents file (CCNet's output: no id field)."""
    return {"url": f"https://blog.example.net/{i}", "date_download": "2023-02-01T00:00:00Z", "digest": f"sha1:{i:032d}",
            "length": 400, "nlines": 4, "source_domain": "blog.example.net", "title": f"Post {i}", "raw_content": prose(i, 70),
            "cc_segment": "crawl-data/CC-MAIN-2023-06/segments/x/wet/y.warc.wet.gz", "original_nlines": 9, "original_length": 900,
            "line_ids": [0, 2, 3, 5], "language": "en", "language_score": 0.93, "perplexity": 250.5, "bucket": "head"}  # fmt: skip


def imported(path) -> pd.DataFrame:
    return pd.read_parquet(path).set_index("id", drop=False)


# --------------------------------------------------------------------------- the layouts


@pytest.mark.parametrize("flavour", ["fineweb", "fineweb-edu", "fineweb-2"])
def test_fineweb_parquet_keeps_ids_urls_and_every_field(run, tmp_path, flavour):
    rows = fineweb_rows(40, flavour)
    f = write_parquet(tmp_path / flavour / "000_00000.parquet", rows)
    res = run("import", "--dataset", f, "--out", tmp_path / "o", "--shard-docs", 15)
    assert "fineweb layout (detected)" in res.stderr and "import: 40 -> 40 docs" in res.stdout
    df = imported(tmp_path / "o")
    assert list(df.columns) == ["id", "text", "source", "url", "meta"]
    assert list(df["id"]) == [r["id"] for r in rows] and list(df["url"]) == [r["url"] for r in rows]
    assert set(df["source"]) == {"import/000_00000"}  # FineWeb's dump is not a source
    meta = json.loads(df["meta"].iloc[3])
    assert meta == {k: v for k, v in rows[3].items() if k not in ("text", "id", "url")}
    assert list(meta) == [k for k in rows[3] if k not in ("text", "id", "url")]  # the file's order
    assert len(list((tmp_path / "o").glob("part-*.parquet"))) == 3


def test_fineweb_through_urlfilter_keeps_its_urls(run, tmp_path):
    """The issue's first case: the URL that urlfilter needs arrives."""
    rows = fineweb_rows(20)
    rows[4]["url"] = "http://pornhub.com/x"
    run("import", "--dataset", write_parquet(tmp_path / "fineweb.parquet", rows), "--source", "web/fineweb", "--out", tmp_path / "i")
    run("urlfilter", "--in", tmp_path / "i", "--out", tmp_path / "u", "--workers", 1)
    df = imported(tmp_path / "u")
    assert len(df) == 19 and rows[4]["id"] not in df.index and set(df["source"]) == {"web/fineweb"}


@pytest.mark.parametrize("compress", ["gz", "zst", None])
def test_dolma_jsonl_keeps_its_source_ids_and_metadata_url(run, tmp_path, compress):
    name = {"gz": "0000.json.gz", "zst": "0000.jsonl.zst", None: "0000.jsonl"}[compress]
    rows = dolma_rows(10, "common-crawl") + dolma_rows(10, "c4", start=10)
    f = write_lines(tmp_path / "documents" / "2019-09" / name, rows, compress)
    res = run("import", "--dataset", tmp_path / "documents", "--out", tmp_path / "o")
    assert "dolma layout (detected)" in res.stderr
    df = imported(tmp_path / "o")
    assert df["source"].value_counts().to_dict() == {"common-crawl": 10, "c4": 10}
    r = rows[12]
    assert df.loc[r["id"], "url"] == r["metadata"]["url"] and df.loc[r["id"], "text"] == r["text"]
    assert json.loads(df.loc[r["id"], "meta"]) == {"warc_date": "2020-01-01", "length": 312, "added": r["added"],
                                                   "created": r["created"], "version": "v1"}  # fmt: skip
    assert f.exists()


def test_datatrove_jsonl_and_parquet_writers(run, tmp_path):
    """datatrove's writers: {text, id, metadata} (JSON lines) and a metadata struct (Parquet); no source field."""
    docs = [{"text": prose(i), "id": f"dt-{i}", "metadata": {"dump": "CC-MAIN-2023-50", "url": f"https://dt.example/{i}", "date": "x"}}
            for i in range(6)]  # fmt: skip
    write_lines(tmp_path / "j" / "00000.jsonl.gz", docs, "gz")
    write_parquet(tmp_path / "p" / "00000.parquet", docs)
    for d in ("j", "p"):
        res = run("import", "--dataset", tmp_path / d, "--source", "web/dt", "--out", tmp_path / f"o{d}")
        df = imported(tmp_path / f"o{d}")
        assert list(df["url"]) == [f"https://dt.example/{i}" for i in range(6)] and set(df["source"]) == {"web/dt"}
        assert json.loads(df["meta"].iloc[0]) == {"dump": "CC-MAIN-2023-50", "date": "x"}
        assert "url=metadata.url source=web/dt;" in res.stderr
    assert read_table(tmp_path / "oj").equals(read_table(tmp_path / "op"))


def test_redpajama_v2_documents_files_get_redpajamas_own_ids(run, tmp_path):
    docs = tmp_path / "rpv2" / "documents"
    write_lines(docs / "2023-06" / "0000" / "en_head.json.gz", [redpajama_doc(i) for i in range(5)], "gz")
    write_lines(docs / "2023-06" / "0001" / "en_middle.json.gz", [redpajama_doc(i) for i in range(5, 8)], "gz")
    res = run("import", "--dataset", docs, "--source", "web/rpv2", "--out", tmp_path / "o")
    assert "redpajama layout (detected)" in res.stderr
    df = imported(tmp_path / "o")
    assert list(df["id"][:2]) == ["2023-06/0000/en_head.json.gz/0", "2023-06/0000/en_head.json.gz/1"]  # as its quality signals name them
    assert df["id"].iloc[5] == "2023-06/0001/en_middle.json.gz/0"
    assert df["url"].iloc[6] == "https://blog.example.net/6" and df["text"].iloc[6] == redpajama_doc(6)["raw_content"]
    meta = json.loads(df["meta"].iloc[0])
    assert meta["line_ids"] == [0, 2, 3, 5] and meta["perplexity"] == 250.5 and "raw_content" not in meta and "url" not in meta


def test_redpajama_v2_hub_rows_url_inside_the_meta_json_string(run, tmp_path):
    """The hub loader's rows: raw_content, doc_id, meta (a JSON string holding the URL), quality_signals (a JSON string)."""
    rows = [{"raw_content": prose(i), "doc_id": f"2023-06/0000/en_head.json.gz/{i}",
             "meta": json.dumps({"url": f"https://rp.example/{i}", "partition": "head_middle", "language": "en",
                                 "source_domain": "rp.example", "date_download": "2023-02-01", "digest": f"sha1:{i}"}),
             "quality_signals": json.dumps({"ccnet_length": [[0, 100, 100.0]], "is_duplicate": False})} for i in range(4)]  # fmt: skip
    run("import", "--dataset", write_parquet(tmp_path / "rp.parquet", rows), "--out", tmp_path / "o")
    df = imported(tmp_path / "o")
    assert list(df["id"]) == [r["doc_id"] for r in rows] and df["url"].iloc[2] == "https://rp.example/2"
    meta = json.loads(df["meta"].iloc[2])
    assert meta["partition"] == "head_middle" and "url" not in meta and json.loads(meta["quality_signals"])["is_duplicate"] is False


def test_plain_text_records_get_stable_new_ids(run, tmp_path):
    f = write_lines(tmp_path / "mine" / "notes.jsonl", [{"text": prose(i), "lang_hint": "en"} for i in range(5)])
    res = run("import", "--dataset", f, "--out", tmp_path / "a")
    assert "plain layout (detected)" in res.stderr and "5 new ids" in res.stdout
    run("import", "--dataset", f, "--source", "mine/notes", "--shard-docs", 2, "--out", tmp_path / "b")
    a, b = imported(tmp_path / "a"), imported(tmp_path / "b")
    assert list(a["id"]) == list(b["id"]) == [f"notes.jsonl:{n}" for n in range(1, 6)]
    assert set(a["source"]) == {"import/notes"} and set(b["source"]) == {"mine/notes"}
    assert json.loads(a["meta"].iloc[0]) == {"lang_hint": "en"} and a["url"].isna().all()


def test_save_to_disk_directories(run, tmp_path):
    import datasets

    rows = fineweb_rows(12)
    datasets.Dataset.from_list(rows).save_to_disk(str(tmp_path / "saved"))
    datasets.DatasetDict({"train": datasets.Dataset.from_list(rows[:5]), "test": datasets.Dataset.from_list(rows[5:])}).save_to_disk(
        str(tmp_path / "saved_dict")
    )
    run("import", "--dataset", tmp_path / "saved", "--out", tmp_path / "o")
    df = imported(tmp_path / "o")
    assert list(df["id"]) == [r["id"] for r in rows] and json.loads(df["meta"].iloc[0])["dump"] == "CC-MAIN-2024-10"
    run("import", "--dataset", tmp_path / "saved_dict", "--split", "test", "--new-ids", "--out", tmp_path / "t")
    df = imported(tmp_path / "t")
    assert list(df["id"])[:2] == ["saved_dict:test:0", "saved_dict:test:1"] and len(df) == 7
    assert json.loads(df["meta"].iloc[0])["id"] == rows[5]["id"]  # --new-ids: the old id stays in meta
    res = run("import", "--dataset", tmp_path / "saved_dict", "--split", "validation", "--out", tmp_path / "v", ok=False)
    assert res.exit_code == 1 and "no split 'validation' in this saved dataset (has: train, test)" in res.stderr


def test_hub_code_path_on_a_local_dataset(run, tmp_path, monkeypatch):
    """`datasets.load_dataset(..., streaming=True)`, pointed at a script-free dataset directory (offline)."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    write_parquet(tmp_path / "hubds" / "data" / "train-00000-of-00001.parquet", fineweb_rows(30, "fineweb-edu"))
    run("import", "--loader", "hub", "--dataset", tmp_path / "hubds", "--max-docs", 12, "--out", tmp_path / "o")
    df = imported(tmp_path / "o")
    assert len(df) == 12 and df["id"].iloc[0] == fineweb_rows(1)[0]["id"] and json.loads(df["meta"].iloc[0])["int_score"] == 3


# --------------------------------------------------------------------------- fields by name


def test_named_fields_and_dotted_paths(run, tmp_path):
    rows = [{"body": {"content": prose(i)}, "info": json.dumps({"link": f"https://x.example/{i}", "n": i}), "key": 1000 + i,
             "origin": "forum"} for i in range(4)]  # fmt: skip
    f = write_lines(tmp_path / "odd.jsonl", rows)
    res = run("import", "--dataset", f, "--out", tmp_path / "bad", ok=False)
    assert res.exit_code == 1 and res.stderr.count("\n") == 1
    assert "cannot tell the layout of its records (fields: body, info, key, origin)" in res.stderr
    run("import", "--dataset", f, "--text-field", "body.content", "--id-field", "key", "--url-field", "info.link",
        "--source-field", "origin", "--out", tmp_path / "o")  # fmt: skip
    df = imported(tmp_path / "o")
    assert list(df["id"]) == ["1000", "1001", "1002", "1003"]  # an integer id is read as a string
    assert df["url"].iloc[1] == "https://x.example/1" and set(df["source"]) == {"forum"} and df["text"].iloc[0] == prose(0)
    assert json.loads(df["meta"].iloc[2]) == {"body": {}, "info": {"n": 2}}
    res = run("import", "--dataset", f, "--text-field", "body.text", "--out", tmp_path / "x", ok=False)
    assert "--text-field body.text: no such field in its first record (fields: body, info, key, origin)" in res.stderr


def test_a_file_two_layouts_fit_is_a_one_line_error(run, tmp_path):
    f = write_parquet(tmp_path / "mixed.parquet", [{"text": "a b c", "id": "1", "dump": "CC-MAIN-2024-10", "source": "s", "x": 1}])
    res = run("import", "--dataset", f, "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 1 and res.stderr.count("\n") == 1
    assert "fit the fineweb and the dolma layouts (fields: text, id, dump, source, x); choose one with --layout" in res.stderr
    run("import", "--dataset", f, "--layout", "dolma", "--out", tmp_path / "o")
    assert imported(tmp_path / "o")["source"].iloc[0] == "s"


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("spec", ["missing.jsonl", "missing.parquet", "no/such/dir/*.jsonl.gz"])
def test_a_wrong_path_says_no_such_file_not_the_hub(run, tmp_path, spec, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = run("import", "--dataset", spec, "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 1 and f"{spec}: no such file or directory" in res.stderr and "hub" not in res.stderr


def test_bad_records_are_counted_under_named_reasons(run, tmp_path):
    lines = [{"id": "a", "text": "good one"}, "{not json", "[1, 2]", {"id": "b"}, {"id": "c", "text": 7},
             b'{"id": "d", "text": "bad \xff byte"}', '{"id": "e", "text": "lone \\ud800 surrogate"}', {"id": "f", "text": "good two"}]  # fmt: skip
    f = write_lines(tmp_path / "bad.jsonl", lines)
    res = run("import", "--dataset", f, "--out", tmp_path / "o", "--keep-rejected")
    assert "import: 8 -> 2 docs" in res.stdout
    rec = read_success(tmp_path / "o")
    assert {r: v["docs"] for r, v in rec["rejected"].items()} == {"malformed_json": 1, "not_an_object": 1, "no_text": 1,
                                                                   "text_not_string": 1, "invalid_utf8": 2}  # fmt: skip
    assert "bad.jsonl line 2: malformed JSON" in res.stderr and "bad.jsonl line 6: invalid UTF-8, skipped (invalid_utf8)" in res.stderr
    rejected = pq.read_table(tmp_path / "o" / "_rejected").to_pandas()
    assert list(rejected["id"]) == ["bad.jsonl:2", "bad.jsonl:3", "bad.jsonl:4", "bad.jsonl:5", "d", "e"]  # their own ids, when read
    assert rejected["text"].iloc[0] == "{not json" and rejected["text"].iloc[4] == "bad \ufffd byte"
    assert list(imported(tmp_path / "o")["id"]) == ["a", "f"]
    run("import", "--dataset", f, "--out", tmp_path / "r", "--invalid-utf8", "repair")
    df = imported(tmp_path / "r")
    assert df.loc["d", "text"] == "bad \ufffd byte" and df.loc["e", "text"] == "lone \ufffd surrogate"
    assert read_success(tmp_path / "r")["counters"]["invalid_utf8_repaired"] == 2


def test_invalid_utf8_in_parquet_is_rejected_not_a_crash(run, tmp_path):
    t = pa.table({"id": ["a", "b", "c"], "text": pa.array([b"fine", b"bro\xed\xa0\x80ken", b"ok"], pa.binary()).view(pa.string())})
    pq.write_table(t, tmp_path / "u.parquet")
    res = run("import", "--dataset", tmp_path / "u.parquet", "--out", tmp_path / "o")
    assert "import: 3 -> 2 docs" in res.stdout and "rejected: invalid_utf8 1" in res.stdout


def test_a_file_of_no_documents_fails_with_its_reason(run, tmp_path):
    f = write_lines(tmp_path / "t.jsonl", [{"text": 1, "id": str(i)} for i in range(5)])
    res = run("import", "--dataset", f, "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 1 and "kept no document: 5 of 5 records failed with text_not_string" in res.stderr


# --------------------------------------------------------------------------- ids


def test_duplicate_and_null_ids_are_one_line_errors_naming_file_and_row(run, tmp_path):
    write_parquet(tmp_path / "d" / "a.parquet", fineweb_rows(5))
    write_lines(tmp_path / "d" / "b.jsonl", [{"text": "x y", "id": "z"}, {"text": "again", "id": fineweb_rows(5)[3]["id"]}])
    res = run("import", "--dataset", tmp_path / "d", "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 1 and res.stderr.strip().splitlines()[-1].startswith("curate: error: duplicate id")
    assert f"a.parquet row 3 and {tmp_path / 'd' / 'b.jsonl'} line 2" in res.stderr and not (tmp_path / "o" / "_SUCCESS").exists()
    run("import", "--dataset", tmp_path / "d", "--out", tmp_path / "o", "--new-ids", "--overwrite")
    assert list(imported(tmp_path / "o")["id"]) == [f"a.parquet:{n}" for n in range(1, 6)] + ["b.jsonl:1", "b.jsonl:2"]
    write_lines(tmp_path / "n.jsonl", [{"text": "x", "id": "1"}, {"text": "y", "id": None}])
    res = run("import", "--dataset", tmp_path / "n.jsonl", "--out", tmp_path / "n", ok=False)
    assert res.exit_code == 1 and "n.jsonl line 2: id is null; every document needs a string or integer id" in res.stderr.splitlines()[-1]


# --------------------------------------------------------------------------- the way back: curate's JSON lines


def _curate_table() -> pa.Table:
    """Documents as curate's stages leave them: every added column, and meta in every shape it takes."""
    metas = [json.dumps({"dump": "CC-MAIN-2024-10", "n": 1.5, "é": "ü"}, ensure_ascii=False), None, "{}", "not json at all", "[1, 2]",
             json.dumps({"lang": "collides with a column", "x": 1}), json.dumps({"url": "a url inside meta"}), json.dumps({"meta": 3}),
             json.dumps({"nested": {"deep": [1, {"k": None}]}})]  # fmt: skip
    n = len(metas)
    return pa.table({
        "id": [f"doc-{i}" for i in range(n)], "text": pa.array([prose(i, 20) for i in range(n)], pa.large_string()),
        "source": ["cc/CC-MAIN-2020-50", "pile/ArXiv"] * (n // 2) + ["pile/ArXiv"] * (n % 2),
        "url": [f"https://e.example/{i}" if i % 3 else None for i in range(n)], "meta": metas,
        "lang": ["en", "de", None] * (n // 3), "lang_score": pa.array([0.1, 0.97, None, 1.0, 0.333333, 5e-06, 0.5, 0.7, 0.9], pa.float32()),
        "quality_score": pa.array([0.25] * n, pa.float32()), "dup_cluster": [None, "c1", None, None, "c1", None, None, None, None],
    }, schema=pa.schema([pa.field("id", pa.string(), nullable=False), pa.field("text", pa.large_string(), nullable=False),
                         pa.field("source", pa.string(), nullable=False), pa.field("url", pa.string()), pa.field("meta", pa.string()),
                         pa.field("lang", pa.string()), pa.field("lang_score", pa.float32()), pa.field("quality_score", pa.float32()),
                         pa.field("dup_cluster", pa.string())]))  # fmt: skip


def _lines(d) -> list[bytes]:
    return [gzip.decompress(f.read_bytes()) for f in sorted(d.glob("part-*.jsonl.gz"))]


def test_curate_jsonl_round_trip_is_byte_stable_and_column_for_column(run, tmp_path):
    orig = _curate_table()
    pq.write_table(orig, tmp_path / "docs.parquet")
    run("import", "--dataset", tmp_path / "docs.parquet", "--format", "jsonl", "--shard-docs", 4, "--out", tmp_path / "j1")
    first = [json.loads(line) for part in _lines(tmp_path / "j1") for line in part.splitlines()]
    assert [set(d) for d in first] == [{"id", "text", "source", "metadata"}] * len(first)  # Dolma's and datatrove's shape
    assert first[0]["metadata"] == {"dump": "CC-MAIN-2024-10", "n": 1.5, "é": "ü", "url": None, "lang": "en", "lang_score": 0.1,
                                    "quality_score": 0.25, "dup_cluster": None}  # fmt: skip
    assert first[5]["metadata"]["meta"] == {"lang": "collides with a column", "x": 1} and first[3]["metadata"]["meta"] == "not json at all"
    assert '"lang_score":5e-06,' in _lines(tmp_path / "j1")[1].decode()  # float32 as its shortest decimal
    res = run("import", "--dataset", tmp_path / "j1", "--out", tmp_path / "p2")
    assert "curate layout" in res.stderr
    back = read_table(tmp_path / "p2")
    assert back.schema == orig.schema and back.equals(orig)
    run("import", "--dataset", tmp_path / "j1", "--format", "jsonl", "--shard-docs", 4, "--out", tmp_path / "j2")
    assert _lines(tmp_path / "j2") == _lines(tmp_path / "j1")
    assert math.isclose(first[6]["metadata"]["lang_score"], 0.5) and first[6]["metadata"]["meta"] == {"url": "a url inside meta"}


def test_import_filter_jsonl_import_keeps_ids_urls_and_meta(run, tmp_path):
    """The issue's round trip: a FineWeb file through langid and filter, out as JSON lines, and back in."""
    rows = fineweb_rows(60)
    rows[7]["text"] = "too short"
    f = write_parquet(tmp_path / "fineweb.parquet", rows)
    run("import", "--dataset", f, "--out", tmp_path / "i", "--shard-docs", 25)
    run("langid", "--in", tmp_path / "i", "--out", tmp_path / "l", "--workers", 1)
    run("filter", "--in", tmp_path / "l", "--out", tmp_path / "f", "--workers", 1)
    run("filter", "--in", tmp_path / "l", "--out", tmp_path / "fj", "--workers", 1, "--format", "jsonl")
    res = run("filter", "--in", tmp_path / "fj", "--out", tmp_path / "x", ok=False)
    assert "read it back with `curate import`" in res.stderr
    run("import", "--dataset", tmp_path / "fj", "--out", tmp_path / "back")
    want, got = read_table(tmp_path / "f"), read_table(tmp_path / "back")
    assert got.schema == want.schema and got.equals(want) and 0 < got.num_rows < 60
    df = got.to_pandas().set_index("id")
    r = rows[10]
    assert df.loc[r["id"], "url"] == r["url"] and json.loads(df.loc[r["id"], "meta"])["file_path"] == r["file_path"]
    run("import", "--dataset", tmp_path / "back", "--format", "jsonl", "--out", tmp_path / "fj2")
    assert b"".join(_lines(tmp_path / "fj2")) == b"".join(_lines(tmp_path / "fj"))


# --------------------------------------------------------------------------- runtime behaviour


def test_rerun_is_nothing_to_do_and_a_changed_file_starts_again(run, tmp_path):
    f = write_parquet(tmp_path / "fineweb.parquet", fineweb_rows(10))
    run("import", "--dataset", f, "--out", tmp_path / "o")
    res = run("import", "--dataset", f, "--out", tmp_path / "o")
    assert "nothing to do" in res.stderr
    write_parquet(f, fineweb_rows(12))
    res = run("import", "--dataset", f, "--out", tmp_path / "o")
    assert "was made from other inputs" in res.stderr and len(imported(tmp_path / "o")) == 12
    res = run("import", "--dataset", tmp_path / "o", "--out", tmp_path / "o" / "inside", ok=False)
    assert "lies inside the input" in res.stderr


def test_command_lookup_imports_only_its_module():
    code = ("import sys; from curate.registry import stages; stages.get('import'); "
            "print(sorted(m for m in sys.modules if m.startswith(('curate.stages.', 'curate.dedup', 'curate.decontam'))))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "['curate.stages.importer']"


@pytest.mark.slow
def test_memory_does_not_grow_with_the_input(tmp_path):
    from tests.test_hardening import curate, report_rss, run_measured

    peaks = []
    for n in (5_000, 20_000):
        f = write_lines(tmp_path / f"{n}.jsonl.gz", [{"id": f"d{i}", "text": prose(i, 300), "url": f"u{i}"} for i in range(n)], "gz")
        p, mb = run_measured(curate("--quiet", "import", "--dataset", f, "--shard-docs", 1000, "--out", tmp_path / f"o{n}"))
        assert p.returncode == 0, p.stderr
        report_rss(f"import of {n:,} documents", mb)
        peaks.append(mb)
    assert peaks[1] < peaks[0] + 40, peaks  # 4x the input (~35 MB more text), not 4x the memory
