"""`curate download pile` and the CLI's error handling, on real local files."""

from __future__ import annotations

import gzip
import json
import time

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.dataset import read_success
from tests.conftest import SAMPLE, pile_rows, prose, write_jsonl_zst


def test_version_and_help(run):
    assert run("--version").stdout.strip() == "curate, version 0.1.0"
    out = run("--help").stdout
    for cmd in ("download", "clean"):
        assert cmd in out


def test_download_all_subsets(run, small_pile, tmp_path):
    res = run("download", "pile", "--dataset", small_pile, "--out", tmp_path / "out", "--shard-docs", "100")
    assert "download pile: 300 -> 300 docs" in res.stdout
    df = pd.read_parquet(tmp_path / "out")
    assert list(df.columns) == ["id", "text", "source", "url", "meta"]
    assert len(df) == 300 and df["id"].is_unique
    assert df["source"].value_counts().to_dict() == {"pile/Wikipedia": 100, "pile/ArXiv": 100, "pile/Github": 100}
    assert json.loads(df["meta"].iloc[0])["pile_set_name"] == "Wikipedia (en)"
    assert df["id"].iloc[0] == "00.jsonl.zst:1"
    assert len(list((tmp_path / "out").glob("part-*.parquet"))) == 3


def test_subset_filter_and_max_docs(run, small_pile, tmp_path):
    run(
        "download",
        "pile",
        "--dataset",
        small_pile,
        "--subset",
        "Wikipedia",
        "--subset",
        "Github",
        "--max-docs",
        "30",
        "--out",
        tmp_path / "out",
    )
    df = pd.read_parquet(tmp_path / "out")
    assert df["source"].value_counts().to_dict() == {"pile/Wikipedia": 30, "pile/Github": 30}
    rec = read_success(tmp_path / "out")
    assert rec["counters"]["skipped_subset"] > 0


def test_ids_stable_across_runs(run, small_pile, tmp_path):
    run("download", "pile", "--dataset", small_pile, "--out", tmp_path / "a")
    run("download", "pile", "--dataset", small_pile, "--out", tmp_path / "b", "--shard-docs", "7")
    a, b = pd.read_parquet(tmp_path / "a"), pd.read_parquet(tmp_path / "b")
    assert a["id"].tolist() == b["id"].tolist()
    assert a["text"].tolist() == b["text"].tolist()


def test_unknown_subset_is_one_line_error(run, small_pile, tmp_path):
    res = run("download", "pile", "--dataset", small_pile, "--subset", "Wikipeda", "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown subset 'Wikipeda'" in lines[0] and "did you mean" in lines[0]
    assert "Traceback" not in res.stderr


def test_missing_path_is_one_line_error(run, tmp_path):
    res = run("download", "pile", "--dataset", tmp_path / "nope" / "x.jsonl", "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 1
    assert res.stderr.strip().count("\n") == 0 and "no such file or directory" in res.stderr


def test_missing_option_is_one_line_usage_error(run):
    res = run("clean", "--out", "x", ok=False)
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines() == ["curate clean: error: Missing option '--in'. (see 'curate clean --help')"]


def test_file_that_is_not_json(run, tmp_path):
    bad = tmp_path / "notjson.jsonl"
    bad.write_text("\n".join(f"this is line {i} of a plain text file" for i in range(50)))
    res = run("download", "pile", "--dataset", bad, "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 1
    assert "notjson.jsonl: not a JSON-lines file" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "o" / "_SUCCESS").exists()


def test_corrupt_zst(run, tmp_path):
    good = write_jsonl_zst(tmp_path / "d" / "00.jsonl.zst", pile_rows(400, ["ArXiv"]))
    data = bytearray(good.read_bytes())
    for i in range(len(data) // 2, len(data) // 2 + 64):
        data[i] ^= 0xFF
    good.write_bytes(bytes(data))
    res = run("download", "pile", "--dataset", good, "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 1
    assert "00.jsonl.zst: cannot read compressed data" in res.stderr


def test_truncated_gzip(run, tmp_path):
    f = tmp_path / "d.json.gz"
    f.write_bytes(gzip.compress("\n".join(json.dumps(r) for r in pile_rows(300, ["ArXiv"])).encode())[:-200])
    res = run("download", "pile", "--dataset", f, "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 1 and "d.json.gz: cannot read compressed data" in res.stderr


def test_malformed_lines_are_counted_and_kept_aside(run, tmp_path):
    rows: list = pile_rows(20, ["ArXiv"])
    rows.insert(3, '{"text": "unterminated')
    rows.insert(9, '["a list, not an object"]')
    rows.insert(12, '{"meta": {"pile_set_name": "ArXiv"}}')
    f = write_jsonl_zst(tmp_path / "d" / "x.jsonl.zst", rows)
    res = run("download", "pile", "--dataset", f, "--out", tmp_path / "o", "--keep-rejected")
    assert "rejected: bad_record 3" in res.stdout
    assert "x.jsonl.zst:4: malformed JSON" in res.stderr and "x.jsonl.zst:10: not a JSON object" in res.stderr
    rej = pd.read_parquet(tmp_path / "o" / "_rejected")
    assert sorted(rej["id"]) == ["x.jsonl.zst:10", "x.jsonl.zst:13", "x.jsonl.zst:4"]
    assert set(rej["reason"]) == {"bad_record"}
    assert len(pd.read_parquet(tmp_path / "o")) == 20


def test_invalid_utf8_is_repaired_and_counted(run, tmp_path):
    f = tmp_path / "x.jsonl"
    good = json.dumps({"text": prose(1), "meta": {"pile_set_name": "ArXiv"}}).encode()
    bad = b'{"text": "caf\xe9 ol\xff", "meta": {"pile_set_name": "ArXiv"}}'
    f.write_bytes(good + b"\n" + bad + b"\n")
    run("download", "pile", "--dataset", f, "--out", tmp_path / "o")
    df = pd.read_parquet(tmp_path / "o")
    assert df["text"].iloc[1] == "caf\ufffd ol\ufffd"
    assert read_success(tmp_path / "o")["counters"]["invalid_utf8_repaired"] == 1


def test_parquet_input_with_struct_meta(run, tmp_path):
    t = pa.table({"text": [prose(i) for i in range(5)], "meta": [{"pile_set_name": "Github"}] * 5})
    pq.write_table(t, tmp_path / "x.parquet")
    run("download", "pile", "--dataset", tmp_path / "x.parquet", "--out", tmp_path / "o")
    df = pd.read_parquet(tmp_path / "o")
    assert set(df["source"]) == {"pile/Github"} and len(df) == 5


def test_hub_loader_through_datasets(run, tmp_path, monkeypatch):
    """The hub code path (`datasets` streaming), pointed at a local dataset directory."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    d = tmp_path / "hubds" / "data"
    d.mkdir(parents=True)
    (d / "train-00000.jsonl").write_text("\n".join(json.dumps(r) for r in pile_rows(40, ["ArXiv", "Github"])) + "\n")
    run("download", "pile", "--loader", "hub", "--dataset", tmp_path / "hubds", "--subset", "ArXiv", "--out", tmp_path / "o")
    df = pd.read_parquet(tmp_path / "o")
    assert len(df) == 20 and set(df["source"]) == {"pile/ArXiv"}
    assert df["id"].iloc[0].endswith(":train:0")


def test_hub_name_without_a_hub_is_a_quick_clear_error(run, tmp_path, monkeypatch):
    """No network: one line at once, not ~25 s of datasets' retries and warnings."""
    monkeypatch.setenv("HF_ENDPOINT", "http://hub.invalid")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    t0 = time.monotonic()
    res = run("download", "pile", "--dataset", "nobody/no-such-dataset", "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 1 and time.monotonic() - t0 < 10
    assert "dataset 'nobody/no-such-dataset': cannot reach the hub at hub.invalid" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o" / "_SUCCESS").exists()


@pytest.mark.skipif(not (SAMPLE / "pile").exists(), reason="sample_data/pile not built")
def test_sample_data_subsets(run, tmp_path):
    run(
        "download",
        "pile",
        "--dataset",
        SAMPLE / "pile",
        "--subset",
        "Wikipedia (en)",
        "--subset",
        "Gutenberg (PG-19)",
        "--max-docs",
        "25",
        "--out",
        tmp_path / "o",
    )
    df = pd.read_parquet(tmp_path / "o")
    assert df["source"].value_counts().to_dict() == {"pile/Wikipedia": 25, "pile/Gutenberg_PG-19": 25}


def test_truncated_zst(run, tmp_path):
    good = write_jsonl_zst(tmp_path / "d" / "00.jsonl.zst", pile_rows(400, ["ArXiv"]))
    good.write_bytes(good.read_bytes()[:-300])
    res = run("download", "pile", "--dataset", good, "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 1
    assert "00.jsonl.zst: cannot read compressed data (EOFError: truncated zstd stream" in res.stderr
