"""The Ray cluster commands of docs/ray.md, run as written on a two-node cluster on this machine (token auth on)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, SAMPLE
from tests.test_runtime import data_digest

pytest.importorskip("ray", reason="Ray is not installed (pip install 'curate[ray]')")
pytestmark = pytest.mark.slow


def documented_block(page: Path, marker: str) -> str:
    text = page.read_text()
    m = re.search(rf"<!-- runnable: {re.escape(marker)} -->\n```bash\n(.*?)```", text, re.S)
    assert m, f"{page}: no block marked {marker}"
    return m.group(1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_node_cluster_with_token_auth_runs_stages_byte_identical_to_local(tmp_path):
    import ray

    if ray.is_initialized():  # `ray stop --force` below would kill this process's own Ray, and then this process
        ray.shutdown()
    block = documented_block(ROOT / "docs" / "ray.md", "ray-cluster")
    port = str(free_port())
    bindir = Path(sys.executable).parent
    lines = []
    for line in block.splitlines():
        if line.strip().startswith("pip install"):
            continue  # installed already
        line = line.replace("HEAD_IP:6379", f"127.0.0.1:{port}").replace("--port=6379", f"--port={port} --node-ip-address=127.0.0.1")
        if line.startswith("ray start --address"):
            line += " --node-ip-address=127.0.0.1 --num-cpus=1"
        if line.startswith("ray start --head"):
            line += " --num-cpus=1 --include-dashboard=false"
        lines.append(line)
    script = "set -euo pipefail\n" + "\n".join(lines) + "\n"
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "PATH": f"{bindir}:{os.environ['PATH']}", "CURATE_PROGRESS": "log"}
    env.pop("RAY_AUTH_TOKEN", None)
    work = tmp_path / "w"
    work.mkdir()
    subprocess.run([*map(str, (bindir / "curate",)), "--quiet", "download", "pile", "--dataset", SAMPLE / "pile", "--max-docs", "40",
                    "--shard-docs", "60", "--out", work / "out" / "pile"], check=True, env=env)  # fmt: skip
    subprocess.run([str(bindir / "curate"), "--quiet", "clean", "--in", work / "out" / "pile", "--out", work / "out" / "clean"],
                   check=True, env=env)  # fmt: skip
    try:
        r = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        assert (home / ".ray" / "auth_token").exists()
        status = subprocess.run(["ray", "status", "--address", f"127.0.0.1:{port}"], env={**env, "RAY_AUTH_MODE": "token"},
                                capture_output=True, text=True, timeout=120)  # fmt: skip
        assert len(re.findall(r"^\s*1 node_", status.stdout, re.M)) == 2, status.stdout + status.stderr  # two nodes
    finally:
        subprocess.run(["ray", "stop", "--force"], env=env, capture_output=True, timeout=120)
    for stage, extra in (("langid", ["--in", work / "out" / "clean"]), ("dedup fuzzy", ["--in", work / "local" / "langid"])):
        subprocess.run([str(bindir / "curate"), "--quiet", *stage.split(), *extra, "--out", work / "local" / stage.split()[-1], "--workers", "2"],
                       check=True, env=env)  # fmt: skip
    assert data_digest(work / "out" / "langid") == data_digest(work / "local" / "langid")
    assert data_digest(work / "out" / "fuzzy") == data_digest(work / "local" / "fuzzy")
    shutil.rmtree(home, ignore_errors=True)
