"""`curate quality train|score`: the fastText quality classifier on the sample data (Pile subsets vs CommonCrawl)."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xxhash
from click.testing import CliRunner

from curate.cli import cli
from curate.dataset import read_success, read_table
from curate.errors import CurateError
from curate.fasttext import read_model_info
from curate.stages.quality.data import NEG_LABEL, POS_LABEL, ClassInput, build_training_data, normalize_text, pareto_draws, uniforms
from curate.stages.quality.score import BUCKET_KEYS
from curate.stages.quality.train import binary_metrics, roc_auc
from tests.conftest import SAMPLE

ROOT = Path(__file__).resolve().parents[1]
LID = ROOT / "curate" / "resources" / "lid.176.ftz"
POS_SOURCES = "pile/Wikipedia,pile/Gutenberg_PG-19,pile/BookCorpus2,pile/OpenWebText2"
# Small and fast, but enough passes for a few hundred documents (the defaults suit 100k per class).
FAST = ["--epoch", "15", "--lr", "0.5", "--dim", "16", "--bucket", "50000", "--threads", "1", "--seed", "3"]

pytestmark = pytest.mark.skipif(
    not (SAMPLE / "cc" / "MANIFEST.json").exists() or not (SAMPLE / "pile" / "train").exists(), reason="sample_data not built"
)


def cli_run(*args: str, ok: bool = True):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    if ok and result.exit_code != 0:
        raise AssertionError(f"curate {' '.join(map(str, args))} exited {result.exit_code}:\n{result.stdout}\n{result.stderr}")
    return result


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    """Positives: 4 curated Pile subsets of the sample (822 docs, all of pile/ in `mixed`); negatives: the CC sample extracted (n_cc)."""
    d = tmp_path_factory.mktemp("quality")
    cli_run("download", "pile", "--dataset", SAMPLE / "pile", "--shard-docs", "300", "--out", d / "pile")
    cli_run("extract", "--in", SAMPLE / "cc", "--out", d / "cc", "--workers", "1")
    model = d / "model" / "model.bin"
    result = cli_run("quality", "train", "--pos", d / "pile", "--pos-sources", POS_SOURCES, "--neg", d / "cc", "--neg-sources", "cc/*",
                     "--out", d / "model", "--folds", "1", "--valid-fraction", "0.25", "--keep-data", *FAST)  # fmt: skip
    n_cc = len(pd.read_parquet(d / "cc", columns=["id"]))  # the CommonCrawl documents extracted (282 before issue 18's web articles)
    return {"dir": d, "pile": d / "pile", "cc": d / "cc", "model": model, "train_stdout": result.stdout, "n_cc": n_cc}


# --------------------------------------------------------------------------- training


def test_train_separates_held_out_positives_from_negatives(corpus):
    out = corpus["train_stdout"]
    assert "ROC AUC" in out and "precision" in out and "recall" in out and "F1" in out
    metrics = json.loads(Path(f"{corpus['model']}.metrics.json").read_text())
    assert json.loads((corpus["model"].parent / "_SUCCESS").read_text())["valid"] == metrics["valid"]
    v = metrics["valid"]
    assert v["positives"] >= 40 and v["negatives"] >= 40
    assert v["roc_auc"] >= 0.9, v  # chance is 0.5; measured 0.95-1.0 on this sample
    assert v["f1"] >= 0.8, v
    assert f"ROC AUC {v['roc_auc']:.4f}" in out
    d = metrics["data"]
    # balanced: the 822 positives are cut to the negatives
    n = corpus["n_cc"]
    assert d["available"] == {"positive": 822, "negative": n}
    assert d["per_class"] == n
    assert d["train"]["positive"] + d["valid"]["positive"] + d["empty_skipped"] == n
    assert d["train"]["negative"] + d["valid"]["negative"] <= n
    assert set(d["sources"]["positive"]) <= set(POS_SOURCES.split(","))
    assert set(d["sources"]["negative"]) == {"cc/CC-MAIN-2020-50", "cc/CC-MAIN-2021-04"}
    # The kept held-out file: recompute the AUC from the model with fastText directly.
    import fasttext

    model = fasttext.load_model(str(corpus["model"]))
    labels, scores = [], []
    for line in Path(f"{corpus['model']}.valid.txt").read_text().splitlines():
        label, text = line.split(" ", 1)
        labs, probs = model.predict(text, k=-1)
        labels.append(label == POS_LABEL)
        scores.append(dict(zip(labs, probs)).get(POS_LABEL, 0.0))
    assert len(labels) == v["docs"]
    assert roc_auc(np.array(labels), np.array(scores)) == pytest.approx(v["roc_auc"], abs=1e-5)
    train_lines = Path(f"{corpus['model']}.train.txt").read_text().splitlines()
    assert len(train_lines) == d["train"]["positive"] + d["train"]["negative"]
    first = [ln.split(" ", 1)[0] for ln in train_lines[:60]]
    assert POS_LABEL in first and NEG_LABEL in first  # shuffled, not one class after the other
    assert all((t := ln.split(" ", 1)[1]) == normalize_text(t) for ln in train_lines[:50])  # normalised (idempotent)


def test_single_thread_training_is_bit_reproducible(corpus, tmp_path):
    args = ["quality", "train", "--pos", corpus["pile"], "--pos-sources", POS_SOURCES, "--neg", corpus["cc"],
            "--max-docs-per-class", "120", "--folds", "1", *FAST]  # fmt: skip
    cli_run(*args, "--out", tmp_path / "a")
    cli_run(*args, "--out", tmp_path / "b")
    assert (tmp_path / "a" / "model.bin").read_bytes() == (tmp_path / "b" / "model.bin").read_bytes()
    a = json.loads((tmp_path / "a" / "model.bin.metrics.json").read_text())
    assert a["data"]["per_class"] == 120 and a["reproducible"] is True
    assert not list((tmp_path / "a").glob(".*"))  # the temporary data directory is gone


def test_training_sample_does_not_depend_on_sharding(corpus, tmp_path):
    """The same documents, in one shard or many, in any order, give byte-identical training and held-out files."""
    whole = tmp_path / "whole"
    whole.mkdir()
    cc = read_table(corpus["cc"])
    pq.write_table(cc.take(np.arange(cc.num_rows)[::-1]), whole / "all.parquet")  # one shard, rows reversed
    pile_one = tmp_path / "pile_one"
    pile_one.mkdir()
    pile = read_table(corpus["pile"])
    pq.write_table(pile.take(np.random.default_rng(0).permutation(pile.num_rows)), pile_one / "x.parquet")  # shuffled
    files = []
    for name, pos_dir, neg_dir in (("sharded", corpus["pile"], corpus["cc"]), ("whole", pile_one, whole)):
        data = build_training_data(
            ClassInput(POS_LABEL, [str(pos_dir)], POS_SOURCES),
            ClassInput(NEG_LABEL, [str(neg_dir)], "cc/*"),
            tmp_path / name,
            max_docs_per_class=100,
            valid_fraction=0.2,
            seed=5,
        )
        assert data.per_class == 100
        assert sum(data.train_docs.values()) + sum(data.valid_docs.values()) == 200 - data.empty_skipped
        files.append((data.train_path.read_bytes(), data.valid_path.read_bytes()))
    assert files[0] == files[1]
    other = build_training_data(
        ClassInput(POS_LABEL, [str(corpus["pile"])], POS_SOURCES),
        ClassInput(NEG_LABEL, [str(corpus["cc"])]),
        tmp_path / "seed6",
        max_docs_per_class=100,
        valid_fraction=0.2,
        seed=6,
    )
    assert other.train_path.read_bytes() != files[0][0]  # another seed, another sample


def test_empty_class_and_bad_options_are_one_line_errors(corpus, tmp_path):
    r = cli_run("quality", "train", "--pos", corpus["pile"], "--pos-sources", "pile/NoSuchSubset", "--neg", corpus["cc"],
                "--out", tmp_path / "m", ok=False)  # fmt: skip
    assert r.exit_code == 1
    assert r.stderr.strip() == f"curate: error: no positive training documents in {corpus['pile']} (sources pile/NoSuchSubset)"
    r = cli_run("quality", "train", "--pos", corpus["pile"], "--neg", tmp_path / "missing", "--out", tmp_path / "m", ok=False)
    assert r.exit_code == 1 and "missing: no such file or directory" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = cli_run("quality", "train", "--pos", corpus["pile"], "--neg", corpus["cc"], "--out", tmp_path, ok=False)
    assert r.exit_code == 1 and "was not written by curate" in r.stderr  # a directory of the user's: never written into
    assert not (tmp_path / "m" / "model.bin").exists()


def test_cross_fitted_scores_come_from_models_that_never_saw_the_document(corpus, tmp_path):
    """--folds 3: each document, training negatives included, is scored by the one model that did not train on it (nor on a copy)."""
    import fasttext

    from curate.stages.quality.data import fold_of

    out = tmp_path / "cf"
    r = cli_run("quality", "train", "--pos", corpus["pile"], "--pos-sources", POS_SOURCES, "--neg", corpus["cc"], "--neg-sources", "cc/*",
                "--out", out, "--folds", "3", "--keep-data", *FAST)  # fmt: skip
    rec = read_success(out)
    assert rec["folds"] == 3 and rec["models"] == ["fold-0.bin", "fold-1.bin", "fold-2.bin"]
    assert "out-of-fold" in r.stdout and rec["valid"]["docs"] == rec["data"]["sampled"]["positive"] + rec["data"]["sampled"]["negative"]
    train = {k: set((out / f"fold-{k}.train.txt").read_text().splitlines()) for k in range(3)}
    valid = {k: set((out / f"fold-{k}.valid.txt").read_text().splitlines()) for k in range(3)}
    for k in range(3):
        assert not train[k] & valid[k] and valid[k]
        assert train[k] == set().union(*(valid[j] for j in range(3) if j != k))
    for w in ("2", "1"):
        cli_run("quality", "score", "--in", corpus["cc"], "--out", tmp_path / f"s{w}", "--model", out, "--workers", w)
    df = pd.read_parquet(tmp_path / "s2")
    assert df["quality_score"].tolist() == pd.read_parquet(tmp_path / "s1")["quality_score"].tolist()  # any worker count
    assert read_success(tmp_path / "s2")["params"]["folds"] == 3
    folds = fold_of([normalize_text(t) for t in df["text"]], 3, 3)  # FAST trains with --seed 3
    models = [fasttext.load_model(str(out / f"fold-{k}.bin")) for k in range(3)]
    negatives = 0
    for (text, score), k in zip(df[["text", "quality_score"]].itertuples(index=False), folds):
        line = f"{NEG_LABEL} {normalize_text(text)}"
        assert line not in train[k]  # the model that scored it never saw it
        negatives += line in valid[k]  # ... though the document was a training negative (of the other models)
        labs, probs = models[k].predict(normalize_text(text), k=-1)
        assert score == pytest.approx(dict(zip(labs, probs)).get(POS_LABEL, 0.0), abs=1e-5)
    assert negatives >= 0.85 * corpus["n_cc"]  # nearly all CommonCrawl documents were training negatives


# --------------------------------------------------------------------------- scoring


def test_pareto_formula_on_a_computed_example():
    """u = (xxh64(id, seed) >> 11) / 2**53; draw = (1 - u) ** (-1 / alpha) - 1; kept when draw > 1 - score."""
    h = xxhash.xxh64_intdigest(b"doc-42", seed=1)
    assert h == 5506706641794066569
    u = (h >> 11) / 2**53
    assert u == uniforms(["doc-42"], 1)[0] == 0.29851916521367416
    draw = (1 - u) ** (-1 / 9) - 1
    assert draw == pytest.approx(0.0401820484913012, rel=1e-12)
    assert pareto_draws(["doc-42"], 1, 9.0)[0] == pytest.approx(draw, rel=1e-12)
    # so doc-42 is kept when its score exceeds 1 - 0.0401820... = 0.95981795...
    # Many ids: the vectorised draws equal the scalar formula, and keep with probability (2 - s)^-alpha.
    ids = [f"urn:uuid:{i:08d}" for i in range(20000)]
    draws = pareto_draws(ids, 7, 9.0)
    for i in (0, 1, 999, 19999):
        ui = (xxhash.xxh64_intdigest(ids[i].encode(), seed=7) >> 11) / 2**53
        assert draws[i] == pytest.approx((1 - ui) ** (-1 / 9) - 1, rel=1e-12, abs=1e-15)
    for s in (0.0, 0.5, 0.9):
        assert np.mean(draws > 1 - s) == pytest.approx((2 - s) ** -9, abs=0.004)
    # numpy's own Pareto sampler has the same distribution (its mean is 1 / (alpha - 1))
    assert draws.mean() == pytest.approx(np.random.default_rng(0).pareto(9.0, 200000).mean(), rel=0.05)


def _scored(out: Path) -> pd.DataFrame:
    kept = pd.read_parquet(out)
    kept["kept"] = True
    rej = out / "_rejected"
    if rej.exists() and any(rej.glob("*.parquet")):
        r = pd.read_parquet(rej)
        r["kept"] = False
        kept = pd.concat([kept, r], ignore_index=True)
    return kept.sort_values("id").reset_index(drop=True)


def test_pareto_keeps_the_same_documents_for_any_workers_or_sharding(corpus, tmp_path):
    model = corpus["model"]
    base = ["quality", "score", "--model", model, "--mode", "pareto", "--seed", "11", "--keep-rejected"]
    cli_run(*base, "--in", corpus["cc"], "--out", tmp_path / "w1", "--workers", "1")
    r2 = cli_run(*base, "--in", corpus["cc"], "--out", tmp_path / "w2", "--workers", "2")
    shards = sorted(p.name for p in (tmp_path / "w1").glob("part-*.parquet"))
    assert len(shards) == 4
    for name in shards:
        assert (tmp_path / "w1" / name).read_bytes() == (tmp_path / "w2" / name).read_bytes()
        assert (tmp_path / "w1" / "_rejected" / name).read_bytes() == (tmp_path / "w2" / "_rejected" / name).read_bytes()
    # one shard instead of four: the same documents kept, with the same scores
    whole = tmp_path / "whole"
    whole.mkdir()
    pq.write_table(read_table(corpus["cc"]), whole / "all.parquet")
    cli_run(*base, "--in", whole, "--out", tmp_path / "one", "--workers", "1")
    a, b = _scored(tmp_path / "w1"), _scored(tmp_path / "one")
    assert a["id"].tolist() == b["id"].tolist()
    assert a["kept"].tolist() == b["kept"].tolist()
    assert np.array_equal(a["quality_score"].to_numpy(), b["quality_score"].to_numpy())
    # every decision is the formula, computed here independently
    for doc_id, score, kept in zip(a["id"], a["quality_score"], a["kept"]):
        u = (xxhash.xxh64_intdigest(doc_id.encode(), seed=11) >> 11) / 2**53
        draw = math.expm1(-math.log1p(-u) / 9)
        assert kept == (draw > 1 - float(score)), (doc_id, score)
    assert set(a.loc[~a["kept"], "reason"]) == {"quality"}
    # GPT-3 style sampling keeps some web documents, mostly high-scoring ones
    assert 0 < a["kept"].sum() < len(a) * 0.5
    assert a.loc[a["kept"], "quality_score"].mean() > a["quality_score"].mean()
    assert "pareto" in r2.stdout and "mean score" in r2.stdout


def test_threshold_annotate_only_sources_and_histograms(corpus, tmp_path):
    model, n = corpus["model"], corpus["n_cc"]
    out = tmp_path / "thr"
    r = cli_run("quality", "score", "--in", corpus["pile"], "--in", corpus["cc"], "--out", out, "--model", model,
                "--only-sources", "cc/*", "--mode", "threshold", "--threshold", "0.5", "--keep-rejected", "--workers", "2")  # fmt: skip
    df = _scored(out)
    pile = df[df["source"].str.startswith("pile/")]
    cc = df[df["source"].str.startswith("cc/")]
    assert len(pile) == 1952 and pile["kept"].all() and pile["quality_score"].isna().all()  # passed through, unscored
    assert len(cc) == n and cc["quality_score"].notna().all()
    assert (cc["kept"] == (cc["quality_score"] >= np.float32(0.5))).all()
    assert 0 < cc["kept"].sum() < n
    rec = read_success(out)
    assert rec["docs_in"] == 1952 + n and rec["docs_out"] == 1952 + int(cc["kept"].sum())
    assert rec["rejected"]["quality"]["docs"] == n - int(cc["kept"].sum())
    c = rec["counters"]
    assert c["scored"] == n and c["passed_through"] == 1952
    for src, hist in c["score_hist"]["all"].items():
        assert list(hist) == BUCKET_KEYS
        sel = cc[cc["source"] == src]
        assert sum(hist.values()) == len(sel)
        expect = np.bincount(np.minimum((sel["quality_score"].to_numpy() * 10).astype(int), 9), minlength=10)
        assert list(hist.values()) == expect.tolist()
        assert sum(c["score_hist"]["kept"][src].values()) == int(sel["kept"].sum())
        assert c["score_sum"][src] == pytest.approx(float(sel["quality_score"].astype(float).sum()), rel=1e-5)
    assert "passed through unscored" in r.stdout and "per 0.1:" in r.stdout
    # annotate keeps everything and writes the same scores
    cli_run("quality", "score", "--in", corpus["cc"], "--out", tmp_path / "ann", "--model", model, "--workers", "1")
    ann = pd.read_parquet(tmp_path / "ann").sort_values("id").reset_index(drop=True)
    assert len(ann) == n and ann["quality_score"].dtype == np.float32
    assert pq.read_schema(next((tmp_path / "ann").glob("part-*.parquet"))).field("quality_score").type == pa.float32()
    assert np.array_equal(ann["quality_score"].to_numpy(), cc.sort_values("id")["quality_score"].to_numpy())
    # web pages that copy Wikipedia / OpenWebText2 articles score far above keyword spam
    manifest = json.loads((SAMPLE / "cc" / "MANIFEST.json").read_text())
    kind = {r["record_id"]: r["kind"] for r in manifest["records"]}
    ann["kind"] = ann["id"].map(kind)
    by_kind = ann.groupby("kind")["quality_score"].mean()
    assert by_kind["pile_copy"] > 0.3 > by_kind["keyword_spam"]


def test_foreign_model_with_its_own_labels(corpus, tmp_path):
    """fastText's language-ID model as a stand-in for a foreign classifier: --label en finds __label__en."""
    out = tmp_path / "lid"
    r = cli_run("quality", "score", "--in", corpus["cc"], "--out", out, "--model", LID, "--label", "en", "--normalize", "none",
                "--workers", "1")  # fmt: skip
    rec = read_success(out)
    assert rec["params"]["label"] == "__label__en" and rec["params"]["normalize"] == "none"
    df = pd.read_parquet(out)
    manifest = json.loads((SAMPLE / "cc" / "MANIFEST.json").read_text())
    lang = {r["record_id"]: r.get("lang") for r in manifest["records"]}
    english = df["id"].map(lang) == "en"
    assert english.sum() > 50 and (~english).sum() > 50
    assert df.loc[english, "quality_score"].median() > 0.9 > 0.1 > df.loc[~english, "quality_score"].median()
    assert r.stdout.startswith(f"quality score: {corpus['n_cc']} -> {corpus['n_cc']} docs")


def test_model_errors_are_one_line(corpus, tmp_path):
    inp = ["quality", "score", "--in", corpus["cc"], "--workers", "1"]
    r = cli_run(*inp, "--out", tmp_path / "o1", "--model", LID, ok=False)  # lid has no __label__hq
    assert r.exit_code == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"curate: error: {LID}: the model has no label '__label__hq'; its labels: __label__en,")
    assert "--label" in lines[0]
    not_model = tmp_path / "model.bin"
    not_model.write_text("this is not a model\n" * 100)
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes(corpus["model"].read_bytes()[:5000])  # fastText itself would loop forever on this
    short = tmp_path / "short.bin"
    short.write_bytes(corpus["model"].read_bytes()[:-7])
    cases = [
        (not_model, "not a fastText model"),
        (truncated, "truncated fastText model"),
        (short, "truncated fastText model"),
        (tmp_path / "nope.bin", "no such model file"),
        (tmp_path / "empty_dir", "is a directory"),
    ]
    (tmp_path / "empty_dir").mkdir()
    for path, msg in cases:
        r = cli_run(*inp, "--out", tmp_path / "o2", "--model", path, ok=False)
        assert r.exit_code == 1, path
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"curate: error: {path}: {msg}"), r.stderr
    assert not (tmp_path / "o2").exists()  # checked before any output is written


def test_read_model_info_on_dense_and_quantized_models(corpus, tmp_path):
    lid = read_model_info(LID)
    assert lid.quantized and lid.kind == "supervised" and len(lid.labels) == 176 and lid.labels[0] == "__label__en"
    ours = read_model_info(corpus["model"])
    assert not ours.quantized and set(ours.labels) == {POS_LABEL, NEG_LABEL} and ours.dim == 16 and ours.word_ngrams == 2
    longer = tmp_path / "longer.bin"
    longer.write_bytes(corpus["model"].read_bytes() + b"\0")
    with pytest.raises(CurateError, match="corrupt fastText model"):
        read_model_info(longer)
    data = LID.read_bytes()
    for cut in (8, 64, 1000, len(data) // 2, len(data) - 1):
        p = tmp_path / f"lid{cut}.ftz"
        p.write_bytes(data[:cut])
        with pytest.raises(CurateError, match="truncated"):
            read_model_info(p)


def test_resume_refuses_another_model(corpus, tmp_path):
    out = tmp_path / "o"
    cli_run("quality", "score", "--in", corpus["cc"], "--out", out, "--model", corpus["model"], "--workers", "1")
    r = cli_run("quality", "score", "--in", corpus["cc"], "--out", out, "--model", corpus["model"], "--workers", "1")
    assert f"{corpus['n_cc']} -> {corpus['n_cc']}" in r.stdout
    r = cli_run("quality", "score", "--in", corpus["cc"], "--out", out, "--model", LID, "--label", "en", "--workers", "1", ok=False)
    assert r.exit_code == 1 and "other parameters" in r.stderr and "model_fingerprint" in r.stderr


# --------------------------------------------------------------------------- cores


def test_normalize_text():
    text = "Hello, World!\n\nIt's  3.5\tkm __label__hq away…\x00end"
    assert normalize_text(text) == "hello , world ! it ' s 3 . 5 km label hq away … end"
    assert normalize_text(text, "lower") == "hello, world! it's 3.5 km label hq away… end"
    assert normalize_text(text, "none") == "Hello, World! It's 3.5 km label hq away… end"
    assert normalize_text("Ünïcödé ÉCOLE — naïve") == "ünïcödé école — naïve"
    assert normalize_text("   \n\n ") == ""
    with pytest.raises(CurateError, match="unknown normalisation"):
        normalize_text("x", "upper")


def test_roc_auc_against_all_pairs_with_ties():
    rng = np.random.default_rng(1)
    for _ in range(20):
        n = int(rng.integers(2, 60))
        y = rng.integers(0, 2, n).astype(bool)
        s = rng.integers(0, 5, n) / 4.0  # many ties
        if y.all() or not y.any():
            assert roc_auc(y, s) is None
            continue
        pairs = [(1.0 if p > q else 0.5 if p == q else 0.0) for p, q in itertools.product(s[y], s[~y])]
        assert roc_auc(y, s) == pytest.approx(sum(pairs) / len(pairs), abs=1e-12)
    m = binary_metrics(np.array([1, 1, 1, 0, 0, 0]), np.array([0.9, 0.6, 0.4, 0.7, 0.2, 0.1]))
    assert m["confusion"] == {"tp": 2, "fp": 1, "fn": 1, "tn": 2}
    assert m["precision"] == pytest.approx(2 / 3, abs=1e-6) and m["recall"] == pytest.approx(2 / 3, abs=1e-6)
    assert m["roc_auc"] == pytest.approx(7 / 9, abs=1e-6)  # 7 of the 9 (positive, negative) pairs are ordered right


def test_quantized_folds_are_small_score_through_the_kernel_and_keep_the_auc(corpus, tmp_path):
    args = ["quality", "train", "--pos", corpus["pile"], "--pos-sources", POS_SOURCES, "--neg", corpus["cc"], "--neg-sources", "cc/*",
            "--folds", "2", *FAST]  # fmt: skip
    cli_run(*args, "--out", tmp_path / "dense")
    cli_run(*args, "--out", tmp_path / "q", "--quantize")
    dense, quant = read_success(tmp_path / "dense"), read_success(tmp_path / "q")
    assert quant["models"] == ["fold-0.ftz", "fold-1.ftz"] and quant["config"]["quantize"] is True
    assert all(read_model_info(tmp_path / "q" / m).quantized for m in quant["models"])
    assert quant["model_bytes"] * 3 < dense["model_bytes"]  # the input matrix 8x smaller; the vocabulary stays
    assert abs(quant["valid"]["roc_auc"] - dense["valid"]["roc_auc"]) < 0.02
    from curate.fasttext import Classifier, label_probabilities

    c = Classifier(tmp_path / "q" / "fold-0.ftz")
    assert c.kernel is not None  # the kernel runs quantized models
    lines = [normalize_text(t) for t in pd.read_parquet(corpus["cc"])["text"][:100]]
    assert np.array_equal(c.kernel.probabilities(lines, POS_LABEL).view(np.uint32),
                          label_probabilities(c.library, lines, POS_LABEL).view(np.uint32))  # fmt: skip
    out = tmp_path / "scored"
    cli_run("quality", "score", "--in", corpus["cc"], "--out", out, "--model", tmp_path / "q", "--workers", "1")
    assert read_success(out)["params"]["folds"] == 2 and pd.read_parquet(out)["quality_score"].notna().all()


def test_default_fold_models_are_tens_of_mb_at_the_old_defaults_auc(corpus, tmp_path):
    """The defaults (--bucket 100000 --dim 32) write dense fold models of (words + bucket) x dim float32, a tenth of the
    former 1M x 64's, and their out-of-fold AUC on the sample is not below the former default's by more than 0.005."""
    args = ["quality", "train", "--pos", corpus["pile"], "--pos-sources", POS_SOURCES, "--neg", corpus["cc"], "--neg-sources", "cc/*",
            "--folds", "2", "--epoch", "15", "--lr", "0.5", "--threads", "1", "--seed", "3"]  # fmt: skip
    cli_run(*args, "--out", tmp_path / "new")
    cli_run(*args, "--bucket", "1000000", "--dim", "64", "--out", tmp_path / "old")
    new, old = read_success(tmp_path / "new"), read_success(tmp_path / "old")
    assert (new["config"]["bucket"], new["config"]["dim"], new["config"]["quantize"]) == (100_000, 32, False)
    for m in new["models"]:
        info = read_model_info(tmp_path / "new" / m)
        matrix = (info.nwords + 100_000) * 32 * 4  # the input matrix, float32
        assert not info.quantized and info.dim == 32 and matrix <= info.size < matrix + 4_000_000  # + vocabulary, output, header
        assert info.size < 40e6, info.size
    old_sizes = [(tmp_path / "old" / m).stat().st_size for m in old["models"]]
    assert min(old_sizes) > 250e6 and new["model_bytes"] * 8 < old["model_bytes"]
    assert new["valid"]["roc_auc"] >= old["valid"]["roc_auc"] - 0.005, (new["valid"], old["valid"])
