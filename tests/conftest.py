"""Shared fixtures: a CLI runner and small real input files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from click.testing import CliRunner
from hypothesis import HealthCheck, settings

from curate.cli import cli

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data"

os.environ.setdefault("CURATE_PROGRESS", "log")

# Hypothesis profiles (tests/test_fuzz.py): "ci" for `make test` (few examples, the same ones every run),
# "fuzz" for `make fuzz` (HYPOTHESIS_PROFILE=fuzz: many random examples).
settings.register_profile("ci", max_examples=30, deadline=None, derandomize=True, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
settings.register_profile("fuzz", max_examples=3000, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from at which but have an they "
    "you were her she there been one all we their has would when if so no what up out who them some could more my "
    "than first time very into over new only years other about also these two people may after most should used any "
    "water city river history music language science system government university world century war king church "
    "between during under known called including although however several later became began each early large small"
).split()


def prose(seed: int, n_words: int = 120) -> str:
    """Deterministic English-like prose with sentence punctuation."""
    import random

    rng = random.Random(seed)
    out, sentence = [], []
    for _ in range(n_words):
        sentence.append(rng.choice(WORDS))
        if len(sentence) >= rng.randint(8, 16):
            out.append(" ".join(sentence).capitalize() + ".")
            sentence = []
    if sentence:
        out.append(" ".join(sentence).capitalize() + ".")
    return " ".join(out)


def write_jsonl_zst(path: Path, rows: list[dict | str]) -> Path:
    """Rows (dicts, or raw strings for broken lines) as a .jsonl.zst file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    path.write_bytes(zstandard.ZstdCompressor(level=3, write_checksum=True).compress(("\n".join(lines) + "\n").encode()))
    return path


def write_raw_shard(path: Path, texts: list[bytes], source: str = "cc/x") -> Path:
    """A dataset directory of one shard whose ``text`` holds these bytes unchecked (Arrow does not
    validate UTF-8 on write): ids a, b, c, ... Returns the directory."""
    n = len(texts)
    table = pa.table(
        {
            "id": [chr(ord("a") + i) for i in range(n)],
            "text": pa.array(texts, pa.large_binary()).view(pa.large_string()),
            "source": [source] * n,
            "url": pa.nulls(n, pa.string()),
            "meta": pa.nulls(n, pa.string()),
        }
    )
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path / "part-00000.parquet")
    return path


def pile_rows(n: int, subsets: list[str], start: int = 0) -> list[dict]:
    return [{"text": prose(start + i), "meta": {"pile_set_name": subsets[i % len(subsets)]}} for i in range(n)]


@pytest.fixture
def run():
    """Run ``curate ARGS`` in-process; returns click's Result (exit_code, stdout, stderr)."""
    runner = CliRunner()

    def _run(*args: str, ok: bool = True):
        result = runner.invoke(cli, [str(a) for a in args], catch_exceptions=False)
        if ok and result.exit_code != 0:
            raise AssertionError(f"curate {' '.join(map(str, args))} exited {result.exit_code}:\n{result.stdout}\n{result.stderr}")
        return result

    return _run


@pytest.fixture
def small_pile(tmp_path: Path) -> Path:
    """Two .jsonl.zst files, 3 subsets, 300 documents."""
    d = tmp_path / "pile"
    subsets = ["Wikipedia (en)", "ArXiv", "Github"]
    write_jsonl_zst(d / "00.jsonl.zst", pile_rows(150, subsets))
    write_jsonl_zst(d / "01.jsonl.zst", pile_rows(150, subsets, start=150))
    return d
