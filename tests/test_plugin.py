"""An installed package adds a stage, an extractor and a filter rule set to curate, touching nothing in curate.

``tests/plugin`` is such a package (``curate-example-plugin``): three modules, each registered
by its decorator, found through its entry points. The fixture installs it with pip into a
directory of its own (``--target``, from a copy, offline), and every test runs ``curate`` in a
subprocess with that directory on ``PYTHONPATH``: the same discovery an installed plugin gets.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import ROOT, SAMPLE, prose

PLUGIN = ROOT / "tests" / "plugin"
WARC = next(SAMPLE.glob("cc/crawl-data/CC-MAIN-2020-50/segments/*/warc/*.warc.gz"))


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a Python with the example plugin installed (pip install --target)."""
    tmp = tmp_path_factory.mktemp("plugin")
    src, site = tmp / "src", tmp / "site"
    shutil.copytree(PLUGIN, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index", "--target",
                    str(site), str(src)], check=True, capture_output=True, text=True)  # fmt: skip
    assert (site / "curate_example_plugin" / "stage.py").is_file()
    return {**os.environ, "PYTHONPATH": str(site), "CURATE_PROGRESS": "log"}


def curate(env: dict[str, str], *args: object, ok: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "curate", *map(str, args)], env=env, capture_output=True, text=True, timeout=300)
    if ok and r.returncode != 0:
        raise AssertionError(f"curate {' '.join(map(str, args))} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r


def docs(path: Path, texts: list[str]) -> Path:
    """A user's Parquet file of documents (ids d0, d1, ...)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    n = len(texts)
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(n)], "text": texts, "source": ["web/x"] * n}), path)
    return path


def test_the_plugin_stage_is_a_command_listed_in_its_section(plugin_env):
    out = curate(plugin_env, "--help").stdout
    clean = out.split("Clean:")[1].split("Select:")[0]
    assert "shout" in clean and "Upper-case the text of short documents" in clean
    assert out.index("langid") < out.index("shout")  # order=90: after the built-in clean stages
    h = curate(plugin_env, "shout", "--help").stdout
    assert "--max-chars" in h and "--only-sources" in h and "--format" in h  # the shared options of a map stage


def test_the_plugin_stage_runs_through_the_lifecycle(plugin_env, tmp_path):
    src = docs(tmp_path / "in" / "docs.parquet", [prose(i, 30) for i in range(5)] + ["x" * 60])
    out = tmp_path / "shout"
    r = curate(plugin_env, "shout", "--in", src, "--out", out, "--max-chars", 50_000, "--keep-rejected", "--workers", 1)
    assert r.stdout.startswith("shout: 6 -> 6 docs")
    df = pd.read_parquet(out)
    assert list(df["id"]) == [f"d{i}" for i in range(6)] and (df["text"] == df["text"].str.upper()).all()
    rec = json.loads((out / "_SUCCESS").read_text())
    assert rec["stage"] == "shout" and rec["params"]["max_chars"] == 50_000  # a declared field reaches the record
    r = curate(plugin_env, "shout", "--in", src, "--out", out, "--max-chars", 40, "--keep-rejected", ok=False)
    assert r.returncode == 1 and "other parameters (max_chars 50000 -> 40)" in r.stderr  # the runtime's rules hold for it
    r = curate(plugin_env, "shout", "--in", src, "--out", tmp_path / "short", "--max-chars", 100, "--keep-rejected")
    assert "rejected: too_long 5" in r.stdout
    assert set(pd.read_parquet(tmp_path / "short" / "_rejected")["reason"]) == {"too_long"}


def test_the_plugin_extractor_is_an_extract_choice(plugin_env, tmp_path):
    assert "headline" in curate(plugin_env, "extract", "--help").stdout
    out = tmp_path / "headlines"
    curate(plugin_env, "extract", "--in", WARC, "--out", out, "--extractor", "headline", "--workers", 1)  # in the time-limit helper
    df = pd.read_parquet(out)
    assert len(df) > 0 and df["text"].str.len().max() < 400  # titles and headings only, not articles
    rec = json.loads((out / "_SUCCESS").read_text())
    assert rec["params"]["extractor"] == "headline"


def test_the_plugin_rule_set_runs_where_a_config_names_it(plugin_env, tmp_path):
    src = docs(tmp_path / "in" / "docs.parquet", [prose(1, 40), "Order 1234 5678 9012 3456 7890 1234 5678 9012.", prose(2, 40)])
    cfg = tmp_path / "filters.yaml"
    cfg.write_text("default: [digits]\nthresholds:\n  digits:\n    max_digit_ratio: 0.3\n")
    out = tmp_path / "f"
    r = curate(plugin_env, "filter", "--in", src, "--out", out, "--config", cfg, "--keep-rejected")
    assert "rejected: digits:digit_ratio 1" in r.stdout
    assert list(pd.read_parquet(out)["id"]) == ["d0", "d2"]
    assert "digits" in curate(plugin_env, "filter", "--help").stdout  # in --rules' help, generated from the registry
    bad = tmp_path / "bad.yaml"
    bad.write_text("default: [digitz]\n")
    r = curate(plugin_env, "filter", "--in", src, "--out", tmp_path / "g", "--config", bad, ok=False)
    assert r.returncode != 0 and "digitz" in r.stderr and "digits" in r.stderr and "Traceback" not in r.stderr


def test_without_the_plugin_curate_does_not_know_it(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = curate(env, "shout", "--help", ok=False)
    assert r.returncode == 2 and "No such command 'shout'" in r.stderr
