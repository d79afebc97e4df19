"""Dataset directories: round trip, stats, resume after a kill, a failing shard."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.dataset import read_success, resolve_inputs
from curate.errors import CurateError, ShardError
from curate.executor import LocalExecutor
from curate.formats.parquet import ParquetWriter
from curate.runtime import run
from curate.schema import BASE_SCHEMA
from curate.stages.clean import CleanStage
from tests.conftest import prose


def docs_table(n: int, start: int = 0, source: str = "pile/Wikipedia") -> pa.Table:
    return pa.Table.from_pylist(
        [{"id": f"d{start + i}", "text": prose(start + i), "source": source, "url": None, "meta": None} for i in range(n)],
        schema=BASE_SCHEMA,
    )


def make_dataset(path: Path, shards: int, per_shard: int) -> Path:
    path.mkdir(parents=True)
    for s in range(shards):
        pq.write_table(docs_table(per_shard, s * per_shard), path / f"part-{s:05d}.parquet")
    return path


def digest_dir(path: Path) -> dict[str, str]:
    """sha256 of every data file (parquet shards, kept and rejected) under ``path``."""
    return {str(f.relative_to(path)): hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(path.rglob("*.parquet"))}


def test_shard_writer_round_trip_and_atomic(tmp_path):
    t = docs_table(10)
    w = ParquetWriter(tmp_path / "part-00000.parquet")
    w.write(t.slice(0, 4))
    w.write(t.slice(4))
    assert not (tmp_path / "part-00000.parquet").exists()  # only the temporary name so far
    assert len(list(tmp_path.glob(".part-00000.parquet.tmp.*"))) == 1
    w.close()
    assert list(tmp_path.iterdir()) == [tmp_path / "part-00000.parquet"]
    back = pd.read_parquet(tmp_path / "part-00000.parquet")
    assert back["id"].tolist() == [f"d{i}" for i in range(10)]
    assert back["text"].tolist() == t.column("text").to_pylist()
    assert pq.ParquetFile(tmp_path / "part-00000.parquet").metadata.row_group(0).column(0).compression == "ZSTD"


def test_shard_writer_abort_leaves_nothing(tmp_path):
    w = ParquetWriter(tmp_path / "part-00000.parquet")
    w.write(docs_table(3))
    w.abort()
    assert list(tmp_path.iterdir()) == []


def test_map_stage_stats_and_success(tmp_path):
    src = make_dataset(tmp_path / "in", shards=3, per_shard=50)
    rec = run(CleanStage(), inputs=[str(src)], out=tmp_path / "out", executor=LocalExecutor(1))
    out = tmp_path / "out"
    assert sorted(p.name for p in out.glob("part-*.parquet")) == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    assert rec["docs_in"] == rec["docs_out"] == 150
    assert rec == read_success(out)
    assert rec["params"]["normalization"] == "NFC"
    assert rec["per_source"]["pile/Wikipedia"]["docs_out"] == 150
    per_shard = [json.loads((out / "_stats" / f"part-{i:05d}.json").read_text()) for i in range(3)]
    assert sum(s["bytes_out"] for s in per_shard) == rec["bytes_out"] > 0
    df = pd.read_parquet(out)
    assert list(df.columns)[:5] == ["id", "text", "source", "url", "meta"]
    assert len(df) == 150 and df["id"].is_unique


def test_rejected_counters_equal_rejected_rows(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    t = docs_table(20)
    texts = t.column("text").to_pylist()
    texts[3] = "   \n\t "
    texts[7] = "\x00\x01"
    t = t.set_column(1, "text", pa.array(texts, pa.large_string()))
    pq.write_table(t, src / "part-00000.parquet")
    rec = run(CleanStage(), inputs=[str(src)], out=tmp_path / "out", executor=LocalExecutor(1), keep_rejected=True)
    rej = pd.read_parquet(tmp_path / "out" / "_rejected")
    assert sorted(rej["id"]) == ["d3", "d7"]
    assert set(rej["reason"]) == {"empty"}
    assert rec["rejected"]["empty"]["docs"] == len(rej) == rec["docs_in"] - rec["docs_out"]


def test_resume_skips_done_shards_and_refuses_other_params(tmp_path):
    src = make_dataset(tmp_path / "in", shards=4, per_shard=20)
    out = tmp_path / "out"
    run(CleanStage(), inputs=[str(src)], out=out, executor=LocalExecutor(1))
    before = digest_dir(out)
    (out / "part-00002.parquet").unlink()
    (out / "_SUCCESS").unlink()
    mtime = (out / "part-00000.parquet").stat().st_mtime_ns
    run(CleanStage(), inputs=[str(src)], out=out, executor=LocalExecutor(1))
    assert digest_dir(out) == before
    assert (out / "part-00000.parquet").stat().st_mtime_ns == mtime  # not rewritten
    with pytest.raises(CurateError, match="other parameters"):
        run(CleanStage(max_blank_lines=5), inputs=[str(src)], out=out, executor=LocalExecutor(1))
    run(CleanStage(max_blank_lines=5), inputs=[str(src)], out=out, executor=LocalExecutor(1), overwrite=True)
    assert read_success(out)["params"]["max_blank_lines"] == 5


def test_overwrite_refuses_a_foreign_directory(tmp_path):
    src = make_dataset(tmp_path / "in", shards=1, per_shard=5)
    foreign = tmp_path / "home"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    with pytest.raises(CurateError, match="was not written by curate"):
        run(CleanStage(), inputs=[str(src)], out=foreign, executor=LocalExecutor(1), overwrite=True)
    assert (foreign / "thesis.tex").read_text() == "precious"


def test_resolve_inputs_errors(tmp_path):
    with pytest.raises(CurateError, match="no such file"):
        resolve_inputs([tmp_path / "missing"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(CurateError, match="no Parquet shards"):
        resolve_inputs([tmp_path / "empty"])
    unfinished = make_dataset(tmp_path / "unfinished", 1, 3)
    (unfinished / "_params.json").write_text("{}")
    with pytest.raises(CurateError, match="has not finished"):
        resolve_inputs([unfinished])


def test_one_failing_shard_keeps_the_others_and_rerun_completes(tmp_path, caplog):
    """A shard of a curate dataset that turns bad fails alone: one line naming it, the others finish, a re-run completes."""
    made = run(CleanStage(), inputs=[str(make_dataset(tmp_path / "raw", shards=4, per_shard=30))], out=tmp_path / "in",
               executor=LocalExecutor(1))  # fmt: skip
    assert made["shards"] == 4
    src = tmp_path / "in"
    good = (src / "part-00002.parquet").read_bytes()
    (src / "part-00002.parquet").write_bytes(b"PAR1 this is not parquet PAR1")
    out = tmp_path / "out"
    with pytest.raises(ShardError) as err:
        run(CleanStage(), inputs=[str(src)], out=out, executor=LocalExecutor(2))
    assert "1 of 4 shard(s) failed" in str(err.value) and [name for name, _ in err.value.failures] == ["part-00002"]
    failed = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert len(failed) == 1 and "part-00002" in failed[0] and "not a readable Parquet file" in failed[0]  # printed once
    assert sorted(p.name for p in out.glob("part-*.parquet")) == ["part-00000.parquet", "part-00001.parquet", "part-00003.parquet"]
    assert not (out / "_SUCCESS").exists()
    assert not list(out.rglob(".*tmp*"))
    (src / "part-00002.parquet").write_bytes(good)
    rec = run(CleanStage(), inputs=[str(src)], out=out, executor=LocalExecutor(2))
    assert rec["docs_out"] == 120 and rec["shards"] == 4
    assert pd.read_parquet(out)["id"].is_unique


def test_a_corrupt_foreign_file_stops_before_any_work(tmp_path):
    """Parquet files curate did not write are checked (ids) before the stage starts: nothing is written."""
    src = make_dataset(tmp_path / "in", shards=2, per_shard=5)
    (src / "part-00001.parquet").write_bytes(b"PAR1 this is not parquet PAR1")
    with pytest.raises(CurateError, match="part-00001.parquet: not a readable Parquet file"):
        run(CleanStage(), inputs=[str(src)], out=tmp_path / "out", executor=LocalExecutor(1))
    assert not list((tmp_path / "out").glob("part-*"))


def test_missing_column_names_file_and_column(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    pq.write_table(pa.table({"id": ["a"], "source": ["x"]}), src / "part-00000.parquet")
    with pytest.raises(CurateError, match="part-00000.parquet: missing column\\(s\\) text"):
        run(CleanStage(), inputs=[str(src)], out=tmp_path / "out", executor=LocalExecutor(1))
    assert not (tmp_path / "out").exists()  # checked before anything is written


def _kill_when(proc: subprocess.Popen, path: Path, pattern: str, min_files: int, timeout: float = 120) -> int:
    """SIGKILL ``proc`` once ``min_files`` files match ``pattern``; returns how many there were."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        n = len(list(path.glob(pattern))) if path.exists() else 0
        if n >= min_files or proc.poll() is not None:
            break
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return len(list(path.glob(pattern)))


def _curate(*args: str) -> list[str]:
    return [sys.executable, "-m", "curate", *map(str, args)]


@pytest.mark.slow
def test_killed_map_stage_rerun_gives_identical_output(tmp_path):
    src = make_dataset(tmp_path / "in", shards=24, per_shard=400)
    env = {**os.environ, "CURATE_PROGRESS": "log"}
    ref = tmp_path / "ref"
    subprocess.run(
        _curate("clean", "--in", src, "--out", ref, "--workers", "1", "--keep-rejected"), check=True, env=env, capture_output=True
    )
    out = tmp_path / "out"
    proc = subprocess.Popen(
        _curate("clean", "--in", src, "--out", out, "--workers", "2", "--keep-rejected"),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    done_at_kill = _kill_when(proc, out, "part-*.parquet", 3)
    assert 0 < done_at_kill < 24, "the kill must land mid-run"
    assert not (out / "_SUCCESS").exists()
    subprocess.run(
        _curate("clean", "--in", src, "--out", out, "--workers", "2", "--keep-rejected"), check=True, env=env, capture_output=True
    )
    assert digest_dir(out) == digest_dir(ref)
    assert not list(out.rglob(".*tmp*"))
    ids = pd.read_parquet(out)["id"]
    assert ids.is_unique and len(ids) == 24 * 400


@pytest.mark.parametrize("limit", [10**9, 7])
def test_id_check_finds_the_same_duplicate_in_memory_and_in_buckets(tmp_path, monkeypatch, limit):
    """Ids past CURATE_ID_CHECK_ROWS are checked bucket by bucket on disk: the same answer, memory that does not grow."""
    from curate import dataset
    from curate.dataset import check_ids

    monkeypatch.setattr(dataset, "ID_CHECK_ROWS", limit)
    files = []
    for k in range(4):
        ids = [f"doc-{k}-{i}" for i in range(25)]
        if k == 3:
            ids[20] = "doc-1-13"  # a repeat across files
        t = pa.table({"id": ids, "text": ["x"] * 25, "source": ["s"] * 25})
        pq.write_table(t, tmp_path / f"f{k}.parquet")
        files.append(tmp_path / f"f{k}.parquet")
    assert check_ids(files[:3]) == 75
    with pytest.raises(CurateError, match=r"duplicate id 'doc-1-13': .*f1.parquet row 13 and .*f3.parquet row 20"):
        check_ids(files)
