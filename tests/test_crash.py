"""Crash safety of every stage: SIGKILL at several points, re-run, compare with an uninterrupted run.

Each case runs the stage once uninterrupted (the reference, one worker), then runs it again
into another directory (with two worker processes for some stages) and SIGKILLs the whole
process group when a chosen
output file appears (a phase file under ``_work/``, a piece, a shard, a partial download),
re-runs it and kills it again at a later point, and finally lets it finish. After every kill:
no ``_SUCCESS`` (or the stage's own completion marker), and every file under a final name is
complete (Parquet shards read whole, Megatron pairs pass their check). At the end the data
files are byte for byte the reference's, no temporary file is left, and no document is lost
or duplicated. Inputs are small (a few seconds per stage); the stage runs at nice +5 so the
watcher sees each file appear before the stage can finish.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate import megatron
from curate.dataset import read_table
from tests.conftest import pile_rows, prose, write_jsonl_zst
from tests.httpserver import Fault, FaultServer
from tests.test_download_cc import make_tree
from tests.test_extract import make_warc, pages

pytestmark = pytest.mark.slow
ENV = {**os.environ, "CURATE_PROGRESS": "log"}
LID = Path(__file__).resolve().parents[1] / "curate" / "resources" / "lid.176.ftz"
SHARDS, PER_SHARD = 12, 100


def curate(*args: object) -> list[str]:
    return [sys.executable, "-m", "curate", "--quiet", *map(str, args)]


def data_digest(root: Path, patterns: tuple[str, ...] = ("*.parquet", "*.bin", "*.idx", "*.warc.gz")) -> dict[str, str]:
    """sha256 of every data file under ``root`` (not stats or logs, which hold timings)."""
    files = sorted({f for p in patterns for f in root.rglob(p) if f.is_file() and "_work" not in f.parts and ".work" not in f.name})
    return {str(f.relative_to(root)): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}


def _count(root: Path, pattern: str) -> int:
    return len(list(root.glob(pattern))) if root.exists() else 0


def _size(root: Path, pattern: str) -> int:
    return sum(f.stat().st_size for f in root.glob(pattern)) if root.exists() else 0


def kill_when(cmd: list[str], ready, timeout: float = 120) -> bool:
    """Start ``cmd`` in its own process group; SIGKILL the group once ``ready()``; True if the kill landed mid-run."""
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=lambda: os.nice(5))  # fmt: skip
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if ready():
                break
            if proc.poll() is not None:
                return False
            time.sleep(0.002)
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    if proc.returncode != -signal.SIGKILL:
        raise AssertionError(f"the stage ended before the kill (exit {proc.returncode}): {proc.stderr.read().decode()[-2000:]}")
    return True


def check_after_kill(out: Path, marker: Path) -> None:
    """What must hold at any moment: no completion marker before the end, no half-written file under a final name."""
    assert not marker.exists(), f"{marker} exists after a kill mid-run"
    for f in out.rglob("*.parquet") if out.is_dir() else []:
        if not f.name.startswith("."):
            pq.read_table(f)  # a file under its final name is whole
    for idx in (out.parent if not out.is_dir() else out).rglob("*.idx"):
        # work pieces are judged by their .json marker, and a finished stage deletes its work directory (in any order)
        if not idx.name.startswith(".") and not any(part == "_work" or part.endswith(".work") for part in idx.parts):
            megatron.IndexedDataset(str(idx)[:-4]).check()


# --------------------------------------------------------------------------- inputs


def _docs_table(shard: int, evals: list[str]) -> pa.Table:
    rows = []
    for j in range(PER_SHARD):
        i = shard * PER_SHARD + j
        text = prose(i, 160 + (i % 5) * 40)
        if i % 10 == 3 and i >= 20:
            text = prose(i - 13, 160 + ((i - 13) % 5) * 40)  # an exact duplicate of an earlier document
        if i % 17 == 0:
            text = f"{text} {evals[i % len(evals)]} {prose(i + 5000, 80)}"  # contaminated
        source = ("pile/Wikipedia", "pile/ArXiv", "cc/CC-MAIN-2020-50")[i % 3]
        rows.append({"id": f"doc-{i:05d}", "text": text, "source": source, "url": None, "meta": None})
    return pa.Table.from_pylist(rows)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("crash")
    evals = [prose(90_000 + k, 30) for k in range(10)]
    (root / "eval.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in evals))
    docs = root / "docs"
    docs.mkdir()
    for s in range(SHARDS):
        pq.write_table(_docs_table(s, evals), docs / f"part-{s:05d}.parquet")
    for k in range(3):  # blend sources: three dataset directories
        d = root / f"src{k}"
        d.mkdir()
        for s in range(4):
            pq.write_table(_docs_table(k * 4 + s, evals), d / f"part-{s:05d}.parquet")
    (root / "blend.yaml").write_text(
        "total_tokens: 150000\nseed: 7\nsources:\n"
        + "".join(f"  - {{name: src{k}, path: {root / f'src{k}'}, weight: {k + 1}}}\n" for k in range(3))
    )
    for f in range(3):
        write_jsonl_zst(root / "pile" / f"{f:02d}.jsonl.zst", pile_rows(2000, ["Wikipedia (en)", "ArXiv"], start=f * 2000))
        dolma = [{"id": f"c4-{f}-{i}", "text": prose(f * 2000 + i, 40), "source": "c4", "added": "2023-08-01",
                  "metadata": {"url": f"http://c4.example/{f}/{i}"}} for i in range(2000)]  # fmt: skip
        (root / "dolma").mkdir(exist_ok=True)
        (root / "dolma" / f"{f:02d}.json.gz").write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in dolma).encode()))
    for f in range(6):
        make_warc(root / "cc" / "crawl-data" / "CC-MAIN-2020-50" / f"CC-MAIN-{f:05d}.warc.gz", pages(40, start=f * 40))
    return {"root": root, "docs": docs, "eval": root / "eval.jsonl", "blend": root / "blend.yaml"}


# --------------------------------------------------------------------------- the stages

# stage -> (arguments given IN and OUT, [(pattern watched under OUT, files more than at the start of the run)], marker)
MAP = ("--keep-rejected",)
CASES = {
    "download_pile": (lambda c, o: ["download", "pile", "--dataset", c["root"] / "pile", "--shard-docs", 250, "--out", o, *MAP],
                      [("part-*.parquet", 3), ("part-*.parquet", 6)], "_SUCCESS"),
    "import": (lambda c, o: ["import", "--dataset", c["root"] / "dolma", "--shard-docs", 250, "--out", o, *MAP],
               [("part-*.parquet", 3), ("part-*.parquet", 6)], "_SUCCESS"),
    "extract": (lambda c, o: ["extract", "--in", c["root"] / "cc", "--out", o, *MAP],
                [("part-*.parquet", 1), ("part-*.parquet", 2)], "_SUCCESS"),
    "clean": (lambda c, o: ["clean", "--in", c["docs"], "--out", o, *MAP], [("part-*.parquet", 2), ("part-*.parquet", 4)], "_SUCCESS"),
    "langid": (lambda c, o: ["langid", "--in", c["docs"], "--out", o, "--keep", "en", *MAP],
               [("part-*.parquet", 2), ("part-*.parquet", 4)], "_SUCCESS"),
    "filter": (lambda c, o: ["filter", "--in", c["docs"], "--out", o, *MAP], [("part-*.parquet", 2), ("part-*.parquet", 4)], "_SUCCESS"),
    "quality_score": (lambda c, o: ["quality", "score", "--in", c["docs"], "--out", o, "--model", LID, "--label", "__label__en",
                                    "--mode", "pareto", "--seed", 1, "--normalize", "none", *MAP],
                      [("part-*.parquet", 2), ("part-*.parquet", 4)], "_SUCCESS"),
    "dedup_exact": (lambda c, o: ["dedup", "exact", "--in", c["docs"], "--out", o, "--priority", "pile/*", *MAP],
                    [("_work/hash/c-*.meta.parquet", 3), ("part-*.parquet", 3)], "_SUCCESS"),
    "decontam": (lambda c, o: ["decontam", "--in", c["docs"], "--out", o, "--eval", c["eval"], "--min-piece-chars", 50, *MAP],
                 [("_work/count/part-*.json", 3), ("part-*.parquet", 3)], "_SUCCESS"),
    "tokenize": (lambda c, o: ["tokenize", "--in", c["docs"], "--out", o, "--per-source"],
                 [("_work/p*.json", 3), ("_work/p*.json", 4)], "_SUCCESS"),
    "blend": (lambda c, o: ["blend", "--config", c["blend"], "--out", o],
              [("sources/*.work/p*.json", 1), ("sources/*.stats.json", 1)], "_SUCCESS"),
}  # fmt: skip


POOLED = {"dedup_exact"}  # killed with two worker processes (the pool dies too); the others run in-process
STREAMED = {"download_pile", "import"}  # one record stream: no --workers


@pytest.mark.parametrize("stage", sorted(CASES))
def test_killed_stage_reruns_to_identical_output(corpus, tmp_path, stage, run):
    args, points, marker_name = CASES[stage]
    workers = [] if stage in STREAMED else ["--workers", 2 if stage in POOLED else 1]
    ref = tmp_path / "ref"
    run("--quiet", *args(corpus, ref), *(["--workers", 1] if workers else []))  # in-process: no interpreter start-up
    out = tmp_path / "out"
    marker = out / marker_name
    for pattern, more in points:
        start = _count(out, pattern)
        kill_when(curate(*args(corpus, out), *workers), lambda p=pattern, n=start + more: _count(out, p) >= max(n, 1))
        check_after_kill(out, marker)
    subprocess.run(curate(*args(corpus, out), *workers), check=True, env=ENV, capture_output=True)
    assert marker.exists()
    assert data_digest(out) == data_digest(ref)
    assert not [f for f in out.rglob("*") if ".tmp." in f.name or f.name.endswith(".part")], "temporary files were left behind"
    if (out / "_rejected").is_dir() and stage != "decontam":  # documents: none lost, none twice (decontam splits them)
        kept, rejected = read_table(out), pq.read_table(out / "_rejected")
        ids = kept.column("id").to_pylist() + rejected.column("id").to_pylist()
        assert len(ids) == json.loads((out / "_SUCCESS").read_text())["docs_in"]
        if stage != "extract":  # the generated WARC files reuse record ids from file to file
            assert len(set(ids)) == len(ids)


def test_killed_download_cc_resumes_mid_file_byte_identical(tmp_path):
    """Each file stalls once after 600 kB; the first run is killed inside file 0, the second inside file 1."""
    root = tmp_path / "host"
    paths = make_tree(root, n=3, size=1_500_000)
    out = tmp_path / "out"
    with FaultServer(root) as srv:
        srv.faults = {"/" + p: Fault(stall_after=600_000, stall_seconds=20, times=1) for p in paths[:2]}
        cmd = curate("download", "cc", "--snapshot", "CC-MAIN-2020-50", "--segments", 3, "--base-url", srv.url, "--out", out,
                     "--workers", 1, "--retry-wait", "0.01")  # fmt: skip
        for i, rel in enumerate(paths[:2]):
            part = (out / rel).with_name(f".{Path(rel).name}.part")
            kill_when(cmd, lambda part=part: part.exists() and part.stat().st_size >= 512 << 10)
            check_after_kill(out, out / "_download" / "CC-MAIN-2020-50.json")
            assert not (out / rel).exists() and part.stat().st_size >= 512 << 10
            assert all(not (out / r).exists() for r in paths[i:])
        subprocess.run(cmd, check=True, env=ENV, capture_output=True)
        log = list(srv.log)
    for rel in paths:
        assert (out / rel).read_bytes() == (root / rel).read_bytes()
    for rel in paths[:2]:  # each killed file resumed where it stopped
        ranges = [r for p, r, s in log if p == "/" + rel]
        assert ranges[0] is None and ranges[-1] is not None and int(ranges[-1][6:-1]) >= 512 << 10
    assert not list(out.rglob(".*.part"))
    assert (out / "_download" / "CC-MAIN-2020-50.json").exists()
