"""`curate quality bucket`: exact weighted percentile thresholds (against a plain sort), the maximum bucket, any worker count."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from curate.cli import cli
from curate.dataset import read_success
from curate.stages.quality.bucket import sortable, unsortable


def cli_run(*args: object, ok: bool = True):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    if ok and result.exit_code != 0:
        raise AssertionError(f"curate {' '.join(map(str, args))} exited {result.exit_code}:\n{result.stdout}\n{result.stderr}")
    return result


def _dataset(d: Path, n: int = 3000, shards: int = 4) -> pd.DataFrame:
    """Scores with ties, NaN and a skewed distribution, in several shards; texts of 1..60 words."""
    rng = np.random.default_rng(5)
    a = rng.beta(0.5, 3, n).astype(np.float32)
    a[rng.random(n) < 0.1] = np.float32(0.25)  # a tie across many documents
    a[rng.random(n) < 0.03] = np.nan
    b = np.round(rng.random(n), 2).astype(np.float32)
    words = rng.integers(1, 60, n)
    texts = [" ".join(["w"] * int(k)) + ("\n\t x" if i % 5 == 0 else "") for i, k in enumerate(words)]
    df = pd.DataFrame({"id": [f"d{i:05d}" for i in range(n)], "text": texts, "source": "cc/x", "a": a, "b": b})
    d.mkdir(parents=True)
    for s, part in enumerate(np.array_split(np.arange(n), shards)):
        pq.write_table(pa.Table.from_pandas(df.iloc[part], preserve_index=False), d / f"part-{s:05d}.parquet")
    return df


def _plain_thresholds(scores: np.ndarray, weights: np.ndarray, buckets: int) -> list[float]:
    """The definition, by a sort: t_k = the smallest score whose cumulative weight reaches k * W / B."""
    ok = ~np.isnan(scores)
    s, w = scores[ok], weights[ok]
    order = np.argsort(s, kind="stable")
    s, cum = s[order], np.cumsum(w[order])
    total = cum[-1]
    out = []
    for k in range(1, buckets):
        i = int(np.argmax(cum * buckets >= k * total))
        out.append(float(s[i]))
    return out


def test_sortable_keys_sort_as_floats():
    x = np.array([-np.inf, -2.5, -1e-30, -0.0, 0.0, 1e-40, 0.25, 1.0, np.inf], np.float32)
    keys = sortable(x)
    assert np.all(np.diff(keys.astype(np.int64)) >= 0) and np.array_equal(unsortable(keys).view(np.uint32), x.view(np.uint32))


def test_thresholds_match_a_plain_sort_and_buckets_are_the_maximum(tmp_path):
    df = _dataset(tmp_path / "in")
    tokens = np.array([len(t.split()) for t in df["text"]], np.int64)
    results = {}
    for workers in (1, 2):
        out = tmp_path / f"out{workers}"
        r = cli_run("quality", "bucket", "--in", tmp_path / "in", "--columns", "a,b", "--buckets", "20", "--weight", "tokens",
                    "--out", out, "--workers", workers)  # fmt: skip
        rec = read_success(out)
        results[workers] = (rec["buckets"], pd.read_parquet(out).sort_values("id").reset_index(drop=True))
        assert "a: 2," in r.stdout and "thresholds" in r.stdout and not (out / "_work" / "hist").exists()
    (b1, out1), (b2, out2) = results[1], results[2]
    assert b1["columns"] == b2["columns"] and out1["quality_bucket"].equals(out2["quality_bucket"])
    for col in ("a", "b"):
        expected = _plain_thresholds(df[col].to_numpy(), tokens, 20)
        assert b1["columns"][col]["thresholds"] == expected, col
        assert b1["columns"][col]["weight_total"] == int(tokens[~np.isnan(df[col].to_numpy())].sum())
    assert b1["n"] == 20 and b1["weight"] == "tokens" and out1["quality_bucket"].dtype == np.int8
    ta, tb = (np.array(b1["columns"][c]["thresholds"], np.float32) for c in ("a", "b"))
    a, b = df["a"].to_numpy(), df["b"].to_numpy()
    ba = np.where(np.isnan(a), -1, np.searchsorted(ta, a, side="left"))
    bb = np.searchsorted(tb, b, side="left")
    assert np.array_equal(out1["quality_bucket"].to_numpy(), np.maximum(ba, bb))
    # each bucket of column b holds about 1/20 of the tokens (b has 100 distinct values, so ties make it rough)
    share = np.bincount(bb, weights=tokens, minlength=20) / tokens.sum()
    assert share.max() < 0.12 and (share > 0).sum() >= 15


def test_docs_weight_and_errors(tmp_path):
    df = _dataset(tmp_path / "in", n=500, shards=2)
    out = tmp_path / "docs"
    cli_run("quality", "bucket", "--in", tmp_path / "in", "--columns", "a", "--buckets", "4", "--weight", "docs", "--out", out)
    rec = read_success(out)
    assert rec["buckets"]["columns"]["a"]["thresholds"] == _plain_thresholds(df["a"].to_numpy(), np.ones(500, np.int64), 4)
    got = pd.read_parquet(out).set_index("id").loc[df["id"]]
    assert got["quality_bucket"].isna().sum() == int(df["a"].isna().sum()) > 0  # no score: no bucket, still kept
    assert sum(rec["counters"]["bucket_docs"].values()) == int(df["a"].notna().sum())
    sel = tmp_path / "sel"
    cli_run("quality", "bucket", "--in", tmp_path / "in", "--columns", "a", "--buckets", "4", "--weight", "docs", "--out", sel,
            "--min-bucket", "2", "--keep-rejected")  # fmt: skip
    kept, rejected = pd.read_parquet(sel), pd.read_parquet(sel / "_rejected")
    assert (kept["quality_bucket"] >= 2).all() and len(kept) + len(rejected) == 500
    assert set(rejected["reason"]) == {"quality_bucket"} and set(kept["id"]) == set(got.index[got["quality_bucket"] >= 2])
    mid = tmp_path / "mid"
    cli_run("quality", "bucket", "--in", tmp_path / "in", "--columns", "a", "--buckets", "4", "--weight", "docs", "--out", mid,
            "--min-bucket", "1", "--max-bucket", "2")  # fmt: skip
    assert set(pd.read_parquet(mid)["id"]) == set(got.index[got["quality_bucket"].isin([1, 2])])
    r = cli_run("quality", "bucket", "--in", tmp_path / "in", "--columns", "nope", "--out", tmp_path / "o", ok=False)
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 1 and len(lines) == 1 and "nope" in lines[0], r.stderr
    r = cli_run("quality", "bucket", "--in", tmp_path / "in", "--columns", "a", "--buckets", "200", "--out", tmp_path / "o", ok=False)
    assert r.exit_code != 0 and "200" in r.stderr


def test_blend_sources_take_bucket_ranges(tmp_path):
    """blend.yaml `buckets: lo-hi` on a dataset directory: only the documents of that quality_bucket range are tokenized."""
    from curate.errors import CurateError
    from curate.stages.blend.config import load_config

    df = _dataset(tmp_path / "in", n=400, shards=2)
    df["source"] = "cc/x"
    cli_run("quality", "bucket", "--in", tmp_path / "in", "--columns", "b", "--buckets", "4", "--weight", "docs",
            "--out", tmp_path / "bucketed")  # fmt: skip
    cfg = tmp_path / "blend.yaml"
    cfg.write_text(f"total_tokens: auto\nsources:\n  - {{name: high, path: {tmp_path / 'bucketed'}, buckets: 3-3, epochs: 1}}\n"
                   f"  - {{name: rest, path: {tmp_path / 'bucketed'}, buckets: [0, 2], epochs: 1}}\n")  # fmt: skip
    assert [s.buckets for s in load_config(cfg).sources] == [(3, 3), (0, 2)]
    cli_run("blend", "--config", cfg, "--out", tmp_path / "blend", "--workers", "1")
    got = pd.read_parquet(tmp_path / "bucketed")
    docs = {row["name"]: row["documents"] for row in read_success(tmp_path / "blend")["rows"]}
    assert docs == {"high": int((got["quality_bucket"] == 3).sum()), "rest": int((got["quality_bucket"] <= 2).sum())}
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"sources:\n  - {{name: a, path: {tmp_path / 'bucketed'}, buckets: 5-2, epochs: 1}}\n")
    try:
        load_config(bad)
        raise AssertionError("5-2 accepted")
    except CurateError as exc:
        assert "buckets must be a quality_bucket range such as 15-19" in str(exc)
