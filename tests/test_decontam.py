"""Decontamination (issue 7): the 13-gram rule, its margins, limits, ids, workers, bad input."""

from __future__ import annotations

import json
import random
import re
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curate.dataset import read_success, read_table
from curate.decontam import reference
from curate.decontam.cut import cut_spans, find_matches
from curate.decontam.index import build_index
from curate.decontam.ngrams import batch_words, ngram_keys
from curate.decontam.run import Decontam
from curate.executor import LocalExecutor
from curate.runtime import run as run_py

from .conftest import SAMPLE, prose


def rare_words(seed: int, n: int) -> str:
    """Words that never occur in ``prose`` (random 7-letter strings), space-separated, no punctuation."""
    rng = random.Random(seed)
    return " ".join("".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(7)) for _ in range(n))


def write_docs(folder: Path, docs: list[tuple[str, str]], shards: int = 1) -> Path:
    """(id, text) documents as Parquet shards in a plain folder."""
    folder.mkdir(parents=True, exist_ok=True)
    per = -(-len(docs) // shards)
    for k in range(shards):
        part = docs[k * per : (k + 1) * per]
        table = pa.table(
            {
                "id": pa.array([d[0] for d in part], pa.string()),
                "text": pa.array([d[1] for d in part], pa.large_string()),
                "source": pa.array(["pile/Test"] * len(part), pa.string()),
                "url": pa.nulls(len(part), pa.string()),
                "meta": pa.array([json.dumps({"k": i}) for i in range(len(part))], pa.string()),
            }
        )
        pq.write_table(table, folder / f"part-{k:05d}.parquet")
    return folder


def write_eval(path: Path, texts: list[str], field: str = "text") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({field: t}) + "\n" for t in texts))
    return path


def by_id(out: Path) -> dict[str, dict]:
    t = read_table(out)
    return {r["id"]: r for r in t.to_pylist()}


def filler(n_chars: int, seed: int = 0) -> str:
    """Sentences of exactly 50 characters (49 + '.') joined by spaces, about ``n_chars`` long."""
    rng = random.Random(seed)
    out = []
    while sum(len(s) + 1 for s in out) < n_chars:
        words, size = [], 0
        while True:
            w = rng.choice(["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa"])
            if size + len(w) + (1 if words else 0) > 49:
                break
            words.append(w)
            size += len(w) + (1 if len(words) > 1 else 0)
        s = " ".join(words)
        out.append((s + "x" * (49 - len(s))).capitalize() + ".")
    return " ".join(out)


# --------------------------------------------------------------------------- words and keys


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=300))
def test_words_are_python_w_runs_lowercased(text: str) -> None:
    w = batch_words([text, text[::-1]])
    got = [(s, e) for d, s, e in zip(w.doc, w.start, w.end) if d == 0]
    assert got == [(m.start(), m.end()) for m in re.finditer(r"\w+", text)]
    again = batch_words([text.upper()]) if len(text.upper()) == len(text) else None
    if again is not None and len(again) == int(np.count_nonzero(w.doc == 0)):
        lower_equal = [reference._lower(text[s:e]) == reference._lower(text.upper()[s:e]) for s, e in got]
        assert [h1 == h2 for h1, h2 in zip(w.hash[w.doc == 0], again.hash)] == lower_equal


def test_ngram_keys_stay_inside_documents() -> None:
    a, b = rare_words(1, 10), rare_words(2, 10)
    w = batch_words([a, b, a + " " + b])
    keys = ngram_keys(w, [13])
    first, k13 = keys[13]
    assert set(w.doc[first].tolist()) == {2}  # only the joined document has 13 words in a row
    whole = batch_words([a + " " + b])
    assert k13.tolist() == ngram_keys(whole, [13])[13][1].tolist()


def test_index_bytes_per_ngram_and_sets() -> None:
    texts = [rare_words(i, 40) for i in range(50)]
    idx = build_index([("a", texts[:30]), ("b", texts[20:])], 13, 8)
    assert idx.info["per_set"]["a"]["ngrams"] == 30 * 28
    assert idx.long.keys.size == 60 * 28  # 10 texts in both sets: their keys appear once per set
    assert np.all(idx.long.keys[1:] >= idx.long.keys[:-1])
    assert 10 <= idx.info["bytes_per_ngram"] <= 14
    m = find_matches([texts[25]], idx)
    rows = {tuple(idx.long.sets_of(int(r))) for r in m.row}
    assert rows == {(0, 1)}


# --------------------------------------------------------------------------- the rule through the CLI


def test_planted_passage_is_cut_with_exact_margins(tmp_path: Path, run) -> None:
    passage = rare_words(7, 25)
    before, after = filler(1500, 1), filler(1500, 2)
    text = before + " " + passage + ". " + after
    s = text.index(passage)
    e = s + len(passage)  # the last 13-gram's last character + 1: every match gets its margin
    src = write_docs(tmp_path / "in", [("doc", text), ("clean", filler(800, 3))])
    ev = write_eval(tmp_path / "ev" / "lamb.jsonl", [passage])
    for cut in (200, 120):
        out = tmp_path / f"out{cut}"
        res = run("decontam", "--in", src, "--out", out, "--eval", ev, "--workers", "1", "--cut-chars", cut, "--keep-rejected")
        assert "lamb: 1 docs contaminated, 2 pieces kept" in res.stdout
        docs = by_id(out)
        assert set(docs) == {"doc-0", "doc-1", "clean"}
        p = text.rfind(".", 0, s - cut + 1)  # last sentence end at or before s - cut
        q = text.find(".", e + cut)  # first sentence end at or after e + cut
        assert docs["doc-0"]["text"] == text[: p + 1]
        assert docs["doc-1"]["text"] == text[q + 1 :]
        assert s - (p + 1) >= cut > s - (p + 1) - 51  # at least `cut` characters, less than one more sentence
        assert (q + 1) - e >= cut > (q + 1) - e - 51
        meta = json.loads(docs["doc-1"]["meta"])
        assert meta == {"k": 0, "decontam_parent": "doc", "decontam_piece": 1, "decontam_offset": q + 1}
        assert docs["clean"]["text"] == filler(800, 3) and docs["clean"]["meta"] == json.dumps({"k": 1})
        rec = read_success(out)
        c = rec["counters"]["decontam_per_eval_set"]["lamb"]
        assert c["chars_removed"] == len(text) - (p + 1) - (len(text) - q - 1)
        assert rec["counters"]["decontam"]["docs_contaminated"] == 1


def test_twelve_word_overlap_is_not_a_match(tmp_path: Path, run) -> None:
    passage = rare_words(3, 30).split()
    twelve = prose(1, 80) + " " + " ".join(passage[5:17]) + " " + prose(2, 80)
    thirteen = prose(3, 80) + " " + " ".join(passage[5:18]) + " " + prose(4, 80)
    src = write_docs(tmp_path / "in", [("twelve", twelve), ("thirteen", thirteen)])
    ev = write_eval(tmp_path / "ev.jsonl", [" ".join(passage)])
    run("decontam", "--in", src, "--out", tmp_path / "out", "--eval", ev, "--workers", "1")
    docs = by_id(tmp_path / "out")
    assert docs["twelve"]["text"] == twelve
    assert "thirteen" not in docs and all(k.startswith("thirteen-") for k in docs if k != "twelve")
    assert not any(" ".join(passage[5:18]) in d["text"] for d in docs.values())


def test_short_eval_texts_are_used_whole(tmp_path: Path, run) -> None:
    ten, seven = rare_words(11, 10), rare_words(12, 7)
    docs = [
        ("has_ten", prose(1, 100) + " " + ten + " " + prose(2, 100)),
        ("has_nine", prose(3, 100) + " " + " ".join(ten.split()[:9]) + " " + prose(4, 100)),
        ("has_seven", prose(5, 100) + " " + seven + " " + prose(6, 100)),
    ]
    src = write_docs(tmp_path / "in", docs)
    ev = write_eval(tmp_path / "ev.jsonl", [ten, seven])
    run("decontam", "--in", src, "--out", tmp_path / "out", "--eval", ev, "--workers", "1")
    out = by_id(tmp_path / "out")
    assert "has_ten" not in out and any(k.startswith("has_ten-") for k in out)
    assert out["has_nine"]["text"] == docs[1][1] and out["has_seven"]["text"] == docs[2][1]
    info = read_success(tmp_path / "out")["decontam"]["index"]
    assert info["per_set"]["ev"] == {"items": 2, "items_too_short": 1, "items_whole": 1, "ngrams": 0, "whole_keys": 1}


@pytest.mark.parametrize("limit,cut", [(10, False), (11, True), (0, True)])
def test_frequency_limit(tmp_path: Path, run, limit: int, cut: bool) -> None:
    passage = rare_words(5, 13)
    docs = [(f"d{i:02d}", prose(i, 60) + " " + passage + ". " + prose(100 + i, 60)) for i in range(11)]
    src = write_docs(tmp_path / "in", docs, shards=2)
    ev = write_eval(tmp_path / "ev.jsonl", [passage + " " + rare_words(6, 20)])
    res = run("decontam", "--in", src, "--out", tmp_path / "out", "--eval", ev, "--freq-limit", limit, "--workers", "1")
    out = by_id(tmp_path / "out")
    counting = read_success(tmp_path / "out")["decontam"]["counting"]
    if cut:
        assert not any(passage in d["text"] for d in out.values())
        assert counting["keys_ignored"] == 0
    else:
        assert {k: v["text"] for k, v in out.items()} == dict(docs)
        assert counting["keys_ignored"] == 1 and counting["ignored_examples"] == [{"ngram": passage, "docs": 11}]
        assert "ignored as too common: 1 n-gram(s)" in res.stdout


@pytest.mark.parametrize("cuts,dropped", [(9, False), (10, True), (11, True)])
def test_document_split_too_often_is_dropped(tmp_path: Path, run, cuts: int, dropped: bool) -> None:
    parts = [filler(900, k) for k in range(cuts + 1)]
    passages = [rare_words(50 + k, 14) for k in range(cuts)]
    text = parts[0] + "".join(f" {p}. {f}" for p, f in zip(passages, parts[1:]))
    src = write_docs(tmp_path / "in", [("big", text), ("small", filler(300, 99))])
    ev = write_eval(tmp_path / "ev.jsonl", passages)
    run("decontam", "--in", src, "--out", tmp_path / "out", "--eval", ev, "--workers", "1", "--keep-rejected")
    out = by_id(tmp_path / "out")
    rejected = read_table(tmp_path / "out" / "_rejected").to_pylist()
    pieces = sorted(k for k in out if k.startswith("big-"))
    c = read_success(tmp_path / "out")["counters"]["decontam"]
    if dropped:
        assert pieces == [] and [(r["id"], r["reason"]) for r in rejected] == [("big", "decontam_too_many_pieces")]
        assert rejected[0]["text"] == text and c["docs_dropped"] == 1 and c["chars_removed"] == len(text)
    else:
        assert len(pieces) == cuts + 1 == 10 and rejected == []
        assert c["pieces_kept"] == 10 and c["docs_dropped"] == 0
    assert "small" in out


def test_short_pieces_are_rejected_with_ids(tmp_path: Path, run) -> None:
    passage = rare_words(9, 20)
    text = filler(300, 1) + " " + passage + ". " + filler(2000, 2)
    src = write_docs(tmp_path / "in", [("d", text)])
    ev = write_eval(tmp_path / "ev.jsonl", [passage])
    run("decontam", "--in", src, "--out", tmp_path / "out", "--eval", ev, "--workers", "1", "--keep-rejected", "--cut-chars", "150")
    out = by_id(tmp_path / "out")
    rejected = read_table(tmp_path / "out" / "_rejected").to_pylist()
    assert list(out) == ["d-1"]
    assert [(r["id"], r["reason"]) for r in rejected] == [("d-0", "decontam_short_piece")]
    assert len(rejected[0]["text"]) < 200 and text.startswith(rejected[0]["text"])


def test_document_wholly_removed_is_counted_and_rejected(tmp_path: Path, run) -> None:
    passage = rare_words(21, 15)
    docs = [("tiny", "Intro words " + passage + " and a tail without a sentence end"), ("other", prose(5))]
    src = write_docs(tmp_path / "in", docs)
    ev = write_eval(tmp_path / "ev.jsonl", [passage])
    run("decontam", "--in", src, "--out", tmp_path / "out", "--eval", ev, "--workers", "1", "--keep-rejected")
    assert list(by_id(tmp_path / "out")) == ["other"]
    rejected = read_table(tmp_path / "out" / "_rejected").to_pylist()
    assert [(r["id"], r["reason"], r["text"]) for r in rejected] == [("tiny", "decontam_emptied", docs[0][1])]
    rec = read_success(tmp_path / "out")
    assert rec["counters"]["decontam"]["docs_emptied"] == 1 and rec["rejected"]["decontam_emptied"]["docs"] == 1


def test_only_sources_leaves_other_sources_alone(tmp_path: Path, run) -> None:
    passage = rare_words(31, 20)
    text = prose(1, 100) + " " + passage + ". " + prose(2, 100)
    src = tmp_path / "in"
    src.mkdir()
    table = pa.table({"id": ["a", "b"], "text": pa.array([text, text], pa.large_string()), "source": ["pile/Books3", "cc/X"],
                      "url": pa.nulls(2, pa.string()), "meta": pa.nulls(2, pa.string())})  # fmt: skip
    pq.write_table(table, src / "part-00000.parquet")
    ev = write_eval(tmp_path / "ev.jsonl", [passage])
    run("decontam", "--in", src, "--out", tmp_path / "out", "--eval", ev, "--workers", "1", "--only-sources", "cc/*")
    out = by_id(tmp_path / "out")
    assert out["a"]["text"] == text and "b" not in out and {"b-0", "b-1"} <= set(out)
    assert json.loads(out["b-1"]["meta"]) == {
        "decontam_parent": "b",
        "decontam_piece": 1,
        "decontam_offset": out["b-1"]["text"] and text.index(out["b-1"]["text"]),
    }


def test_one_and_two_workers_give_identical_shards(tmp_path: Path, run) -> None:
    passages = [rare_words(200 + k, 20) for k in range(6)]
    docs = []
    for i in range(60):
        text = prose(i, 150)
        if i % 7 == 0:
            text += " " + passages[i % 6] + ". " + prose(1000 + i, 150)
        docs.append((f"doc{i:03d}", text))
    src = write_docs(tmp_path / "in", docs, shards=3)
    ev = write_eval(tmp_path / "ev.jsonl", passages)
    for w in (1, 2):
        run("decontam", "--in", src, "--out", tmp_path / f"w{w}", "--eval", ev, "--workers", w, "--keep-rejected")
    for rel in ("part-00000.parquet", "part-00001.parquet", "part-00002.parquet", "_rejected/part-00001.parquet"):
        assert (tmp_path / "w1" / rel).read_bytes() == (tmp_path / "w2" / rel).read_bytes()
    ids = read_table(tmp_path / "w2").column("id").to_pylist()
    assert len(ids) == len(set(ids)) and any(i.endswith("-1") for i in ids)
    # A re-run resumes (nothing to do); other parameters are refused.
    res = run("decontam", "--in", src, "--out", tmp_path / "w2", "--eval", ev, "--workers", "2", "--keep-rejected")
    assert "decontam:" in res.stdout
    res = run("decontam", "--in", src, "--out", tmp_path / "w2", "--eval", ev, "--cut-chars", "50", "--keep-rejected", ok=False)
    assert res.exit_code == 1 and "cut_chars" in res.stderr


# --------------------------------------------------------------------------- properties against the plain reference


_VOCAB = ["alpha", "beta", "gamma", "delta", "Eta", "ÉTÉ", "straße", "δέλτα", "x1", "y_2"]
_word = st.sampled_from(_VOCAB)
_sep = st.sampled_from([" ", " ", " ", ", ", ". ", "! ", "\n", " — ", "? ", " 😀 "])


@st.composite
def corpus(draw):
    def passage(lo: int, hi: int) -> str:
        ws = draw(st.lists(_word, min_size=lo, max_size=hi))
        return "".join(w + draw(_sep) for w in ws).strip()

    evals = [passage(8, 30) for _ in range(draw(st.integers(1, 3)))]
    docs = []
    for i in range(draw(st.integers(1, 6))):
        chunks = [passage(0, 60)]
        for _ in range(draw(st.integers(0, 4))):
            ev = draw(st.sampled_from(evals)).split()
            a = draw(st.integers(0, max(0, len(ev) - 8)))
            chunks.append(" ".join(ev[a:]))
            chunks.append(passage(0, 60))
        docs.append((f"d{i}", draw(_sep).join(chunks)))
    return evals, docs


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(corpus(), st.integers(0, 3), st.integers(0, 80), st.integers(1, 60), st.integers(1, 4))
def test_properties_against_reference(data, freq_limit: int, cut: int, min_piece: int, max_pieces: int) -> None:
    evals, docs = data
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        src = write_docs(t / "in", docs)
        ev = write_eval(t / "ev.jsonl", evals)
        stage = Decontam(evals=[str(ev)], cut_chars=cut, min_piece_chars=min_piece, max_pieces=max_pieces, freq_limit=freq_limit)
        run_py(stage, inputs=[str(src)], out=t / "out", executor=LocalExecutor(1))
        out = read_table(t / "out").to_pylist()
    ids = [r["id"] for r in out]
    assert len(ids) == len(set(ids))
    grams = reference.build(evals, 13, 8)
    active = grams - reference.too_common([d for _, d in docs], grams, freq_limit)
    lengths = reference.lengths_of(grams)
    parents = dict(docs)
    got: dict[str, list[tuple[int, int]]] = {}
    for r in out:
        assert not (reference.doc_ngrams(r["text"], active, lengths) if active else set())
        meta = json.loads(r["meta"])
        parent = meta.get("decontam_parent", r["id"])
        off = meta.get("decontam_offset", 0)
        assert parents[parent][off : off + len(r["text"])] == r["text"]
        got.setdefault(parent, []).append((off, off + len(r["text"])))
    for pid, text in docs:
        kept, _short, dropped = (
            reference.decontaminate(text, active, cut, min_piece, max_pieces) if active else ([(0, len(text))], [], False)
        )
        assert got.get(pid, []) == ([] if dropped else kept)  # in order, and equal to MT-NLG's loop


def test_cut_spans_without_sentence_ends() -> None:
    text = "a" * 50 + " match here " + "b" * 50
    pieces, removed = cut_spans(text, [(51, 61)], 10)
    assert pieces == [] and removed == [(0, len(text))]
    pieces, removed = cut_spans("Aaa. " * 30 + "match" + ". Bbb" * 30, [(150, 155)], 10)
    assert pieces[0] == (0, 139) and removed[0][0] == 139


# --------------------------------------------------------------------------- bad input


def test_eval_file_without_the_field(tmp_path: Path, run) -> None:
    src = write_docs(tmp_path / "in", [("d", prose(1))])
    ev = tmp_path / "qa.jsonl"
    ev.write_text(json.dumps({"question": rare_words(1, 20), "answer": "yes"}) + "\n")
    res = run("decontam", "--in", src, "--out", tmp_path / "out", "--eval", ev, ok=False)
    assert res.exit_code == 1
    assert res.stderr.strip().count("\n") == 0
    assert f"{ev}: line 1: no field 'text' (has: question, answer)" in res.stderr
    res = run("decontam", "--in", src, "--out", tmp_path / "out", "--eval", ev, "--eval-field", "qa=question,answer", "--workers", "1")
    assert "qa: 0 docs contaminated" in res.stdout
    res = run("decontam", "--in", src, "--out", tmp_path / "o2", "--eval", ev, "--eval-field", "nope=question", ok=False)
    assert "no evaluation set named 'nope' (sets: qa)" in res.stderr


def test_empty_and_too_short_eval_sets(tmp_path: Path, run) -> None:
    src = write_docs(tmp_path / "in", [("d", prose(1))])
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    res = run("decontam", "--in", src, "--out", tmp_path / "o1", "--eval", empty, ok=False)
    assert res.exit_code == 1 and "empty evaluation set" in res.stderr and str(empty) in res.stderr
    short = write_eval(tmp_path / "short.jsonl", ["only five words here now", "and three more"])
    res = run("decontam", "--in", src, "--out", tmp_path / "o2", "--eval", short, ok=False)
    assert "evaluation set 'short': no item has at least 8 words (2 items)" in res.stderr
    res = run("decontam", "--in", src, "--out", tmp_path / "o3", "--eval", tmp_path / "missing.jsonl", ok=False)
    assert "missing.jsonl: no such evaluation file or directory" in res.stderr
    res = run("decontam", "--in", src, "--out", tmp_path / "o4", "--eval", short, "--min-ngram", "14", ok=False)
    assert "--min-ngram must be between 1 and --ngram (13), got 14" in res.stderr


def test_hub_name_offline_is_a_quick_clear_error(tmp_path: Path, run, monkeypatch) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://hub.invalid")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    src = write_docs(tmp_path / "in", [("d", prose(1))])
    t0 = time.monotonic()
    res = run("decontam", "--in", src, "--out", tmp_path / "out", "--eval", "piqa", "--eval-field", "goal", ok=False)
    assert res.exit_code == 1 and time.monotonic() - t0 < 10
    assert "evaluation set 'piqa': cannot reach the hub at hub.invalid" in res.stderr
    assert res.stderr.strip().count("\n") == 0


def test_hub_loader_with_a_local_dataset_directory(tmp_path: Path, run) -> None:
    passage = rare_words(77, 20)
    hub = tmp_path / "piqa_local"
    write_eval(hub / "validation.jsonl", [passage], field="goal")
    write_eval(hub / "test.jsonl", [rare_words(78, 20)], field="goal")
    src = write_docs(tmp_path / "in", [("d", prose(1, 100) + " " + passage + ". " + prose(2, 100)), ("e", prose(3))])
    res = run("decontam", "--in", src, "--out", tmp_path / "out", "--eval", f"hub:{hub}", "--eval-field", "goal",
              "--eval-split", "validation,test", "--workers", "1")  # fmt: skip
    assert "piqa_local: 1 docs contaminated" in res.stdout
    res = run("decontam", "--in", src, "--out", tmp_path / "o2", "--eval", f"hub:{hub}", "--eval-split", "test", ok=False)
    assert "no field 'text' (has: goal)" in res.stderr


def test_documents_without_words_pass_through(tmp_path: Path, run) -> None:
    passage = rare_words(4, 20)
    docs = [("empty", ""), ("punct", "!!! ... ??? — ***"), ("hit", prose(1, 100) + " " + passage + ". " + prose(2, 100))]
    src = write_docs(tmp_path / "in", docs)
    ev = write_eval(tmp_path / "ev.txt", [passage])  # plain text: one item per line
    (tmp_path / "ev.txt").write_text(passage + "\n\n")
    run("decontam", "--in", src, "--out", tmp_path / "out", "--eval", tmp_path / "ev.txt", "--workers", "1")
    out = by_id(tmp_path / "out")
    assert out["empty"]["text"] == "" and out["punct"]["text"] == docs[1][1]
    assert read_success(tmp_path / "out")["decontam"]["counting"]["docs_no_words"] == 2
    assert ev.exists()


# --------------------------------------------------------------------------- the sample data


MANIFEST = SAMPLE / "pile" / "MANIFEST.json"


@pytest.mark.skipif(not MANIFEST.exists(), reason="sample_data/pile/MANIFEST.json not built yet")
def test_sample_data_planted_passages_are_removed(tmp_path: Path, run) -> None:
    run("download", "pile", "--dataset", SAMPLE / "pile" / "train", "--shard-docs", "1000", "--out", tmp_path / "pile")
    run("decontam", "--in", tmp_path / "pile", "--out", tmp_path / "dc", "--keep-rejected", "--workers", "1",
        "--eval", SAMPLE / "eval" / "lambada_like.jsonl", "--eval", SAMPLE / "eval" / "qa_like.jsonl",
        "--eval-field", "qa_like=question,answer")  # fmt: skip
    manifest = json.loads(MANIFEST.read_text())
    planted = {f"{Path(r['doc']['file']).name}:{r['doc']['line']}": r for r in manifest["eval_contamination"]}
    src = {r["id"].split("/")[-1]: r for r in read_table(tmp_path / "pile").to_pylist()}
    out = read_table(tmp_path / "dc").to_pylist()
    rejected = read_table(tmp_path / "dc" / "_rejected").to_pylist()
    touched: dict[str, list[tuple[int, int]]] = {}
    for r in out:
        meta = json.loads(r["meta"]) if r["meta"] else {}
        if "decontam_parent" in meta:
            touched.setdefault(meta["decontam_parent"].split("/")[-1], []).append(
                (meta["decontam_offset"], meta["decontam_offset"] + len(r["text"]))
            )
        else:
            assert r["text"] == src[r["id"].split("/")[-1]]["text"]  # untouched documents are unchanged
    dropped = {r["id"].split("/")[-1] for r in rejected if r["reason"] == "decontam_too_many_pieces"}
    assert set(touched) | dropped == set(planted)  # every planted document, and no other, was cut
    for key, rec in planted.items():
        text = src[key]["text"]
        for p in rec["passages"]:
            for a, b in touched.get(key, []):
                # no kept piece holds a word of a planted passage (a closing quote after its '.' may start a piece)
                assert not re.search(r"\w", text[max(a, p["start"]) : min(b, p["end"])])
    evals = [json.loads(x)["text"] for x in (SAMPLE / "eval" / "lambada_like.jsonl").read_text().splitlines()]
    evals += [f"{q['question']} {q['answer']}" for q in map(json.loads, (SAMPLE / "eval" / "qa_like.jsonl").read_text().splitlines())]
    grams = reference.build(evals, 13, 8)
    pieces = [r["text"] for r in out if r["meta"] and "decontam_parent" in r["meta"]]
    assert pieces and not any(reference.doc_ngrams(t, grams, reference.lengths_of(grams)) for t in pieces)
    assert len(find_matches([r["text"] for r in out], build_index([("all", evals)], 13, 8))) == 0
