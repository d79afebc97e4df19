"""`curate quality score` with several foreign classifiers: DCLM's label format, the compiled kernel against fastText itself."""

from __future__ import annotations

import math
import random
import subprocess
import sys
from pathlib import Path

import fasttext
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from curate.cli import cli
from curate.dataset import read_success
from curate.fasttext import Classifier, _native
from curate.stages.quality.data import normalize_text
from curate.stages.quality.score import QualityStage

HQ = "the of analysis theory results evidence method history science économie naïve été because explain".split()
CC = "click buy free now cheap best deal login subscribe casino bonus 限定 セール".split()


def _doc(rng: random.Random, words: list[str], other: list[str]) -> str:
    n = rng.randint(3, 40)
    out = []
    for i in range(n):
        out.append(rng.choice(words if rng.random() < 0.8 else other))
        if i % 7 == 6:
            out.append(rng.choice(["\n", "\n\n", "\t", "\u00a0", "  "]))
    return " ".join(out)


def _train(path: Path, data: Path, **kw: object) -> Path:
    """fastText trained in a fresh process (fastText 0.9.2 trained twice in one process can diverge)."""
    args = ", ".join(f"{k}={v!r}" for k, v in kw.items())
    code = f"import fasttext; fasttext.train_supervised({str(data)!r}, {args}).save_model({str(path)!r})"
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """Bigram models in DCLM's label format (__label__hq / __label__cc): softmax (as DCLM's), hierarchical softmax, one-vs-all."""
    d = tmp_path_factory.mktemp("classifiers")
    rng = random.Random(7)
    with open(d / "train.txt", "w", encoding="utf-8") as fh:
        for _ in range(400):
            fh.write("__label__hq " + " ".join(_doc(rng, HQ, CC).split()) + "\n")
            fh.write("__label__cc " + " ".join(_doc(rng, CC, HQ).split()) + "\n")
    common = dict(wordNgrams=2, dim=8, epoch=5, bucket=5000, minCount=1, thread=1, seed=1, verbose=0)
    docs = [_doc(rng, HQ, CC) for _ in range(150)] + [_doc(rng, CC, HQ) for _ in range(150)]
    docs += ["", "   \n  ", "zzzz unknown", "the\u00a0of", "__label__cc casino", "a\x00the"]
    table = pa.table({"id": [f"d{i}" for i in range(len(docs))], "text": docs, "source": ["cc/x"] * len(docs)})
    pq.write_table(table, d / "docs.parquet")
    return {
        "dir": d,
        "docs": d / "docs.parquet",
        "softmax": _train(d / "softmax.bin", d / "train.txt", loss="softmax", **common),
        "hs": _train(d / "hs.bin", d / "train.txt", loss="hs", **common),
        "ova": _train(d / "ova.bin", d / "train.txt", loss="ova", minn=2, maxn=4, **common),
    }


def cli_run(*args: object, ok: bool = True):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    if ok and result.exit_code != 0:
        raise AssertionError(f"curate {' '.join(map(str, args))} exited {result.exit_code}:\n{result.stdout}\n{result.stderr}")
    return result


def _fasttext_probs(path: Path, lines: list[str], label: str) -> np.ndarray:
    """What fastText's own predict reports for ``label`` (k=-1, threshold 0), clipped to [0, 1] as curate writes it."""
    labels, probs = fasttext.load_model(str(path)).predict(lines, k=-1, threshold=0.0)
    out = np.array([dict(zip(lab, p)).get(label, 0.0) for lab, p in zip(labels, probs)], dtype=np.float32)
    return np.clip(out, 0, 1)


def test_kernel_matches_fasttext_bit_for_bit_on_every_loss(models):
    if _native is None:
        pytest.skip("the compiled kernel is not built")
    lines = [normalize_text(t, "dclm") for t in pd.read_parquet(models["docs"])["text"]]
    for loss in ("softmax", "hs", "ova"):
        c = Classifier(models[loss])
        assert c.kernel is not None, loss  # the kernel runs it: not a fallback to the library
        for label in ("__label__hq", "__label__cc"):
            ours = c.probabilities(lines, label)
            theirs = _fasttext_probs(models[loss], lines, label)
            assert ours.dtype == np.float32 and np.array_equal(ours.view(np.uint32), theirs.view(np.uint32)), (loss, label)


def test_kernel_matches_fasttext_on_long_lines_and_at_its_chunk_edges(models):
    """Lines longer than what the kernel reads at once (256 tokens, 64 rows summed at a time), the end-of-sentence token written
    out at a chunk's edge, a label and NULs inside a line, non-ASCII: every probability and top-1 label bit for bit fastText's."""
    if _native is None:
        pytest.skip("the compiled kernel is not built")
    rng = random.Random(11)
    words = HQ + CC + ["unknownword", "zzz"]
    lines = [" ".join(rng.choice(words) for _ in range(n)) for n in (63, 64, 65, 255, 256, 257, 511, 512, 3000)]
    lines += [" ".join(["the"] * k + ["</s>"] + ["casino"] * 40) for k in (254, 255, 256, 257, 300)]
    lines += ["  ".join(rng.choice(words) for _ in range(400)) + " __label__hq " + "x\x00y " * 50, "é" * 1000, "naïve été " * 700]
    for loss in ("softmax", "hs", "ova"):  # ova: character n-grams too (minn 2, maxn 4)
        c = Classifier(models[loss])
        for label in ("__label__hq", "__label__cc"):
            ours, theirs = c.probabilities(lines, label), _fasttext_probs(models[loss], lines, label)
            assert np.array_equal(ours.view(np.uint32), theirs.view(np.uint32)), (loss, label)
        labels, probs = c.kernel.predict(lines)
        want_labels, want_probs = fasttext.load_model(str(models[loss])).predict(lines, k=1)
        assert labels == [lab[0] for lab in want_labels], loss
        assert np.array_equal(probs.view(np.uint32), np.array([p[0] for p in want_probs], np.float32).view(np.uint32)), loss


def test_kernel_reads_each_text_as_one_utf8_line():
    """What the kernel is given: each text's UTF-8 (a lone surrogate as ``?``) and a newline, at offsets."""
    from curate.fasttext import _pack

    data, offsets = _pack(["ab", "", "é\ud800x", "a\nb"])
    assert data == b"ab\n\n\xc3\xa9?x\na\nb\n" and offsets.tolist() == [0, 3, 4, 9, 13]


def test_kernel_vocabulary_table_checks_its_sizes():
    """The table the kernel looks tokens up in: a power of two of slots, more than the entries, all empty; else a ValueError."""
    if _native is None:
        pytest.skip("the compiled kernel is not built")
    offsets = np.array([0, 1, 2], np.int64)
    for nslots in (2, 3, 6):  # not more than the entries; not a power of two
        with pytest.raises(ValueError):
            _native.build_vocab(b"ab", offsets, np.full(4 * nslots, 0xFFFFFFFF, np.uint32))
    slots = np.full(4 * 4, 0xFFFFFFFF, np.uint32)
    _native.build_vocab(b"ab", offsets, slots)
    table = slots.reshape(-1, 4)
    assert sorted(table[table[:, 1] != 0xFFFFFFFF, 1].tolist()) == [0, 1]  # both entries placed
    with pytest.raises(ValueError):  # a table already filled
        _native.build_vocab(b"ab", offsets, slots)


def test_dclm_preparation_is_newlines_to_spaces_only():
    text = "  First line\nsecond\u00a0line\r\n\tthird  \n"
    assert normalize_text(text, "dclm") == " ".join(text.strip().splitlines()) == "First line second\u00a0line \tthird"
    assert normalize_text(text, "none") == "First line second line third"  # folds every Unicode space: not DCLM's text


def test_several_classifiers_in_one_pass_match_fasttext(models, tmp_path):
    out = tmp_path / "scored"
    r = cli_run("quality", "score", "--in", models["docs"], "--out", out, "--workers", "1",
                "--model", models["softmax"], "--label", "__label__hq", "--normalize", "dclm", "--column", "dclm_score",
                "--model", models["hs"], "--label", "cc", "--normalize", "none", "--column", "cc_score",
                "--model", models["ova"], "--label", "hq", "--normalize", "lower", "--column", "ova_hq")  # fmt: skip
    df = pd.read_parquet(out).set_index("id").loc[[f"d{i}" for i in range(306)]]
    assert "quality_score" not in df.columns and df["dclm_score"].dtype == np.float32
    for col, key, label, norm in (("dclm_score", "softmax", "__label__hq", "dclm"), ("cc_score", "hs", "__label__cc", "none"),
                                  ("ova_hq", "ova", "__label__hq", "lower")):  # fmt: skip
        lines = [normalize_text(t, norm) for t in df["text"]]
        expected = _fasttext_probs(models[key], lines, label)
        blank = np.array([not line.strip() for line in lines])
        got = df[col].to_numpy()
        assert np.isnan(got[blank]).all() and blank.sum() == 2  # "" and whitespace: NaN, not the end-of-line token's score
        assert np.array_equal(got[~blank].view(np.uint32), expected[~blank].view(np.uint32)), col
    assert df["dclm_score"].iloc[:150].mean() > 0.7 > 0.3 > df["dclm_score"].iloc[150:300].mean()
    rec = read_success(out)
    assert rec["params"]["models"] == [str(models[k]) for k in ("softmax", "hs", "ova")]
    assert rec["params"]["label"] == ["__label__hq", "__label__cc", "__label__hq"]
    assert rec["params"]["column"] == ["dclm_score", "cc_score", "ova_hq"]
    assert rec["counters"]["unscored"] == {c: {"empty": 2} for c in ("dclm_score", "cc_score", "ova_hq")}
    assert rec["counters"]["scored"] == 304 and "306 -> 306 docs" in r.stdout and "dclm_score: not scored (NaN): empty 2" in r.stdout


def test_single_model_keeps_quality_score_and_unscorable_text_gets_nan(models, tmp_path):
    docs = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"id": ["a", "b", "c"], "text": ["the analysis of theory", None, "buy now casino"],
                             "source": ["cc/x"] * 3}), docs)  # fmt: skip
    out = tmp_path / "one"
    cli_run("quality", "score", "--in", docs, "--out", out, "--workers", "1", "--model", models["softmax"], "--normalize", "dclm",
            "--mode", "threshold", "--threshold", "0.5", "--keep-rejected")  # fmt: skip
    kept = pd.read_parquet(out).set_index("id")
    rejected = pd.read_parquet(out / "_rejected").set_index("id")
    assert list(kept.index) == ["a"] and kept.loc["a", "quality_score"] > 0.5
    assert rejected.loc["b", "reason"] == "unscored" and rejected.loc["c", "reason"] == "quality"
    assert np.isnan(rejected.loc["b", "quality_score"]) and rejected.loc["c", "quality_score"] < 0.5
    rec = read_success(out)
    assert rec["params"]["model"] == str(models["softmax"]) and rec["params"]["label"] == "__label__hq"
    assert rec["counters"]["unscored"] == {"quality_score": {"empty": 1}}
    # text that is not UTF-8 (readers repair it; a table handed to the stage directly may hold it): kept, NaN, counted
    raw = pa.array([b"the analysis", b"cheap \xed\xa0\x80 casino"], pa.binary()).view(pa.string())
    table = pa.table({"id": ["x", "y"], "text": raw, "source": ["cc/x"] * 2})
    res = QualityStage(model=str(models["softmax"]), normalize="dclm")(table)
    scores = res.kept.column("quality_score").to_pylist()
    assert res.kept.num_rows == 2 and scores[0] > 0.5 and math.isnan(scores[1])
    assert res.counters["unscored"] == {"quality_score": {"invalid_utf8": 1}} and res.counters["invalid_utf8_repaired"]


def test_bad_classifier_options_are_one_line_errors(models, tmp_path):
    base = ["quality", "score", "--in", models["docs"], "--workers", "1"]
    not_ft = tmp_path / "model.bin"
    not_ft.write_bytes(b"\x00" * 4096)
    scored = tmp_path / "scored"
    cli_run(*base, "--out", scored, "--model", models["softmax"], "--column", "dclm_score")
    cases = [
        (["--model", models["softmax"], "--model", not_ft, "--column", "a", "--column", "b"], f"{not_ft}: not a fastText model"),
        (["--model", models["softmax"], "--label", "__label__wiki"], "the model has no label '__label__wiki'; its labels: __label__"),
        (["--model", models["softmax"], "--model", models["hs"]], "0 --column values for 2 models"),
        (
            [
                "--model",
                models["softmax"],
                "--model",
                models["hs"],
                "--column",
                "a",
                "--column",
                "b",
                "--label",
                "hq",
                "--label",
                "cc",
                "--label",
                "hq",
            ],
            "3 --label values for 2 models",
        ),  # fmt: skip
        (["--model", models["softmax"], "--model", models["hs"], "--column", "a", "--column", "a"], "--column names a column twice"),
        (["--model", models["softmax"], "--column", "lang"], "--column 'lang': not a name a score column can take"),
    ]
    for extra, msg in cases:
        r = cli_run(*base, "--out", tmp_path / "o", *extra, ok=False)
        lines = r.stderr.strip().splitlines()
        assert r.exit_code == 1 and len(lines) == 1 and msg in lines[0], (extra, r.stderr)
    r = cli_run("quality", "score", "--in", scored, "--out", tmp_path / "o", "--model", models["hs"], "--column", "dclm_score", ok=False)
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 1 and len(lines) == 1 and "the input already has a column 'dclm_score'" in lines[0], r.stderr
    assert not (tmp_path / "o").exists()
