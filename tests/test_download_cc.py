"""`curate download cc` against a real HTTP server on 127.0.0.1 that injects faults."""

from __future__ import annotations

import gzip
import json
import random
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from curate.errors import CurateError
from curate.stages.download_cc import check_listing_path, parse_listing, select_paths
from tests.conftest import SAMPLE
from tests.httpserver import Fault, FaultServer

SNAP = "CC-MAIN-2020-50"
FAST = ("--retry-wait", "0.01", "--timeout", "5")


def make_tree(root: Path, n: int = 5, size: int = 300_000, snapshot: str = SNAP) -> list[str]:
    """``n`` WARC-named files of random bytes and their listing; returns the listed paths."""
    rng = random.Random(n * 7919 + size)
    paths = []
    for i in range(n):
        rel = f"crawl-data/{snapshot}/segments/1606141163411.{i % 2}/warc/CC-MAIN-20201123-{i:05d}.warc.gz"
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(rng.randbytes(size + i * 1001))
        paths.append(rel)
    listing = root / f"crawl-data/{snapshot}/warc.paths.gz"
    listing.write_bytes(gzip.compress(("\n".join(paths) + "\n").encode(), mtime=0))
    return paths


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "host"
    paths = make_tree(root)
    return root, paths


@pytest.fixture
def server(tree):
    root, _ = tree
    with FaultServer(root) as srv:
        yield srv


def requests_for(srv: FaultServer, rel: str) -> list[tuple[str | None, int]]:
    return [(rng, status) for path, rng, status in srv.log if path == "/" + rel]


def test_first_n_byte_identical(run, tree, server, tmp_path):
    root, paths = tree
    out = tmp_path / "out"
    res = run("download", "cc", "--snapshot", SNAP, "--segments", 3, "--base-url", server.url + "/", "--out", out, *FAST)
    assert "3 of 3 WARC file(s) complete (3 downloaded, 0 already there)" in res.stdout
    for rel in paths[:3]:
        assert (out / rel).read_bytes() == (root / rel).read_bytes()
    for rel in paths[3:]:
        assert not (out / rel).exists()
    assert not list(out.rglob(".*.part"))
    man = json.loads((out / "_download" / f"{SNAP}.json").read_text())
    assert [f["path"] for f in man["files"]] == paths[:3] and man["failed"] == 0
    # the listing is kept, so a re-run needs no server at all
    assert (out / f"crawl-data/{SNAP}/warc.paths.gz").read_bytes() == (root / f"crawl-data/{SNAP}/warc.paths.gz").read_bytes()
    server.log.clear()
    res = run("download", "cc", "--snapshot", SNAP, "--segments", 3, "--base-url", server.url, "--out", out, *FAST)
    assert "is complete and its inputs are unchanged; nothing to do" in res.stderr
    assert server.log == []
    # the record gone (an older download, or files from another tool): the files on disk are adopted, none fetched again
    (out / "_download" / f"{SNAP}.json").unlink()
    (out / "_download" / f"{SNAP}.params").unlink()
    res = run("download", "cc", "--snapshot", SNAP, "--segments", 3, "--base-url", server.url, "--out", out, *FAST)
    assert "(0 downloaded, 3 already there)" in res.stdout
    assert server.log == []


def test_seeded_sample_is_deterministic(run, tree, server, tmp_path):
    root, paths = tree
    run("download", "cc", "--snapshot", SNAP, "--segments", 2, "--seed", 11, "--base-url", server.url, "--out", tmp_path / "a", *FAST)
    want = select_paths(paths, 2, seed=11)
    assert want == [p for p in paths if p in set(random.Random(11).sample(paths, 2))]
    got = sorted(str(p.relative_to(tmp_path / "a")) for p in (tmp_path / "a").rglob("*.warc.gz"))
    assert got == sorted(want)
    assert select_paths(paths, 2, seed=11) == want and want == sorted(want, key=paths.index)  # seeded, in listing order
    assert {tuple(select_paths(paths, 2, seed=s)) for s in range(20)} != {tuple(paths[:2])}  # not just the first N


def test_faults_retry_resume_and_clear_errors(run, tree, server, tmp_path):
    """Drop halfway, 503 twice, 404, a lying Content-Length: 3 files whole, 2 named as missing."""
    root, paths = tree
    dropped, flaky, missing, lying, fine = paths
    half = (root / dropped).stat().st_size // 2
    server.faults = {
        "/" + dropped: Fault(drop_after=half, times=1),
        "/" + flaky: Fault(status=503, times=2),
        "/" + missing: Fault(status=404),
        "/" + lying: Fault(extra_length=5000),
    }
    out = tmp_path / "out"
    res = run(
        "download", "cc", "--snapshot", SNAP, "--segments", 5, "--base-url", server.url, "--out", out, "--workers", 3, *FAST, ok=False
    )
    assert res.exit_code == 1
    err = res.stderr.strip().splitlines()[-1]
    assert err.startswith("curate: error: download cc CC-MAIN-2020-50: 2 of 5 file(s) missing")
    assert f"{missing}: HTTP 404" in err
    assert f"{lying}: size mismatch: the server announced " in err
    assert "Traceback" not in res.stderr
    for rel in (dropped, flaky, fine):
        assert (out / rel).read_bytes() == (root / rel).read_bytes(), rel
    for rel in (missing, lying):
        assert not (out / rel).exists()
    # the dropped file resumed where the connection broke, with a Range request
    assert requests_for(server, dropped) == [(None, 200), (f"bytes={half}-", 206)]
    assert requests_for(server, flaky) == [(None, 503), (None, 503), (None, 200)]
    assert requests_for(server, missing) == [(None, 404)]  # a 404 is not retried
    assert not (out / "_download" / f"{SNAP}.json").exists()

    # the server is fixed: a re-run fetches only what is missing
    server.faults.clear()
    server.log.clear()
    res = run("download", "cc", "--snapshot", SNAP, "--segments", 5, "--base-url", server.url, "--out", out, *FAST)
    assert "(2 downloaded, 3 already there)" in res.stdout
    assert sorted(p for p, _, _ in server.log) == sorted("/" + r for r in (missing, lying))
    for rel in paths:
        assert (out / rel).read_bytes() == (root / rel).read_bytes()


def test_resume_from_partial_file(run, tree, server, tmp_path):
    root, paths = tree
    out = tmp_path / "out"
    rel = paths[0]
    part = (out / rel).with_name(f".{Path(rel).name}.part")
    part.parent.mkdir(parents=True)
    part.write_bytes((root / rel).read_bytes()[:12345])
    run("download", "cc", "--snapshot", SNAP, "--segments", 1, "--base-url", server.url, "--out", out, *FAST)
    assert requests_for(server, rel) == [("bytes=12345-", 206)]
    assert (out / rel).read_bytes() == (root / rel).read_bytes()
    assert not part.exists()


def test_complete_part_file_is_renamed(run, tree, server, tmp_path):
    """A .part that already holds the whole file (killed before the rename): 416, then renamed."""
    root, paths = tree
    out = tmp_path / "out"
    rel = paths[0]
    part = (out / rel).with_name(f".{Path(rel).name}.part")
    part.parent.mkdir(parents=True)
    part.write_bytes((root / rel).read_bytes())
    run("download", "cc", "--snapshot", SNAP, "--segments", 1, "--base-url", server.url, "--out", out, *FAST)
    assert (out / rel).read_bytes() == (root / rel).read_bytes()
    assert [s for _, s in requests_for(server, rel)] == [416]


def test_retries_are_bounded(run, tree, server, tmp_path):
    _, paths = tree
    server.faults = {"/" + paths[0]: Fault(status=503)}
    res = run(
        "download",
        "cc",
        "--snapshot",
        SNAP,
        "--segments",
        1,
        "--base-url",
        server.url,
        "--out",
        tmp_path / "o",
        "--retries",
        2,
        *FAST,
        ok=False,
    )
    assert res.exit_code == 1
    assert "gave up after 3 attempts: HTTP 503" in res.stderr
    assert len(requests_for(server, paths[0])) == 3


def test_listing_missing_or_unreachable(run, tmp_path):
    with FaultServer(tmp_path) as srv:
        res = run("download", "cc", "--snapshot", SNAP, "--segments", 1, "--base-url", srv.url, "--out", tmp_path / "o", *FAST, ok=False)
    assert res.exit_code == 1 and "cannot download the listing" in res.stderr and "HTTP 404" in res.stderr
    assert res.stderr.count("\n") == 1
    # a port bound but not listening (so no other process can take it meanwhile): refused, retried, a clear error
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        res = run(
            "download",
            "cc",
            "--snapshot",
            SNAP,
            "--segments",
            1,
            "--base-url",
            url,
            "--out",
            tmp_path / "o",
            "--retries",
            1,
            *FAST,
            ok=False,
        )
    assert (
        res.exit_code == 1 and "cannot download the listing" in res.stderr and "gave up after 2 attempts: connection refused" in res.stderr
    )


@pytest.mark.parametrize(
    "line, why",
    [
        ("../../etc/evil.warc.gz", "'..'"),
        ("crawl-data/CC-MAIN-2020-50/../../x.warc.gz", "'..'"),
        ("/etc/x.warc.gz", "absolute"),
        ("http://evil.example/x.warc.gz", "URL"),
        ("s3://commoncrawl/crawl-data/x.warc.gz", "URL"),
        ("crawl-data\\x.warc.gz", "backslash"),
        ("crawl-data//x.warc.gz", "empty"),
        ("crawl-data/x.txt", "not a .warc.gz"),
    ],
)
def test_listing_lines_must_stay_inside_out(line, why):
    with pytest.raises(CurateError) as ei:
        check_listing_path(line, "LISTING: line 3")
    assert "LISTING: line 3" in str(ei.value) and why in str(ei.value)


def test_bad_listing_is_one_line_error(run, tmp_path):
    root = tmp_path / "host"
    (root / f"crawl-data/{SNAP}").mkdir(parents=True)
    (root / f"crawl-data/{SNAP}/warc.paths.gz").write_bytes(gzip.compress(b"crawl-data/a.warc.gz\n../../outside.warc.gz\n"))
    with FaultServer(root) as srv:
        res = run("download", "cc", "--snapshot", SNAP, "--segments", 1, "--base-url", srv.url, "--out", tmp_path / "o", *FAST, ok=False)
    assert res.exit_code == 1
    assert "warc.paths.gz: line 2: '../../outside.warc.gz' is a '..' component" in res.stderr
    assert not (tmp_path / "outside.warc.gz").exists()


def test_option_errors(run, tmp_path):
    res = run("download", "cc", "--snapshot", "2020-50", "--segments", 1, "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 1 and "expected a CommonCrawl snapshot name like CC-MAIN-2020-50" in res.stderr
    res = run("download", "cc", "--snapshot", SNAP, "--segments", 1, "--base-url", "ftp://x", "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 1 and "expected an http:// or https:// URL" in res.stderr
    with pytest.raises(CurateError, match="the listing has only 2"):
        select_paths(["a.warc.gz", "b.warc.gz"], 3)
    with pytest.raises(CurateError, match="line 1"):
        parse_listing(b"/abs.warc.gz\n", "L")


def test_segments_beyond_listing(run, tree, server, tmp_path):
    res = run("download", "cc", "--snapshot", SNAP, "--segments", 9, "--base-url", server.url, "--out", tmp_path / "o", *FAST, ok=False)
    assert res.exit_code == 1 and "--segments 9: the listing has only 5 WARC file(s)" in res.stderr


@pytest.mark.skipif(not (SAMPLE / "cc" / "crawl-data").is_dir(), reason="sample_data/cc not built")
def test_sample_snapshots_through_httpserve_wrapper(tmp_path):
    """The demo's path: python -m curate.httpserve DIR -- curate download cc ... (both snapshots)."""
    out = tmp_path / "cc"
    script = (
        "set -e; for s in CC-MAIN-2020-50 CC-MAIN-2021-04; do "
        f'{sys.executable} -m curate --quiet download cc --snapshot $s --segments 2 --base-url "$CURATE_SERVE_URL" --out {out}; done'
    )
    proc = subprocess.run([sys.executable, "-m", "curate.httpserve", str(SAMPLE / "cc"), "--", "sh", "-c", script],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("2 of 2 WARC file(s) complete") == 2
    files = sorted(p.relative_to(SAMPLE / "cc") for p in (SAMPLE / "cc").rglob("*.warc.gz"))
    assert len(files) == 4
    for rel in files:
        assert (out / rel).read_bytes() == (SAMPLE / "cc" / rel).read_bytes()
    # the wrapper returns the command's status and stops the server either way
    proc = subprocess.run([sys.executable, "-m", "curate.httpserve", str(SAMPLE / "cc"), "--", "sh", "-c", "exit 3"], timeout=60)
    assert proc.returncode == 3
