"""Object-store paths: every main stage reading and writing s3:// on a real S3-compatible server (moto) on 127.0.0.1.

The server starts once per module; the endpoint and dummy credentials reach curate the way they
would on a cluster: the standard AWS variables (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import SAMPLE
from tests.test_dataset import digest_dir, docs_table, make_dataset

pytest.importorskip("s3fs", reason="s3fs is not installed (pip install 'curate[s3]')")
pytest.importorskip("moto.server", reason="moto[server] is not installed (pip install 'curate[test]')")

BUCKET = "curate-test"
EVAL = SAMPLE / "eval" / "lambada_like.jsonl"


class S3Server:
    """moto's S3 server as a child process on 127.0.0.1 (a thread would parse Python code beside pytest's
    assertion rewriting, which CPython 3.11 does not survive: "AST constructor recursion depth mismatch")."""

    def __init__(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/moto-api/", timeout=2).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("moto's S3 server did not start") from None
                time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_s3() -> tuple[S3Server, dict[str, str]]:
    """A local S3 server and the environment that points at it (as on a cluster: the standard AWS variables)."""
    server = S3Server()
    env = {
        "AWS_ENDPOINT_URL": server.url,
        "AWS_ACCESS_KEY_ID": "curate-test",
        "AWS_SECRET_ACCESS_KEY": "curate-test",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    return server, env


def fresh_filesystems() -> None:
    """Forget S3 filesystems made for another endpoint (fsspec caches instances by their arguments)."""
    import s3fs

    from curate import storage

    storage._FILESYSTEMS.clear()
    s3fs.S3FileSystem.clear_instance_cache()


def s3_bucket():
    """A bucket on a local S3 server, the AWS_* environment set; yields an s3fs filesystem for checking what curate wrote."""
    server, env = start_s3()
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        fresh_filesystems()
        import s3fs

        fs = s3fs.S3FileSystem(use_listings_cache=False)
        fs.mkdir(BUCKET)
        yield fs
        fresh_filesystems()
    server.stop()


s3 = pytest.fixture(scope="module", name="s3")(s3_bucket)


def fetch(fs, url: str, dest: Path) -> Path:
    """Download everything under ``url`` (an s3:// directory) to ``dest``."""
    fs.get(url.removeprefix("s3://") + "/", str(dest) + "/", recursive=True)
    return dest


def test_paths_and_helpers(s3, tmp_path):
    from curate.dataset import resolve_inputs
    from curate.storage import RemotePath, as_path, is_local

    p = as_path(f"s3://{BUCKET}/a//b/")
    assert isinstance(p, RemotePath) and str(p) == f"s3://{BUCKET}/a/b" and p.name == "b" and str(p.parent) == f"s3://{BUCKET}/a"
    assert str(p / "part-00000.parquet") == f"s3://{BUCKET}/a/b/part-00000.parquet"
    assert as_path(f"file://{tmp_path}/x") == tmp_path / "x" and is_local(f"file://{tmp_path}") and not is_local(p)
    assert as_path("rel/dir") == Path("rel/dir")
    with pytest.raises(TypeError):
        open(p)  # noqa: SIM115 - no __fspath__: a remote path never becomes a local file by accident
    s3.put(str(make_dataset(tmp_path / "in", 3, 4)) + "/", f"{BUCKET}/in/", recursive=True)
    files = resolve_inputs([f"s3://{BUCKET}/in"])
    assert [f.name for f in files] == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    assert [f.name for f in resolve_inputs([f"s3://{BUCKET}/in/part-0000[12].parquet"])] == ["part-00001.parquet", "part-00002.parquet"]


def test_shard_writer_on_s3_appears_only_when_complete(s3):
    from curate.dataset import read_table
    from curate.formats.parquet import ParquetWriter

    url = f"s3://{BUCKET}/writer/part-00000.parquet"
    w = ParquetWriter(url)
    w.write(docs_table(10))
    assert not s3.exists(url)  # an upload in progress is no object yet
    w.close()
    assert read_table(url).column("id").to_pylist() == [f"d{i}" for i in range(10)]
    aborted = f"s3://{BUCKET}/writer/part-00001.parquet"
    w = ParquetWriter(aborted)
    w.write(docs_table(5))
    w.abort()
    assert not s3.exists(aborted)


@pytest.mark.slow
def test_sample_pipeline_on_s3_equals_local(s3, run, tmp_path, monkeypatch):
    """download pile -> clean -> langid -> filter -> dedup exact, fuzzy -> decontam -> tokenize, all on s3://.

    Every Parquet file (kept, rejected and the global stages' _work files) and the tokenized
    .bin/.idx are the same bytes as a local run with one worker. On S3, clean, dedup fuzzy and
    decontam run two worker processes (each reaches S3 with the same AWS_* settings). No work
    file lands on the local disk under a mangled URL (``s3:/bucket/...`` relative to the current
    directory, which an earlier dedup wrote and a commit once picked up).
    """
    monkeypatch.chdir(tmp_path)
    s3.put(str(SAMPLE / "pile") + "/", f"{BUCKET}/sample/pile/", recursive=True)
    s3.put(str(EVAL), f"{BUCKET}/sample/eval/lambada_like.jsonl")
    chains = {}
    for name, root, src, ev in (
        ("local", str(tmp_path / "local"), str(SAMPLE / "pile"), str(EVAL)),
        ("s3", f"s3://{BUCKET}/out", f"s3://{BUCKET}/sample/pile", f"s3://{BUCKET}/sample/eval/lambada_like.jsonl"),
    ):
        w1, w2 = ["--workers", "1"], ["--workers", "1" if name == "local" else "2"]
        run("download", "pile", "--dataset", src, "--max-docs", "100", "--shard-docs", "400", "--out", f"{root}/pile", "--keep-rejected")
        run("clean", "--in", f"{root}/pile", "--out", f"{root}/clean", "--keep-rejected", *w2)
        run("langid", "--in", f"{root}/clean", "--out", f"{root}/langid", "--keep", "all", *w1)
        run("filter", "--in", f"{root}/langid", "--out", f"{root}/filter", "--keep-rejected", *w1)
        run("dedup", "exact", "--in", f"{root}/filter", "--out", f"{root}/exact", "--keep-rejected", *w1)
        fuzzy = run("dedup", "fuzzy", "--in", f"{root}/exact", "--out", f"{root}/fuzzy", "--verify", "exact", "--keep-rejected", *w2)
        dec = run("decontam", "--in", f"{root}/fuzzy", "--out", f"{root}/decontam", "--eval", ev, "--keep-rejected", *w2)
        tok = run("tokenize", "--in", f"{root}/decontam", "--out", f"{root}/tok/all", *w1)
        chains[name] = (fuzzy.stdout, dec.stdout, tok.stdout)
    assert "15 clusters" in chains["s3"][0] and "10 docs contaminated" in chains["s3"][1]  # the sample's planted items are found
    assert f"output: s3://{BUCKET}/out/tok/all.bin" in chains["s3"][2]
    local = tmp_path / "local"
    got = fetch(s3, f"s3://{BUCKET}/out", tmp_path / "from_s3")
    for stage in ("pile", "clean", "langid", "filter", "exact", "fuzzy", "decontam"):
        want = digest_dir(local / stage)
        assert want and digest_dir(got / stage) == want, stage
        assert (got / stage / "_SUCCESS").exists()
    assert (got / "fuzzy" / "_work" / "sig").is_dir() and (got / "decontam" / "_work" / "index" / "index.json").exists()
    for ext in (".bin", ".idx"):
        assert (got / "tok" / f"all{ext}").read_bytes() == (local / "tok" / f"all{ext}").read_bytes()
    assert not list((got / "tok").glob("all.work*"))  # the pieces are removed after the merge
    assert not (tmp_path / "s3:").exists()


def test_file_urls_are_local_paths(run, tmp_path):
    src = make_dataset(tmp_path / "in", 2, 5)
    run("clean", "--in", src, "--out", tmp_path / "plain", "--workers", "1")
    run("clean", "--in", f"file://{src}", "--out", f"file://{tmp_path}/url", "--workers", "1")
    assert digest_dir(tmp_path / "plain") == digest_dir(tmp_path / "url")


def test_killed_run_on_s3_resumes_skipping_finished_shards(s3, run, tmp_path):
    """Shards present on S3 are kept; only the missing ones are computed again, to the same bytes."""
    s3.put(str(make_dataset(tmp_path / "in", 4, 20)) + "/", f"{BUCKET}/resume/in/", recursive=True)
    out = f"s3://{BUCKET}/resume/clean"
    run("clean", "--in", f"s3://{BUCKET}/resume/in", "--out", out, "--workers", "1")
    before = fetch(s3, out, tmp_path / "before")
    key = f"{BUCKET}/resume/clean"
    kept_mtime = s3.info(f"{key}/part-00000.parquet")["LastModified"]
    # what a kill leaves: shards 2 and 3 never written (no object: their uploads never completed), no _SUCCESS
    for f in ("part-00002.parquet", "part-00003.parquet", "_stats/part-00003.json", "_SUCCESS"):
        s3.rm(f"{key}/{f}")
    res = run("clean", "--in", f"s3://{BUCKET}/resume/in", "--out", out, "--workers", "2")
    assert "resuming, 2 of 4 shard(s) already done" in res.stderr
    assert s3.info(f"{key}/part-00000.parquet")["LastModified"] == kept_mtime  # not rewritten
    after = fetch(s3, out, tmp_path / "after")
    assert digest_dir(after) == digest_dir(before) and (after / "_SUCCESS").exists()
    res = run("clean", "--in", f"s3://{BUCKET}/resume/in", "--out", out)
    assert "nothing to do" in res.stderr


def test_overwrite_and_parameter_check_on_s3(s3, run, tmp_path):
    s3.put(str(make_dataset(tmp_path / "in", 2, 5)) + "/", f"{BUCKET}/ow/in/", recursive=True)
    out = f"s3://{BUCKET}/ow/clean"
    run("clean", "--in", f"s3://{BUCKET}/ow/in", "--out", out, "--workers", "1")
    res = run("clean", "--in", f"s3://{BUCKET}/ow/in", "--out", out, "--normalization", "NFKC", ok=False)
    assert res.exit_code == 1 and "other parameters" in res.stderr
    s3.pipe(f"{BUCKET}/ow/clean/part-00009.parquet", b"stale")
    run("clean", "--in", f"s3://{BUCKET}/ow/in", "--out", out, "--normalization", "NFKC", "--overwrite", "--workers", "1")
    assert not s3.exists(f"{BUCKET}/ow/clean/part-00009.parquet")
    assert '"normalization": "NFKC"' in s3.cat(f"{BUCKET}/ow/clean/_params.json").decode()


def test_extract_reads_warc_files_from_s3(s3, run, tmp_path):
    cc = SAMPLE / "cc"
    s3.put(str(cc / "crawl-data") + "/", f"{BUCKET}/cc/crawl-data/", recursive=True)
    run("extract", "--in", cc, "--out", tmp_path / "local", "--workers", "1", "--keep-rejected")
    run("extract", "--in", f"s3://{BUCKET}/cc", "--out", f"s3://{BUCKET}/cc_extract", "--workers", "2", "--keep-rejected")
    assert digest_dir(fetch(s3, f"s3://{BUCKET}/cc_extract", tmp_path / "got")) == digest_dir(tmp_path / "local")


def test_blend_and_report_read_s3(s3, run, tmp_path):
    s3.put(str(make_dataset(tmp_path / "in", 2, 30)) + "/", f"{BUCKET}/bl/in/", recursive=True)
    run("tokenize", "--in", f"s3://{BUCKET}/bl/in", "--out", f"s3://{BUCKET}/bl/tok/all", "--workers", "1")
    cfg = tmp_path / "blend.yaml"
    cfg.write_text(f"total_tokens: 2000\nseed: 1\nsources:\n  - {{name: all, path: 's3://{BUCKET}/bl/tok/all', weight: 1.0}}\n")
    run("tokenize", "--in", tmp_path / "in", "--out", tmp_path / "tok" / "all", "--workers", "1")
    local_cfg = tmp_path / "local.yaml"
    local_cfg.write_text(f"total_tokens: 2000\nseed: 1\nsources:\n  - {{name: all, path: '{tmp_path / 'tok' / 'all'}', weight: 1.0}}\n")
    run("blend", "--config", cfg, "--out", f"s3://{BUCKET}/bl/blend")
    run("blend", "--config", local_cfg, "--out", tmp_path / "blend")
    for ext in (".bin", ".idx"):
        assert s3.cat(f"{BUCKET}/bl/blend/blend{ext}") == (tmp_path / "blend" / f"blend{ext}").read_bytes()
    res = run("inspect", f"s3://{BUCKET}/bl/blend/blend", "--doc", "0", "--max-chars", "40")
    assert "documents:" in res.stdout
    res = run("report", f"s3://{BUCKET}/bl/tok/all", f"s3://{BUCKET}/bl/blend", "--out", f"s3://{BUCKET}/bl/report.html")
    assert "report: 2 stages" in res.stdout and s3.cat(f"{BUCKET}/bl/report.html").startswith(b"<!DOCTYPE html>")
    assert "tokenize" in run("stats", f"s3://{BUCKET}/bl/tok/all").stdout


def test_s3_errors_are_one_line(s3, run, tmp_path):
    res = run("clean", "--in", f"s3://{BUCKET}/nothing-here", "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 1 and res.stderr.strip() == f"curate: error: s3://{BUCKET}/nothing-here: no such file or directory"
    res = run("download", "cc", "--snapshot", "CC-MAIN-2020-50", "--segments", "1", "--out", f"s3://{BUCKET}/cc_raw", ok=False)
    assert res.exit_code == 1 and "must be a local directory" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    src = make_dataset(tmp_path / "in", 1, 3)
    res = run("decontam", "--in", src, "--out", tmp_path / "d", "--eval", f"s3://{BUCKET}/no/such.jsonl", ok=False)
    assert res.exit_code == 1 and "no such evaluation file" in res.stderr


def test_remote_decontam_index_is_read_once_per_process(s3):
    """With a remote OUT a worker process reads the index into memory once (keyed by URL and index.json)."""
    from curate.decontam.index import Index, build_index
    from curate.storage import as_path

    url = as_path(f"s3://{BUCKET}/idx/index")
    words = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    build_index([("s", [words])], 13, 8).save(url)
    a = Index.open(url)
    assert Index.open(url) is a and a.long.keys.size == 2
    build_index([("s", [words + " fifteen"])], 13, 8).save(url)  # rebuilt: index.json changes, the cache follows
    assert Index.open(url).long.keys.size == 3
