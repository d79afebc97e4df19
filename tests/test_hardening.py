"""Untrusted input (issue 11): paths from data, downloads, decompression and parsing limits, configs,
invalid UTF-8, and outputs that cannot be written (disk full, read-only).

The memory tests run each case in a subprocess and read its peak RSS (``ru_maxrss`` of the
children of a small wrapper process, so each case is measured alone); the figures are in
the README's "Guarantees" section (``pytest tests/test_hardening.py -k rss -s`` prints them).
"""

from __future__ import annotations

import errno
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from curate.dataset import read_success, read_table
from curate.errors import CurateError
from curate.stages.download_cc import dest_path, parse_listing
from curate.stages.tokenize import source_slug
from tests.conftest import prose, write_jsonl_zst
from tests.httpserver import Fault, FaultServer
from tests.test_download_cc import FAST, SNAP, make_tree, requests_for
from tests.test_extract import make_warc, pages

ENV = {**os.environ, "CURATE_PROGRESS": "log"}
RSS_BOUND_MB = 400  # generous (the cases peak at 135-260 MB), and below what holding a bomb whole would take


def curate(*args: object) -> list[str]:
    return [sys.executable, "-m", "curate", *map(str, args)]


_WRAPPER = (
    "import resource, subprocess, sys\n"
    "r = subprocess.run(sys.argv[1:])\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(r.returncode)\n"
)


def run_measured(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 300) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``cmd`` alone under a wrapper; returns the result (the wrapper's line removed) and its peak RSS in MB."""
    p = subprocess.run([sys.executable, "-c", _WRAPPER, *cmd], capture_output=True, text=True, env=env or ENV, timeout=timeout)
    lines = p.stderr.rstrip("\n").split("\n")
    p.stderr = "\n".join(lines[:-1]) + ("\n" if len(lines) > 1 else "")
    return p, int(lines[-1]) / 1024


def report_rss(case: str, mb: float, seconds: float | None = None) -> None:
    print(f"\nRSS {case}: {mb:.0f} MB" + (f", {seconds:.1f} s" if seconds is not None else ""))


# --------------------------------------------------------------------------- 1. paths from data stay inside OUT


def test_listing_path_through_a_symlink_is_refused(tmp_path):
    out = tmp_path / "out"
    (out / "crawl-data").parent.mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (out / "crawl-data").symlink_to(tmp_path / "elsewhere")  # a relative line, but OUT/crawl-data leads outside
    with pytest.raises(CurateError, match="resolves outside"):
        dest_path(out, "crawl-data/x.warc.gz")
    assert dest_path(out, "segments/a/x.warc.gz") == out / "segments" / "a" / "x.warc.gz"


@pytest.mark.parametrize(
    "line",
    ["file:///etc/passwd.warc.gz", "C:/x.warc.gz", "~/x.warc.gz", "a/./x.warc.gz", "a/\x00/x.warc.gz", "..", "a/../../b.warc.gz"],
)
def test_listing_lines_that_leave_out_are_refused(line):
    with pytest.raises(CurateError, match="line 1"):
        parse_listing(gzip.compress(line.encode() + b"\n"), "LISTING")


def test_listing_decompression_bomb_is_refused(monkeypatch):
    import curate.stages.download_cc as dcc

    monkeypatch.setattr(dcc, "MAX_LISTING_BYTES", 10 << 20)  # 1 GiB by default; a real listing inflates to ~12 MB
    d = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = d.compress(b"\n" * (30 << 20)) + d.flush()
    with pytest.raises(CurateError, match="inflates past 10,485,760 bytes"):
        parse_listing(bomb, "LISTING")


@pytest.mark.parametrize(
    "source, slug",
    [
        ("pile/Wikipedia", "pile_Wikipedia"),
        ("../../etc", "etc"),
        ("a/b", "a_b"),
        ("..", "unknown"),
        (".hidden", "hidden"),
        ("_SUCCESS", "SUCCESS"),
        ("", "unknown"),
        ("cc/CC-MAIN-2020-50", "cc_CC-MAIN-2020-50"),
    ],
)
def test_source_slug_is_a_plain_file_name(source, slug):
    assert source_slug(source) == slug


def test_long_source_slug_is_cut_and_unique():
    a, b = source_slug("x" * 300 + "a"), source_slug("x" * 300 + "b")
    assert len(a) == len(b) == 100 and a != b and "/" not in a


def _docs(path: Path, sources: list[str], n_per: int = 2) -> Path:
    rows = [
        {"id": f"d{i}-{j}", "text": prose(i * 10 + j, 40), "source": s, "url": None, "meta": None}
        for i, s in enumerate(sources)
        for j in range(n_per)
    ]
    path.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), path / "part-00000.parquet")
    return path


def _all_files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


def test_tokenize_per_source_names_from_data_stay_inside_out(run, tmp_path):
    hostile = ["../../escape", "a/b", "..", ".hidden", "_work", "x" * 300]
    src = _docs(tmp_path / "in", hostile)
    before = _all_files(tmp_path)
    out = tmp_path / "nest" / "tok"
    run("tokenize", "--in", src, "--out", out, "--per-source", "--workers", 1)
    new = _all_files(tmp_path) - before
    assert new and all(p == tmp_path / "nest" or p.is_relative_to(out) for p in new), sorted(new)
    bins = sorted(p.name for p in out.glob("*.bin"))
    assert bins == sorted(f"{source_slug(s)}.bin" for s in hostile)
    assert not any(n.startswith((".", "_")) for n in bins)
    rec = json.loads((out / "_SUCCESS").read_text())
    assert set(rec["prefixes"]) == set(hostile) and rec["documents"] == 12


def test_tokenize_sources_that_sanitise_to_one_name_are_an_error(run, tmp_path):
    src = _docs(tmp_path / "in", ["a/b", "a_b"])
    res = run("tokenize", "--in", src, "--out", tmp_path / "tok", "--per-source", "--workers", 1, ok=False)
    assert res.exit_code == 1 and "would both be written to" in res.stderr and "Traceback" not in res.stderr


def test_blend_source_names_stay_inside_out(run, tmp_path):
    src = _docs(tmp_path / "in", ["pile/A"], n_per=5)
    cfg = tmp_path / "blend.yaml"
    cfg.write_text(f"total_tokens: auto\nsources:\n  - {{name: '../../../escape', path: {src}, weight: 1}}\n")
    before = _all_files(tmp_path)
    run("blend", "--config", cfg, "--out", tmp_path / "blend", "--workers", 1)
    new = _all_files(tmp_path) - before
    assert all(p.is_relative_to(tmp_path / "blend") for p in new), sorted(new)
    assert (tmp_path / "blend" / "sources" / "escape.bin").is_file()


# --------------------------------------------------------------------------- 2. downloads


@pytest.fixture
def host(tmp_path):
    root = tmp_path / "host"
    paths = make_tree(root, n=2, size=200_000)
    with FaultServer(root) as srv:
        yield root, paths, srv


def _download(run, srv_url: str, out: Path, *extra: object, ok: bool = True):
    return run("download", "cc", "--snapshot", SNAP, "--segments", 1, "--base-url", srv_url, "--out", out, *FAST, *extra, ok=ok)


@pytest.mark.parametrize("target", ["file:///etc/passwd", "ftp://example.org/x.warc.gz", "gopher://x/"])
def test_redirect_to_another_scheme_is_refused(run, host, tmp_path, target):
    root, paths, srv = host
    srv.faults = {"/" + paths[0]: Fault(redirect=target)}
    res = _download(run, srv.url, tmp_path / "o", ok=False)
    assert res.exit_code == 1 and "only http and https URLs are followed" in res.stderr
    assert len(requests_for(srv, paths[0])) == 1  # not retried
    assert not (tmp_path / "o" / paths[0]).exists()


def test_redirects_are_followed_a_bounded_number_of_times(run, host, tmp_path):
    root, paths, srv = host
    srv.faults = {"/" + paths[0]: Fault(redirect="/loop/1", times=1), "/loop/1": Fault(redirect="/" + paths[0])}
    res = _download(run, srv.url, tmp_path / "a")  # one redirect to a path that redirects back: followed
    assert "1 of 1 WARC file(s) complete" in res.stdout
    assert (tmp_path / "a" / paths[0]).read_bytes() == (root / paths[0]).read_bytes()
    srv.faults = {"/" + paths[0]: Fault(redirect="/loop/1"), "/loop/1": Fault(redirect="/" + paths[0])}  # a loop
    res = _download(run, srv.url, tmp_path / "b", "--max-redirects", 3, ok=False)
    assert res.exit_code == 1 and "Exceeded 3 redirects" in res.stderr
    assert len(requests_for(srv, "loop/1")) <= 4  # bounded, and not retried


def test_max_file_bytes_announced_and_received(run, host, tmp_path):
    root, paths, srv = host
    res = _download(run, srv.url, tmp_path / "a", "--max-file-bytes", 100_000, ok=False)
    assert res.exit_code == 1 and "more than --max-file-bytes 100,000" in res.stderr and "announces" in res.stderr
    srv.faults = {"/" + paths[0]: Fault(hide_length=True)}  # no Content-Length: counted while streaming
    res = _download(run, srv.url, tmp_path / "b", "--max-file-bytes", 100_000, ok=False)
    assert res.exit_code == 1 and "more than --max-file-bytes 100,000 bytes received" in res.stderr
    assert not list((tmp_path / "b").rglob("*.warc.gz")) and not list((tmp_path / "b").rglob(".*.part"))
    res = _download(run, srv.url, tmp_path / "c")  # without a length, under the limit: fine
    assert (tmp_path / "c" / paths[0]).read_bytes() == (root / paths[0]).read_bytes()


def test_stalled_connection_times_out_and_resumes(run, tmp_path):
    root = tmp_path / "host"
    paths = make_tree(root, n=1, size=1_200_000)
    with FaultServer(root) as srv:
        srv.faults = {"/" + paths[0]: Fault(stall_after=700_000, stall_seconds=3.0, times=1)}  # > 2 reads of 256 kB, then silence
        res = run("download", "cc", "--snapshot", SNAP, "--segments", 1, "--base-url", srv.url, "--out", tmp_path / "o",
                  "--retry-wait", "0.01", "--timeout", "0.5")  # fmt: skip
        reqs = requests_for(srv, paths[0])
    assert "1 of 1 WARC file(s) complete" in res.stdout
    assert (tmp_path / "o" / paths[0]).read_bytes() == (root / paths[0]).read_bytes()
    assert reqs[0] == (None, 200) and reqs[1][1] == 206 and int(reqs[1][0].removeprefix("bytes=").rstrip("-")) >= 512 << 10


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: cannot make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def test_tls_is_verified_and_a_ca_bundle_can_be_given(run, tmp_path, monkeypatch):
    import ssl

    cert, key = _self_signed(tmp_path)
    root = tmp_path / "host"
    paths = make_tree(root, n=1, size=50_000)
    srv = FaultServer(root)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with srv:
        url = srv.url.replace("http://", "https://")
        res = run("download", "cc", "--snapshot", SNAP, "--segments", 1, "--base-url", url, "--out", tmp_path / "a", *FAST, ok=False)
        assert res.exit_code == 1 and "TLS certificate verification failed; pass --ca-bundle" in res.stderr
        assert srv.log == []  # no request got through, and the failure was not retried
        assert res.stderr.count("\n") == 1
        with monkeypatch.context() as m:  # the old way to switch requests' verification off does nothing here
            m.setenv("CURL_CA_BUNDLE", "")
            m.setenv("REQUESTS_CA_BUNDLE", "")
            res = run("download", "cc", "--snapshot", SNAP, "--segments", 1, "--base-url", url, "--out", tmp_path / "b", *FAST, ok=False)
        assert res.exit_code == 1 and "certificate verification failed" in res.stderr
        res = run("download", "cc", "--snapshot", SNAP, "--segments", 1, "--base-url", url, "--out", tmp_path / "c", *FAST,
                  "--ca-bundle", cert)  # fmt: skip
        assert "1 of 1 WARC file(s) complete" in res.stdout
        assert (tmp_path / "c" / paths[0]).read_bytes() == (root / paths[0]).read_bytes()
        res = run("download", "cc", "--snapshot", SNAP, "--segments", 1, "--base-url", url, "--out", tmp_path / "d",
                  "--ca-bundle", tmp_path / "nope.pem", ok=False)  # fmt: skip
        assert res.exit_code == 1 and "--ca-bundle" in res.stderr and "no such file" in res.stderr


# --------------------------------------------------------------------------- 3. decompression and parsing limits

GOOD = [json.dumps({"text": prose(i), "meta": {"pile_set_name": "Wikipedia (en)"}}).encode() + b"\n" for i in range(4)]
BOMB_MB = 450  # more than RSS_BOUND_MB once Python and Arrow are loaded: a reader that held it would fail the bound


def _blob(writer, mb: int) -> None:
    chunk = b" " * (1 << 20)
    writer.write(GOOD[0])
    for _ in range(mb):
        writer.write(chunk)
    writer.write(b"\n")
    for line in GOOD[1:]:
        writer.write(line)


@pytest.fixture(scope="module")
def bombs(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("bombs")
    with open(d / "bomb.jsonl.zst", "wb") as fh, zstandard.ZstdCompressor(level=3).stream_writer(fh) as z:
        _blob(z, BOMB_MB)
    with open(d / "bomb.jsonl.gz", "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1) as z:
        _blob(z, BOMB_MB)
    with open(d / "long_line.jsonl", "wb") as fh:
        fh.write(GOOD[0] + b'{"text": "' + b"a" * (100 << 20) + b'", "meta": {"pile_set_name": "Wikipedia (en)"}}\n' + b"".join(GOOD[1:]))
    return d


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bomb.jsonl.zst", "bomb.jsonl.gz", "long_line.jsonl"])
def test_rss_jsonl_huge_line_is_counted_with_bounded_memory(bombs, tmp_path, name):
    """A 450 MB line (zstd 30,000:1, gzip 1,000:1) or a 100 MB line: line_too_long, the other lines kept."""
    import time

    t0 = time.perf_counter()
    p, mb = run_measured(curate("--quiet", "download", "pile", "--dataset", bombs / name, "--out", tmp_path / "o", "--keep-rejected"))
    report_rss(name, mb, time.perf_counter() - t0)
    assert p.returncode == 0, p.stderr
    rec = read_success(tmp_path / "o")
    assert rec["docs_out"] == 4 and rec["rejected"]["line_too_long"]["docs"] == 1
    assert mb < RSS_BOUND_MB


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bomb.jsonl.zst", "bomb.jsonl.gz"])
def test_rss_jsonl_decompression_bomb_stops_with_one_line(bombs, tmp_path, name):
    # 100 MiB, or 10x the file (the defaults: 4 GiB, or 100x the file)
    env = {**ENV, "CURATE_MAX_DECOMPRESSED_BYTES": str(100 << 20), "CURATE_MAX_DECOMPRESSION_RATIO": "10"}
    p, mb = run_measured(curate("--quiet", "download", "pile", "--dataset", bombs / name, "--out", tmp_path / "o"), env)
    report_rss(f"{name} over the cap", mb)
    assert p.returncode == 1
    assert p.stderr.count("\n") == 1 and f"{name}: decompresses to more than 104,857,600 bytes" in p.stderr
    assert "CURATE_MAX_DECOMPRESSED_BYTES" in p.stderr
    assert mb < RSS_BOUND_MB


def test_decompression_ratio_lets_big_genuine_files_through(tmp_path, monkeypatch):
    from curate.limits import decompressed_limit

    monkeypatch.delenv("CURATE_MAX_DECOMPRESSED_BYTES", raising=False)
    monkeypatch.delenv("CURATE_MAX_DECOMPRESSION_RATIO", raising=False)
    assert decompressed_limit(10_000) == 4 << 30  # a small file: the 4 GiB floor
    assert decompressed_limit(15 << 30) == 100 * (15 << 30)  # a 15 GB Pile file may hold 1.5 TB
    monkeypatch.setenv("CURATE_MAX_DECOMPRESSION_RATIO", "nope")
    with pytest.raises(CurateError, match="CURATE_MAX_DECOMPRESSION_RATIO"):
        decompressed_limit(1)


def _gz_member(*parts: bytes, repeat: bytes = b"", times: int = 0) -> bytes:
    co = zlib.compressobj(1, zlib.DEFLATED, 31)
    out = [co.compress(p) for p in parts]
    out += [co.compress(repeat) for _ in range(times)]
    return b"".join(out) + co.flush()


def _warc(path: Path, middle: bytes) -> Path:
    """Two good pages, ``middle`` (raw gzip members), two good pages."""
    a = make_warc(path.with_name("a.warc.gz"), pages(2)).read_bytes()
    b = make_warc(path.with_name("b.warc.gz"), pages(2, start=2)).read_bytes()
    path.with_name("a.warc.gz").unlink()
    path.with_name("b.warc.gz").unlink()
    path.write_bytes(a + middle + b)
    return path


_BOMB_HEAD = (
    b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:bomb>\r\nWARC-Target-URI: http://bomb/\r\n"
    b"Content-Type: application/http; msgtype=response\r\nContent-Length: 38\r\n\r\n"
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n\r\n"
)


@pytest.mark.slow
def test_rss_warc_gzip_member_bomb_is_skipped(tmp_path):
    """A record whose gzip member inflates to 450 MB of zeros: decompression_bomb, the records after it kept."""
    f = _warc(tmp_path / "CC-MAIN-2020-50" / "bomb.warc.gz", _gz_member(_BOMB_HEAD, repeat=b"\0" * (1 << 20), times=BOMB_MB))
    env = {**ENV, "CURATE_MAX_DECOMPRESSED_BYTES": str(64 << 20)}
    p, mb = run_measured(curate("--quiet", "extract", "--in", f, "--out", tmp_path / "o", "--workers", 1, "--keep-rejected"), env)
    report_rss("WARC gzip member bomb", mb)
    assert p.returncode == 0, p.stderr
    rec = read_success(tmp_path / "o")
    assert rec["docs_out"] == 4 and rec["counters"]["decompression_bomb"] == 1
    assert rec["rejected"]["decompression_bomb"]["docs"] == 1
    assert "decompression_bomb" in p.stderr and "skipped to the next record" in p.stderr
    assert mb < RSS_BOUND_MB


def test_rss_warc_record_declared_larger_than_the_cap_is_not_inflated(tmp_path):
    head = _BOMB_HEAD.replace(b"Content-Length: 38", b"Content-Length: %d" % (50 << 30))  # declares 50 GB
    f = _warc(tmp_path / "CC-MAIN-2020-50" / "big.warc.gz", _gz_member(head, repeat=b"\0" * (1 << 20), times=50))
    p, mb = run_measured(curate("--quiet", "extract", "--in", f, "--out", tmp_path / "o", "--workers", 1, "--keep-rejected"))
    report_rss("WARC record declaring 50 GB", mb)
    assert p.returncode == 0, p.stderr
    rec = read_success(tmp_path / "o")
    assert rec["docs_out"] == 4 and rec["rejected"]["too_large"]["docs"] == 1 and rec["counters"]["records_over_member_cap"] == 1
    assert mb < RSS_BOUND_MB


def test_rss_deeply_nested_html_times_out(tmp_path):
    depth = 30_000
    deep = ("<html><body>" + "<div><span>" * depth + "x" + "</span></div>" * depth + "</body></html>").encode()
    f = make_warc(tmp_path / "CC-MAIN-2020-50" / "deep.warc.gz", [*pages(1), {"url": "http://deep/", "body": deep, "ctype": "text/html"}])
    p, mb = run_measured(
        curate("--quiet", "extract", "--in", f, "--out", tmp_path / "o", "--workers", 1, "--record-timeout", 1, "--keep-rejected")
    )
    report_rss("HTML nested 30,000 deep", mb)
    assert p.returncode == 0, p.stderr
    rec = read_success(tmp_path / "o")
    assert rec["docs_out"] == 1 and rec["rejected"]["timeout"]["docs"] == 1
    assert mb < RSS_BOUND_MB


def test_zstd_reader_is_bounded_per_call():
    """1 kB of zstd input can inflate to ~32 MB: the reader never asks for more at once."""
    from curate.stages.pile import ZstdFrames

    data = zstandard.ZstdCompressor(level=19).compress(b"\0" * (256 << 20))
    r = ZstdFrames(io.BytesIO(data))
    biggest, total, buf = 0, 0, bytearray(1 << 20)
    while True:
        r._fill()
        biggest = max(biggest, len(r.out))
        n = r.readinto(buf)
        if not n:
            break
        total += n
    assert total == 256 << 20 and biggest <= 40 << 20


# --------------------------------------------------------------------------- 4. configs


LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")
)  # "billion laughs": 9 levels of 9 aliases, 10**9 values once expanded


@pytest.mark.parametrize(
    "text, error",
    [
        ("!!python/object/apply:os.system ['echo pwned > PWNED']\n", "could not determine a constructor"),
        ("sources: !!python/name:os.system\n", "could not determine a constructor"),
        ("a: &a [*a]\n", "refers to itself"),
        (LAUGHS, "expands to more than"),
        ("a: " + "[" * 3000 + "]" * 3000 + "\n", "nested too deeply"),
        ("thresholds:\n  c4:\n    min_words_per_lin: 3\n", "unknown key 'min_words_per_lin' in thresholds.c4; did you mean 'min_words_per_line'?"),
        ("defualt: [c4]\n", "unknown key 'defualt' in the filter config; did you mean 'default'?"),
    ],
)  # fmt: skip
def test_filter_config_is_plain_data_with_known_keys(run, tmp_path, text, error):
    cfg = tmp_path / "filters.yaml"
    cfg.write_text(text)
    src = _docs(tmp_path / "in", ["cc/x"])
    res = run("filter", "--in", src, "--out", tmp_path / "o", "--config", cfg, ok=False)
    assert res.exit_code == 1 and res.stderr.count("\n") == 1
    assert res.stderr.startswith(f"curate: error: {cfg}: ") and error in res.stderr
    assert not (tmp_path / "PWNED").exists() and not Path("PWNED").exists()


@pytest.mark.parametrize(
    "text, error",
    [
        ("total_tokens: 5\nsources:\n  - {name: a, path: X, weigth: 1}\n", "unknown key 'weigth' in sources[0]; did you mean 'weight'?"),
        ("totl_tokens: 5\nsources: []\n", "unknown key 'totl_tokens' in the blend config"),
        ("!!python/object/new:dict {}\n", "could not determine a constructor"),
    ],
)
def test_blend_config_is_plain_data_with_known_keys(run, tmp_path, text, error):
    cfg = tmp_path / "blend.yaml"
    cfg.write_text(text)
    res = run("blend", "--config", cfg, "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 1 and res.stderr.count("\n") == 1 and str(cfg) in res.stderr and error in res.stderr


def test_every_shipped_config_loads(monkeypatch):
    from curate.config import load_yaml
    from curate.stages.blend.config import load_config
    from curate.stages.filters import FilterConfig, default_config_path

    root = Path(__file__).resolve().parents[1]
    for f in [default_config_path(), *root.glob("pipelines/*/filters.yaml")]:
        FilterConfig.from_mapping(load_yaml(f), str(f))
    blends = sorted(root.glob("pipelines/*/blend.yaml"))
    assert len(blends) >= 2, blends
    for f in blends:  # each pipeline's Makefile sets the variables its blend.yaml names
        for var in set(re.findall(r"\$\{(\w+)\}", f.read_text())):
            monkeypatch.setenv(var, f"/tmp/{var.lower()}")
        assert load_config(f).sources, f


# --------------------------------------------------------------------------- invalid UTF-8 in Parquet inputs


def _invalid_utf8_dataset(path: Path) -> Path:
    n = 12
    texts = [prose(i, 60).encode() for i in range(n)]
    texts[2] = b"caf\xc3\xa9 \xed\xa0\x80 lone surrogate. " + texts[2]
    texts[5] = b"\xff\xfe not utf-8 at all. " + texts[5]
    ids = [f"d{i}".encode() for i in range(n)]
    ids[7] = b"id-\xff"
    sources = [b"pile/Wikipedia"] * n
    sources[9] = b"pile/\xc3"
    table = pa.table(
        {
            "id": pa.array(ids, pa.binary()).view(pa.string()),
            "text": pa.array(texts, pa.large_binary()).view(pa.large_string()),  # Arrow does not check on write
            "source": pa.array(sources, pa.binary()).view(pa.string()),
            "url": pa.nulls(n, pa.string()),
            "meta": pa.nulls(n, pa.string()),
        }
    )
    path.mkdir(parents=True)
    pq.write_table(table, path / "part-00000.parquet")
    return path


@pytest.mark.parametrize(
    "stage",
    [
        ["clean"],
        ["langid", "--keep", "all"],
        ["filter"],
        ["dedup", "exact"],
        ["dedup", "fuzzy"],
        ["decontam", "--eval", "EVAL"],
    ],
)
def test_invalid_utf8_in_parquet_is_repaired_and_counted(run, tmp_path, stage):
    src = _invalid_utf8_dataset(tmp_path / "in")
    evals = tmp_path / "eval.jsonl"
    evals.write_text(json.dumps({"text": prose(999, 30)}) + "\n")
    args = [str(evals) if a == "EVAL" else a for a in stage]
    res = run(*args, "--in", src, "--out", tmp_path / "o", "--workers", 1, "--keep-rejected")
    assert "Traceback" not in res.stderr
    rec = read_success(tmp_path / "o")
    assert rec["counters"]["invalid_utf8_repaired"] == {"id": 1, "source": 1, "text": 2}
    assert rec["docs_in"] == 12
    kept = read_table(tmp_path / "o")
    for col in ("id", "text", "source"):
        kept.column(col).validate(full=True)  # what curate writes is valid UTF-8
    assert "id-\ufffd" in kept.column("id").to_pylist() + pq.read_table(tmp_path / "o" / "_rejected").column("id").to_pylist()


def test_invalid_utf8_in_parquet_tokenize_and_download(run, tmp_path):
    src = _invalid_utf8_dataset(tmp_path / "in")
    run("tokenize", "--in", src, "--out", tmp_path / "tok", "--workers", 1)
    rec = json.loads((tmp_path / "tok.stats.json").read_text())
    assert rec["documents"] == 12 and rec["invalid_utf8_repaired"] == {"source": 1, "text": 2}
    pile = tmp_path / "pile"
    pile.mkdir()
    t = pq.read_table(src / "part-00000.parquet").drop_columns(["id", "source", "url", "meta"])
    pq.write_table(t.append_column("meta", pa.array([json.dumps({"pile_set_name": "ArXiv"})] * 12)), pile / "x.parquet")
    run("download", "pile", "--dataset", pile, "--out", tmp_path / "dl")
    rec = read_success(tmp_path / "dl")
    assert rec["docs_out"] == 12 and rec["counters"]["invalid_utf8_repaired"] == 2


# --------------------------------------------------------------------------- 5. outputs that cannot be written


def _mount_tmpfs(path: Path, size: str, ro: bool = False) -> None:
    path.mkdir(parents=True, exist_ok=True)
    opts = f"size={size}" + (",ro" if ro else "")
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({p.stderr.strip() or 'not root'}): disk-full and read-only tests need it")


@pytest.fixture
def tiny_disk(tmp_path):
    mnt = tmp_path / "tiny"
    _mount_tmpfs(mnt, "400k")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.fixture
def read_only(tmp_path):
    mnt = tmp_path / "ro"
    _mount_tmpfs(mnt, "1m", ro=True)
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.fixture(scope="module")
def pile_dataset(tmp_path_factory) -> Path:
    """4 shards of 400 documents (~1 MB compressed): more than the tiny disk holds."""
    root = tmp_path_factory.mktemp("pile")
    rows = [{"text": prose(i, 300), "meta": {"pile_set_name": "Wikipedia (en)"}} for i in range(1600)]
    write_jsonl_zst(root / "src" / "00.jsonl.zst", rows)
    subprocess.run(curate("--quiet", "download", "pile", "--dataset", root / "src", "--shard-docs", 400, "--out", root / "ds"),
                   check=True, env=ENV)  # fmt: skip
    for f in range(3):  # WARC files whose text is more than the tiny disk holds
        long_pages = [{"url": f"http://x/{f}/{i}", "body": f"<html><body><p>{prose(f * 100 + i, 1500)}</p></body></html>".encode(),
                       "ctype": "text/html"} for i in range(100)]  # fmt: skip
        make_warc(root / "cc" / "CC-MAIN-2020-50" / f"{f}.warc.gz", long_pages)
    return root


def _assert_no_partial_outputs(out: Path) -> None:
    for f in out.rglob("part-*.parquet"):
        pq.read_table(f)  # complete, or not there at all
    assert not [f for f in out.rglob("*") if ".tmp." in f.name], "a temporary file was left behind"


OUTPUT_CASES = {
    "clean": lambda ds, out: ["clean", "--in", ds / "ds", "--out", out, "--workers", 2],  # two workers: the pool stops too
    "download pile": lambda ds, out: ["download", "pile", "--dataset", ds / "src", "--shard-docs", 400, "--out", out],
    "dedup exact": lambda ds, out: ["dedup", "exact", "--in", ds / "ds", "--out", out, "--workers", 1],
    "tokenize": lambda ds, out: ["tokenize", "--in", ds / "ds", "--out", out / "tok", "--workers", 1],
    "extract": lambda ds, out: ["extract", "--in", ds / "cc", "--out", out, "--workers", 1],
}


@pytest.mark.parametrize("stage", sorted(OUTPUT_CASES))
def test_disk_full_is_one_line_and_leaves_no_partial_shard(pile_dataset, tiny_disk, stage):
    out = tiny_disk / "out"
    p = subprocess.run(curate("--quiet", *OUTPUT_CASES[stage](pile_dataset, out)), capture_output=True, text=True, env=ENV)
    assert p.returncode == 1
    assert p.stderr.count("\n") == 1 and "No space left on device" in p.stderr, p.stderr
    assert p.stderr.startswith("curate: error: cannot write ") or p.stderr.startswith("curate: error: ")
    assert "Traceback" not in p.stderr
    assert not (out / "_SUCCESS").exists() and not (out / "tok.bin").exists()
    _assert_no_partial_outputs(out)


@pytest.mark.parametrize("stage", sorted(OUTPUT_CASES))
def test_read_only_output_is_one_line(pile_dataset, read_only, stage):
    p = subprocess.run(curate("--quiet", *OUTPUT_CASES[stage](pile_dataset, read_only / "out")), capture_output=True, text=True, env=ENV)
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and "Read-only file system" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_read_only_download_cc_is_one_line(run, host, read_only):
    root, paths, srv = host
    res = _download(run, srv.url, read_only / "out", ok=False)
    assert res.exit_code == 1 and res.stderr.count("\n") == 1 and "Read-only file system" in res.stderr


def test_fatal_output_errors_stop_the_executor():
    """A disk-full error in one shard stops the stage; other shard errors are collected."""
    from curate.errors import OutputError, ShardError
    from curate.executor import LocalExecutor, fatal_error

    assert isinstance(fatal_error(OSError(errno.ENOSPC, "No space left on device", "/x")), OutputError)
    assert fatal_error(OSError(errno.ENOENT, "gone")) is None
    ran: list[int] = []

    def job(i: int) -> int:
        ran.append(i)
        if i == 1:
            raise OSError(errno.ENOSPC, "No space left on device", "/out/part-00001.parquet")
        if i == 0:
            raise ValueError("a bad shard")
        return i

    with pytest.raises(OutputError, match="cannot write /out/part-00001.parquet: No space left on device"):
        LocalExecutor(1).map(job, list(range(5)), labels=[str(i) for i in range(5)], desc="t")
    assert ran == [0, 1]  # shard 0's own error did not stop it; the disk-full one did
    with pytest.raises(ShardError):
        LocalExecutor(1).map(lambda i: 1 / 0, [0, 1], labels=["a", "b"], desc="t")
