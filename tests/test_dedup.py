"""Exact and fuzzy dedup: the cores (shingles, MinHash, LSH pairs, components) and the CLI."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.dedup import minhash
from curate.dedup.clusters import choose_survivors, connected_components
from curate.dedup.lsh import candidate_pairs
from curate.dedup.minhash import (
    _M1,
    EMPTY,
    MinHasher,
    _is_word_byte,
    band_hashes,
    exact_jaccard,
    mix64,
    normalize_text,
    oph_signatures,
    optimal_bands,
    pair_jaccards,
    shingle_hashes,
    unique_per_doc,
    word_hashes,
)
from curate.schema import BASE_SCHEMA
from tests.test_dataset import _kill_when, digest_dir

VOCAB = ["".join(random.Random(i).choices("abcdefghijklmnopqrstuvwxyz", k=random.Random(i + 7).randint(3, 9))) for i in range(20000)]


def words(seed: int, n: int = 300) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(VOCAB) for _ in range(n)]


def shingle_set(text: str, n: int = 5) -> set[str]:
    w = re.sub(r"[^\w\s]+", " ", text.lower()).split()
    if 0 < len(w) < n:
        return {" ".join(w)}
    return {" ".join(w[i : i + n]) for i in range(len(w) - n + 1)}


def true_jaccard(a: str, b: str) -> float:
    sa, sb = shingle_set(a), shingle_set(b)
    return len(sa & sb) / len(sa | sb)


def variant(base: list[str], target: float, seed: int) -> str:
    """Edit ``base`` word by word until its 5-gram Jaccard with the original drops to ``target``."""
    rng = random.Random(seed)
    w = list(base)
    orig = " ".join(base)
    for _ in range(len(w)):
        w[rng.randrange(len(w))] = rng.choice(VOCAB)
        if true_jaccard(orig, " ".join(w)) <= target:
            break
    return " ".join(w)


def write_docs(path, rows: list[tuple[str, str, str]], shards: int = 1) -> None:
    """rows of (id, text, source) into ``shards`` Parquet shards."""
    path.mkdir(parents=True, exist_ok=True)
    per = -(-len(rows) // shards)
    for s in range(shards):
        chunk = rows[s * per : (s + 1) * per]
        t = pa.Table.from_pylist(
            [{"id": i, "text": t, "source": src, "url": None, "meta": None} for i, t, src in chunk], schema=BASE_SCHEMA
        )
        pq.write_table(t, path / f"part-{s:05d}.parquet")


# --------------------------------------------------------------------------- cores


def test_shingles_match_a_plain_python_reference():
    texts = ["The cat sat on the mat, and the dog sat too!", "one", "", "Two words", " ".join(words(1, 50))]
    sh, off = MinHasher(ngram=5).shingles(pa.array(texts, pa.large_string()))
    for i, t in enumerate(texts):
        assert len(np.unique(sh[off[i] : off[i + 1]])) == len(shingle_set(t)) if t else off[i + 1] == off[i]


def test_exact_jaccard_equals_set_jaccard():
    a, b = " ".join(words(2)), variant(words(2), 0.7, 3)
    sh, off = MinHasher().shingles(pa.array([a, b], pa.large_string()))
    ja = exact_jaccard(np.unique(sh[off[0] : off[1]]), np.unique(sh[off[1] : off[2]]))
    assert ja == pytest.approx(true_jaccard(a, b), abs=1e-9)


def test_minhash_estimate_is_unbiased_and_close():
    base = [words(100 + i) for i in range(60)]
    pairs = [(" ".join(b), variant(b, 0.75, i)) for i, b in enumerate(base)]
    texts = pa.array([x for p in pairs for x in p], pa.large_string())
    sig, *_ = MinHasher(num_perm=128).signatures(texts)
    est = (sig[0::2] == sig[1::2]).mean(axis=1)
    truth = np.array([true_jaccard(a, b) for a, b in pairs])
    err = est - truth
    assert abs(err.mean()) < 0.02  # unbiased
    assert err.std() < 0.06  # ~ sqrt(J(1-J)/128) = 0.04


def test_empty_and_short_documents_have_no_or_one_shingle():
    wh, off = word_hashes(pa.array(["", "   ", "!!!", "one", "one two"], pa.large_string()))
    sh, soff = shingle_hashes(wh, off, 5)
    assert np.diff(soff).tolist() == [0, 0, 0, 1, 1]


def test_band_choice_is_datasketchs_optimum():
    assert optimal_bands(0.8, 128) == (9, 13)
    b, r = optimal_bands(0.8, 128, 0.1, 0.9)
    assert b * r <= 128 and b > 9  # leaning to recall: more, shorter bands


def test_band_hashes_equal_iff_band_rows_equal():
    sig = np.array([[1, 2, 3, 4], [1, 2, 9, 9], [5, 2, 3, 4]], np.uint32)
    h = band_hashes(sig, 2, 2)
    assert h[0, 0] == h[1, 0] and h[0, 1] != h[1, 1]
    assert h[0, 1] == h[2, 1] and h[0, 0] != h[2, 0]
    assert h[0, 0] != h[0, 1]  # same rows in different bands do not collide


def test_candidate_pairs_small_and_large_runs():
    hashes = np.array([7, 7, 3, 9, 9, 9, 1], np.uint64)
    docs = np.array([10, 11, 12, 13, 14, 15, 16], np.int64)
    a, b = candidate_pairs(hashes, docs)
    assert sorted(zip(a.tolist(), b.tolist())) == [(10, 11), (13, 14), (13, 15), (14, 15)]
    big = np.zeros(100, np.uint64)
    a, b = candidate_pairs(big, np.arange(100, dtype=np.int64), all_pairs_max=32)
    nodes, labels = connected_components(a, b)
    assert len(nodes) == 100 and len(set(labels.tolist())) == 1
    assert len(a) < 2 * 100  # linear, not quadratic


def test_candidate_pairs_are_every_pair_of_small_runs():
    rng = np.random.default_rng(7)
    hashes = rng.integers(0, 400, 3000).astype(np.uint64)  # runs of many sizes, none over 32
    docs = rng.permutation(3000).astype(np.int64)
    groups: dict[int, list[int]] = {}
    for h, d in zip(hashes.tolist(), docs.tolist()):
        groups.setdefault(h, []).append(d)
    assert max(map(len, groups.values())) <= 32
    expect = sorted((min(x, y), max(x, y)) for g in groups.values() for i, x in enumerate(g) for y in g[i + 1 :])
    a, b = candidate_pairs(hashes, docs)
    assert sorted(zip(a.tolist(), b.tolist())) == expect


def test_connected_components_are_transitive_and_labelled_by_min():
    a = np.array([5, 6, 100], np.int64)
    b = np.array([6, 7, 101], np.int64)
    nodes, labels = connected_components(a, b)
    assert dict(zip(nodes.tolist(), labels.tolist())) == {5: 5, 6: 5, 7: 5, 100: 100, 101: 100}


def _find(parent: dict[int, int], x: int) -> int:
    parent.setdefault(x, x)
    while parent[x] != x:
        x = parent[x]
    return x


def test_connected_components_match_a_python_union_find():
    rng = np.random.default_rng(3)
    for n, m in [(2, 1), (50, 30), (400, 500), (5000, 4000)]:
        a, b = rng.integers(0, n, m) * 3 + 1, rng.integers(0, n, m) * 3 + 1
        parent: dict[int, int] = {}
        for x, y in zip(a.tolist(), b.tolist()):
            rx, ry = _find(parent, x), _find(parent, y)
            parent[max(rx, ry)] = min(rx, ry)
        nodes, labels = connected_components(a, b)
        assert nodes.tolist() == sorted(parent)
        assert labels.tolist() == [_find(parent, x) for x in nodes.tolist()]
    chain = np.arange(20000, dtype=np.int64)[::-1].copy()  # a long path, given from its far end
    assert set(connected_components(chain, chain + 1)[1].tolist()) == {0}


def test_survivor_priority_then_length_then_id():
    members = pa.table(
        {
            "doc": pa.array([1, 2, 3, 4, 5], pa.int64()),
            "component": pa.array([1, 1, 1, 4, 4], pa.int64()),
            "id": ["c", "b", "a", "y", "x"],
            "source": ["cc/X", "pile/W", "pile/W", "cc/X", "cc/X"],
            "rank": pa.array([1, 0, 0, 1, 1], pa.int32()),
            "length": pa.array([999, 10, 10, 50, 40], pa.int64()),
        }
    )
    out = choose_survivors(members).to_pylist()
    kept = {r["id"] for r in out if r["kept"]}
    assert kept == {"a", "y"}  # best rank, tie on length -> smallest id; then longest
    assert {r["id"]: r["cluster"] for r in out} == {"a": "a", "b": "a", "c": "a", "x": "y", "y": "y"}


@pytest.mark.parametrize("groups,parts", [(1, 1), (3, 2), (7, 5)])
@pytest.mark.parametrize("longest", [True, False])
def test_partitioned_survivors_equal_one_sort_of_all_members(tmp_path, groups, parts, longest):
    """attach -> reduce -> finalize (each group's best member, then the best of those) chooses what one sort of everything does."""
    from curate.dedup.clusters import AttachJob, FinalizeJob, ReduceJob, attach_job, finalize_job, reduce_job
    from curate.partitions import write_buckets

    rng = np.random.default_rng(groups * 10 + parts + longest)
    n_shards, per_shard = 14, 40
    docs = np.concatenate([(np.int64(s) << np.int64(32)) | np.arange(per_shard, dtype=np.int64) for s in range(n_shards)])
    comp = np.sort(rng.choice(docs, 30, replace=False))[rng.integers(0, 30, len(docs))]  # 30 components, members everywhere
    comp[rng.random(len(docs)) < 0.02] = docs[0]  # and one spanning every group
    group_of_shard = [min(groups - 1, s * groups // n_shards) for s in range(n_shards)]
    meta = pa.table({"doc": docs, "id": [f"id{int(rng.integers(0, 10**6)):06d}-{i}" for i in range(len(docs))],
                     "source": rng.choice(["cc/X", "pile/W"], len(docs)).tolist(),
                     "rank": pa.array(rng.integers(0, 3, len(docs)), pa.int32()), "length": pa.array(rng.integers(0, 5, len(docs)), pa.int64()),
                     "weight": pa.array(rng.integers(1, 4, len(docs)), pa.int64())})  # fmt: skip
    metas = []
    for s in range(n_shards):
        pq.write_table(meta.slice(s * per_shard, per_shard), tmp_path / f"m{s}.parquet")
        metas.append(str(tmp_path / f"m{s}.parquet"))
    shard = (docs >> np.int64(32)).astype(np.int64)
    write_buckets(tmp_path / "labels", {"doc": docs, "component": comp}, np.asarray(group_of_shard)[shard], groups)
    mi = [str(tmp_path / f"a{g}.parquet") for g in range(groups)]
    pt = [str(tmp_path / f"p{g}.arrow") for g in range(groups)]
    for g in range(groups):
        attach_job(AttachJob(g, [str(tmp_path / "labels")], [metas[s] for s in range(n_shards) if group_of_shard[s] == g], mi[g], pt[g],
                             parts, longest))  # fmt: skip
    res = [str(tmp_path / f"r{c}.arrow") for c in range(parts)]
    stats = [reduce_job(ReduceJob(c, pt, res[c], groups, 1 << 30)) for c in range(parts)]
    got = {}
    for g in range(groups):
        finalize_job(FinalizeJob(g, mi[g], res, str(tmp_path / f"f{g}.parquet"), str(tmp_path / f"l{g}.arrow"), 3))
        t = pq.read_table(tmp_path / f"f{g}.parquet").to_pylist()
        got.update({r["doc"]: (r["cluster"], r["kept"], r["dup_count"]) for r in t})
    ref = choose_survivors(meta.append_column("component", pa.array(comp)), tie_break_longest=longest).to_pylist()
    assert got == {r["doc"]: (r["cluster"], r["kept"], r["dup_count"]) for r in ref}
    assert sum(s["clusters"] for s in stats) == len(np.unique(comp)) and sum(s["members"] for s in stats) == len(docs)


# --------------------------------------------------------------------------- CLI end to end


def chain_texts() -> tuple[str, str, str]:
    """A ~ B ~ C (J ~0.86) with A !~ C (J ~0.74)."""
    a = words(3000, 400)
    b = a[:370] + words(3001, 30)
    c = words(3002, 30) + b[30:]
    return " ".join(a), " ".join(b), " ".join(c)


@pytest.fixture
def near_dup_corpus(tmp_path):
    """Pairs at Jaccard ~0.9 (duplicates) and ~0.5 (not), a chain, and singletons."""
    rows = []
    truth = {}
    for i in range(6):
        base = words(1000 + i, 600)
        v = variant(base, 0.905, i)
        truth[f"hi{i}"] = true_jaccard(" ".join(base), v)
        rows += [(f"hi{i}-a", " ".join(base), "cc/X"), (f"hi{i}-b", v, "cc/X")]
    for i in range(6):
        base = words(2000 + i, 600)
        v = variant(base, 0.5, i)
        truth[f"lo{i}"] = true_jaccard(" ".join(base), v)
        rows += [(f"lo{i}-a", " ".join(base), "cc/X"), (f"lo{i}-b", v, "cc/X")]
    a, b, c = chain_texts()
    truth["AB"], truth["BC"], truth["AC"] = true_jaccard(a, b), true_jaccard(b, c), true_jaccard(a, c)
    rows += [("chain-a", a, "cc/X"), ("chain-b", b, "cc/X"), ("chain-c", c, "cc/X")]
    rows += [(f"single{i}", " ".join(words(4000 + i)), "pile/W") for i in range(20)]
    random.Random(0).shuffle(rows)
    write_docs(tmp_path / "in", rows, shards=3)
    return tmp_path / "in", truth


def groups_of(out) -> set[frozenset]:
    cl = pd.read_parquet(out / "_clusters")
    return {frozenset(g["id"]) for _, g in cl.groupby("cluster")}


def test_fuzzy_finds_09_not_05(run, near_dup_corpus, tmp_path):
    src, truth = near_dup_corpus
    assert all(0.88 <= truth[f"hi{i}"] <= 0.905 for i in range(6))
    assert all(0.45 <= truth[f"lo{i}"] <= 0.5 for i in range(6))
    res = run("dedup", "fuzzy", "--in", src, "--out", tmp_path / "out", "--keep-rejected", "--workers", "1", "--verify")
    assert "dedup fuzzy:" in res.stdout and "verify signature" in res.stdout
    groups = groups_of(tmp_path / "out")
    for i in range(6):
        assert frozenset({f"hi{i}-a", f"hi{i}-b"}) in groups
    cl = pd.read_parquet(tmp_path / "out" / "_clusters")
    assert not any(i.startswith(("lo", "single")) for i in cl["id"])
    kept = pd.read_parquet(tmp_path / "out")
    rej = pd.read_parquet(tmp_path / "out" / "_rejected")
    assert len(kept) + len(rej) == 6 * 2 + 6 * 2 + 3 + 20
    assert set(rej["reason"]) == {"fuzzy_dup"}
    assert set(rej["dup_of"]) <= set(kept["id"])
    assert kept.loc[kept["id"] == "hi0-a", "dup_cluster"].notna().all() or kept.loc[kept["id"] == "hi0-b", "dup_cluster"].notna().all()
    assert kept.loc[kept["id"].str.startswith("single"), "dup_cluster"].isna().all()
    rec = json.loads((tmp_path / "out" / "_SUCCESS").read_text())
    assert rec["rejected"]["fuzzy_dup"]["docs"] == len(rej)
    assert rec["dedup"]["bands"] * rec["dedup"]["rows"] <= 128


def test_fuzzy_without_verification_finds_close_pairs(run, tmp_path):
    rows = []
    for i in range(8):
        base = words(6000 + i, 600)
        rows += [(f"hi{i}-a", " ".join(base), "x"), (f"hi{i}-b", variant(base, 0.96, i), "x")]
        lo = words(7000 + i, 600)
        rows += [(f"lo{i}-a", " ".join(lo), "x"), (f"lo{i}-b", variant(lo, 0.5, i), "x")]
    write_docs(tmp_path / "in", rows)
    res = run("dedup", "fuzzy", "--in", tmp_path / "in", "--out", tmp_path / "out")
    assert "9 bands x 13 rows, verify none" in res.stdout  # datasketch's optimum for 0.8 and 128 permutations
    assert groups_of(tmp_path / "out") == {frozenset({f"hi{i}-a", f"hi{i}-b"}) for i in range(8)}


def test_components_are_transitive(run, near_dup_corpus, tmp_path):
    src, truth = near_dup_corpus
    assert truth["AB"] >= 0.84 and truth["BC"] >= 0.84 and truth["AC"] < 0.76
    run("dedup", "fuzzy", "--in", src, "--out", tmp_path / "out", "--verify", "exact", "--workers", "1")
    assert frozenset({"chain-a", "chain-b", "chain-c"}) in groups_of(tmp_path / "out")  # A and C joined through B
    ids = pd.concat([pd.read_parquet(f) for f in sorted((tmp_path / "out" / "_work" / "sig").glob("*.meta.parquet"))])
    id_of = dict(zip(ids["doc"], ids["id"]))
    u = np.concatenate([np.load(f) for f in sorted((tmp_path / "out" / "_work" / "cc" / "edges").glob("u-*.u.npy"))])
    v = np.concatenate([np.load(f) for f in sorted((tmp_path / "out" / "_work" / "cc" / "edges").glob("u-*.v.npy"))])
    edges = {frozenset({id_of[a], id_of[b]}) for a, b in zip(u.tolist(), v.tolist())}
    assert {frozenset({"chain-a", "chain-b"}), frozenset({"chain-b", "chain-c"})} <= edges
    assert frozenset({"chain-a", "chain-c"}) not in edges  # exact verification: no weak link survives


def test_priority_decides_the_survivor(run, tmp_path):
    base = words(5, 600)
    text = " ".join(base)
    rows = [("aaa-cc", text, "cc/CC-MAIN-2020-50"), ("zzz-wiki", variant(base, 0.96, 1), "pile/Wikipedia"), ("mmm-gh", text, "pile/Github")]
    write_docs(tmp_path / "in", rows)
    run("dedup", "fuzzy", "--in", tmp_path / "in", "--out", tmp_path / "o1", "--priority", "pile/Wikipedia,pile/*,cc/*")
    assert pd.read_parquet(tmp_path / "o1")["id"].tolist() == ["zzz-wiki"]
    run("dedup", "fuzzy", "--in", tmp_path / "in", "--out", tmp_path / "o2", "--priority", "cc/*")
    assert pd.read_parquet(tmp_path / "o2")["id"].tolist() == ["aaa-cc"]
    run("dedup", "fuzzy", "--in", tmp_path / "in", "--out", tmp_path / "o3")  # no priority: longest, then smallest id
    longest = max(rows, key=lambda r: (len(r[1]), [-ord(c) for c in r[0]]))
    assert pd.read_parquet(tmp_path / "o3")["id"].tolist() == [longest[0]]


def test_several_input_directories_together(run, tmp_path):
    base = words(9, 600)
    write_docs(tmp_path / "pile", [("p1", " ".join(base), "pile/OpenWebText2"), ("p2", " ".join(words(10)), "pile/OpenWebText2")])
    write_docs(tmp_path / "cc", [("c1", variant(base, 0.9, 2), "cc/CC-MAIN-2021-04"), ("c2", " ".join(words(11)), "cc/CC-MAIN-2021-04")])
    run(
        "dedup",
        "fuzzy",
        "--in",
        tmp_path / "pile",
        "--in",
        tmp_path / "cc",
        "--out",
        tmp_path / "o",
        "--priority",
        "pile/*,cc/*",
        "--verify",
    )
    kept = pd.read_parquet(tmp_path / "o")
    assert sorted(kept["id"]) == ["c2", "p1", "p2"]
    assert len(list((tmp_path / "o").glob("part-*.parquet"))) == 2  # one output shard per input shard


def test_empty_and_one_word_documents(run, tmp_path):
    rows = [("e1", "", "x"), ("e2", "", "x"), ("w1", "hello", "x"), ("w2", "Hello!", "x"), ("w3", "world", "x"), ("p", "...", "x")]
    write_docs(tmp_path / "in", rows)
    run("dedup", "fuzzy", "--in", tmp_path / "in", "--out", tmp_path / "fz")
    # empty docs are never clustered; of "hello" and "Hello!" the longer survives
    assert sorted(pd.read_parquet(tmp_path / "fz")["id"]) == ["e1", "e2", "p", "w2", "w3"]
    run("dedup", "exact", "--in", tmp_path / "in", "--out", tmp_path / "ex", "--normalize", "lower,punct,whitespace")
    assert sorted(pd.read_parquet(tmp_path / "ex")["id"]) == ["e1", "w1", "w3"]


def test_exact_dedup_normalisation_priority_and_ties(run, tmp_path):
    rows = [
        ("b", "Hello   World.\n", "cc/X"),
        ("a", "hello world.", "cc/X"),
        ("z", "HELLO WORLD.", "pile/Wikipedia"),
        ("c", "hello, world", "cc/X"),
        ("d", "something else entirely", "cc/X"),
    ]
    write_docs(tmp_path / "in", rows)
    res = run("dedup", "exact", "--in", tmp_path / "in", "--out", tmp_path / "o", "--keep-rejected")
    assert "rejected: exact_dup 2" in res.stdout
    assert sorted(pd.read_parquet(tmp_path / "o")["id"]) == ["a", "c", "d"]  # lower,whitespace: a b z equal; ties by id
    run("dedup", "exact", "--in", tmp_path / "in", "--out", tmp_path / "o2", "--priority", "pile/*")
    assert sorted(pd.read_parquet(tmp_path / "o2")["id"]) == ["c", "d", "z"]
    run("dedup", "exact", "--in", tmp_path / "in", "--out", tmp_path / "o3", "--normalize", "")
    assert len(pd.read_parquet(tmp_path / "o3")) == 5
    rej = pd.read_parquet(tmp_path / "o2" / "_rejected") if (tmp_path / "o2" / "_rejected").exists() else None
    assert rej is None  # not asked for
    rej = pd.read_parquet(tmp_path / "o" / "_rejected")
    assert set(rej["dup_of"]) == {"a"}
    cl = pd.read_parquet(tmp_path / "o" / "_clusters")
    assert sorted(cl["id"]) == ["a", "b", "z"] and cl["kept"].sum() == 1


def test_bad_options(run, tmp_path):
    write_docs(tmp_path / "in", [("a", "x y z", "s")])
    res = run("dedup", "fuzzy", "--in", tmp_path / "in", "--out", tmp_path / "o", "--bands", "20", "--rows", "10", ok=False)
    assert res.exit_code == 1 and "exceeds --num-perm 128" in res.stderr
    res = run("dedup", "fuzzy", "--in", tmp_path / "in", "--out", tmp_path / "o", "--bands", "20", ok=False)
    assert res.exit_code == 1 and "give both --bands and --rows" in res.stderr
    res = run("dedup", "exact", "--in", tmp_path / "in", "--out", tmp_path / "o", "--normalize", "lowercase", ok=False)
    assert res.exit_code == 1 and "unknown normalisation 'lowercase'" in res.stderr


def test_one_and_two_workers_give_identical_output(run, near_dup_corpus, tmp_path):
    src, _ = near_dup_corpus
    run("dedup", "fuzzy", "--in", src, "--out", tmp_path / "w1", "--workers", "1", "--keep-rejected", "--verify")
    run("dedup", "fuzzy", "--in", src, "--out", tmp_path / "w2", "--workers", "2", "--keep-rejected", "--verify")
    assert digest_dir(tmp_path / "w1") == digest_dir(tmp_path / "w2")


@pytest.mark.slow
@pytest.mark.parametrize("phase,pattern,count", [
    ("signatures", "_work/sig/c-*.meta.parquet", 4),
    ("lsh", "_work/lsh/pairs/g-*.off.npy", 2),
    ("pairs", "_work/cc/edges/u-*.json", 2),
    ("components", "_work/cc/round-000/part-*.json", 2),
    ("labels", "_work/cc/labels/part-*.json", 2),
    ("attach", "_work/clusters/partials/g-*.off.npy", 2),
    ("survivors", "_work/clusters/results/c-*.json", 2),
    ("members", "_work/clusters/members/g-*.parquet", 2),
    ("clusters", "_clusters/part-*.parquet", 2),
    ("removal", "part-*.parquet", 3),
])  # fmt: skip
def test_fuzzy_killed_in_each_phase_reruns_to_identical_output(tmp_path, phase, pattern, count):
    rows = []
    for i in range(1500):
        base = words(10_000 + i, 200)
        rows.append((f"d{i:05d}", " ".join(base), "cc/X" if i % 2 else "pile/W"))
        if i % 10 == 0:
            rows.append((f"v{i:05d}", variant(base, 0.9, i), "cc/X"))
    write_docs(tmp_path / "in", rows, shards=12)
    env = {**os.environ, "CURATE_PROGRESS": "log", "CURATE_MIN_PARTITIONS": "4"}  # every phase in several tasks
    args = [
        "dedup",
        "fuzzy",
        "--in",
        str(tmp_path / "in"),
        "--verify",
        "exact",
        "--keep-rejected",
        "--workers",
        "1",
        "--priority",
        "pile/*",
    ]
    subprocess.run([sys.executable, "-m", "curate", *args, "--out", str(tmp_path / "ref")], check=True, env=env, capture_output=True)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "curate", *args, "--out", str(out)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    _kill_when(proc, out, pattern, count)
    assert not (out / "_SUCCESS").exists(), f"the kill in phase {phase} came after the end"
    subprocess.run([sys.executable, "-m", "curate", *args, "--out", str(out)], check=True, env=env, capture_output=True)
    ref_files = {k: v for k, v in digest_dir(tmp_path / "ref").items()}
    assert digest_dir(out) == ref_files
    kept = pd.read_parquet(out)
    assert kept["id"].is_unique and len(kept) + len(pd.read_parquet(out / "_rejected")) == len(rows)


def test_word_hashes_equal_words_equal_hashes_across_documents():
    texts = pa.array(["Hello, world! HELLO", "world\u00a0hello\tcafé", "café-au-lait"], pa.large_string())
    wh, off = word_hashes(texts)
    per_doc = [wh[off[i] : off[i + 1]].tolist() for i in range(3)]
    assert len(per_doc[0]) == 3 and per_doc[0][0] == per_doc[0][2]  # case folded, punctuation dropped
    assert per_doc[1][:2] == [per_doc[0][1], per_doc[0][0]]  # no-break space and tab separate words
    assert per_doc[1][2] == per_doc[2][0]  # 'café' in both; hyphens split words
    assert len(set(wh.tolist())) == 5  # hello, world, café, au, lait


def test_unique_per_doc_matches_numpy_unique():
    rng = np.random.default_rng(0)
    sh = rng.integers(0, 50, 300).astype(np.uint64)
    off = np.array([0, 10, 10, 150, 300])
    u, uoff = unique_per_doc(sh, off)
    for i in range(4):
        assert u[uoff[i] : uoff[i + 1]].tolist() == np.unique(sh[off[i] : off[i + 1]] & np.uint64(2**32 - 1)).tolist()


def test_band_choice_agrees_with_datasketch():
    from datasketch.lsh import _optimal_param

    for threshold in (0.3, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95):
        for weights in ((0.5, 0.5), (0.1, 0.9), (0.9, 0.1)):
            for num_perm in (32, 64, 100, 128, 256):
                assert optimal_bands(threshold, num_perm, *weights) == tuple(_optimal_param(threshold, num_perm, *weights))


def test_word_hashes_long_words():
    w20a, w20b = "abcdefghij" + "klmnopqrst", "abcdefghij" + "klmnXpqrst"  # differ in the middle chunk
    w70 = "x" * 70
    texts = pa.array([f"{w20a} {w70} {w20b}", f"{w20a.upper()} {w70}", "short"], pa.large_string())
    wh, off = word_hashes(texts)
    d0, d1 = wh[off[0] : off[1]].tolist(), wh[off[1] : off[2]].tolist()
    assert d0[0] == d1[0] and d0[1] == d1[1]  # same words, same hashes (case folded)
    assert d0[0] != d0[2]  # one byte apart in the second 8-byte chunk
    assert len(set(wh.tolist())) == 4


def _reference_words(text: str) -> list[str]:
    """The words of normalize_text (lowercase; runs of anything but letters, digits and marks split)."""
    return [w for w in re.split(r"[\t\n\x0b\x0c\r ]+", normalize_text(pa.array([text]))[0].as_py()) if w]


def test_word_hashes_find_the_regex_words_in_any_script():
    """The byte-level word finder gives the same words as the regex on multilingual text and odd characters."""
    rng = random.Random(5)
    alphabet = "abcXYZ019 \t\n.,;!?'\"-—–…“”‘’«»¿¡ éÉüßçñøåÆŒ İıΣσςЖжЁё ع٣ दि ไทย 中文字 かなカナ 한국어 ́ ̧ 𝒳𝔸 😀👍🏽 \u00a0\u2009\u200b\u3000 ¼²₃ ①"
    texts = ["", "   ", "—", "Ünïcödé ÉCOLE — naïve café", "x" * 70 + " y"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 120))) for _ in range(400)]
    wh, off = word_hashes(pa.array(texts, pa.large_string()))
    vocab: dict[str, int] = {}
    for i, text in enumerate(texts):
        ref = _reference_words(text)
        got = wh[off[i] : off[i + 1]].tolist()
        assert len(got) == len(ref), (text, ref)
        for w, h in zip(ref, got, strict=True):
            assert vocab.setdefault(w, h) == h  # one word, one hash, wherever it occurs
    assert len(set(vocab.values())) == len(vocab)  # different words, different hashes


def test_word_bytes_of_malformed_utf8_do_not_fail():
    """Stages repair invalid UTF-8 before dedup; the byte classifier still never fails on it."""
    raw = b"ok \xff\xfe w\xc3\xa9rd \x80\x80 \xe4\xb8 \xf4\x90\x80\x80 \xe4\xb8\xad"
    isw = _is_word_byte(np.frombuffer(raw, np.uint8))
    assert isw.tolist()[:3] == [True, True, False]
    assert isw[raw.index(b"w\xc3") : raw.index(b"rd") + 2].all()  # w, é (2 bytes), r, d
    assert not isw[raw.index(b"\xff")] and not isw[raw.index(b"\x80")]
    assert isw[-3:].all()  # 中 after the damage
    assert _is_word_byte(np.frombuffer(b"\x80\x80ab", np.uint8)).tolist() == [False, False, True, True]  # no lead at all


def _combine(ws: list[int]) -> int:
    acc = 0
    for w in ws:
        acc = (acc * int(_M1) + w) & ((1 << 64) - 1)
    return acc


def test_shingle_hashes_match_a_python_reference():
    rng = random.Random(11)
    docs = [[rng.randrange(1, 50) for _ in range(rng.choice([0, 1, 3, 4, 5, 6, 9, 40]))] for _ in range(300)]
    for batch in (docs, [d for d in docs if len(d) >= 5]):  # with short documents, and the all-long fast path
        wh = np.array([w for d in batch for w in d], np.uint64)
        off = np.cumsum([0] + [len(d) for d in batch]).astype(np.int64)
        sh, soff = shingle_hashes(wh, off, 5)

        for i, d in enumerate(batch):
            grams = [d[j : j + 5] for j in range(len(d) - 4)] if len(d) >= 5 else ([d] if d else [])
            expect = mix64(np.array([_combine(g) for g in grams], np.uint64)).tolist() if grams else []
            assert sh[soff[i] : soff[i + 1]].tolist() == expect


# --------------------------------------------------------------------------- the compiled kernel


def _numpy_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(minhash, "_native", None)


def test_compiled_kernel_is_built_where_a_compiler_is():
    """setup.py builds it optionally; with a C compiler here, a missing kernel is a build bug, not a fallback."""
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler: fuzzy dedup runs on the numpy implementation")
    assert minhash._native is not None


def test_numpy_shingling_gives_the_same_output_and_says_so(near_dup_corpus, tmp_path):
    """The fallback (no compiled kernel) end to end: identical Parquet out, and the first log line names it."""
    src, _ = near_dup_corpus
    outs = {}
    for mode, says in (("compiled", "shingling compiled"), ("numpy", "shingling numpy (CURATE_SHINGLING=numpy)")):
        if mode == "compiled" and minhash._native is None:
            pytest.skip("compiled kernel not built")
        outs[mode] = tmp_path / mode
        args = ["dedup", "fuzzy", "--in", str(src), "--out", str(outs[mode]), "--verify", "exact", "--workers", "1", "--keep-rejected"]
        res = subprocess.run(
            [sys.executable, "-m", "curate", *args], env={**os.environ, "CURATE_SHINGLING": mode}, capture_output=True, text=True
        )
        assert res.returncode == 0, res.stderr
        assert says in res.stderr.splitlines()[0]
    assert digest_dir(outs["compiled"]) == digest_dir(outs["numpy"])
    assert len(pd.read_parquet(outs["numpy"] / "_rejected")) >= 6  # the ~0.9 pairs were found


def test_compiled_shingles_equal_numpy_shingles(monkeypatch):
    """Same hashes from the kernel and numpy: mixed case and scripts, long words, short, empty and null documents, slices."""
    if minhash._native is None:
        pytest.skip("compiled kernel not built")
    rng = random.Random(3)
    alphabet = "abcXYZ019 \t\n.,;!?'-—…“” éÉüßÇñØ İıΣσς ЖжЁё ع٣ दि 中文 かな 한국 ́ 😀👍🏽 \u00a0\u3000 ²₃ K"
    texts: list[str | None] = ["", None, "   ", "word", "A b", "x" * 64, "y" * 65 + " " + "Z" * 8 + " " + "q" * 16, "ends with a word"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 300))) for _ in range(300)]
    texts += [
        " ".join(rng.choice(VOCAB).upper() if rng.random() < 0.2 else rng.choice(VOCAB) for _ in range(rng.randint(0, 90)))
        for _ in range(200)
    ]
    arrays = [
        pa.array(texts, pa.large_string()),
        pa.array(texts, pa.string()).slice(7, 400),  # an offset into Arrow's buffers, 32-bit offsets
        pa.chunked_array([pa.array(texts[:250]), pa.array(texts[250:])]),
        pa.array([t for t in texts if t and t.isascii()], pa.large_string()),  # the all-ASCII path
    ]
    for ngram in (1, 2, 5, 13):
        for arr in arrays:
            native = MinHasher(ngram=ngram).shingles(arr)
            with monkeypatch.context() as m:
                _numpy_only(m)
                ref = MinHasher(ngram=ngram).shingles(arr)
            assert np.array_equal(native[1], ref[1]) and np.array_equal(native[0], ref[0])


def test_compiled_signatures_equal_numpy_signatures(monkeypatch):
    """Rounds, probing and rotation give the same bins in C and numpy, for any bin count, seed and round count."""
    if minhash._native is None:
        pytest.skip("compiled kernel not built")
    rng = np.random.default_rng(1)
    sizes = rng.choice([0, 1, 2, 3, 7, 20, 64, 130, 600], size=600)
    off = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=off[1:])
    sh = rng.integers(0, 2**64, size=int(off[-1]), dtype=np.uint64)
    for num_perm, seed, rounds in ((128, 42, 4), (16, 1, 1), (7, -3, 2), (256, 5, 8)):
        native = oph_signatures(sh, off, num_perm, seed, rounds)
        with monkeypatch.context() as m:
            _numpy_only(m)
            ref = oph_signatures(sh, off, num_perm, seed, rounds)
        assert np.array_equal(native, ref), (num_perm, seed, rounds)
        assert (native[sizes == 0] == EMPTY).all() and not (native[sizes > 0] == EMPTY).any()


def test_pair_jaccards_compiled_and_numpy_equal_set_arithmetic(monkeypatch):
    rng = np.random.default_rng(4)
    sets = [np.unique(rng.integers(0, 2**32, size=n, dtype=np.uint64)).astype(np.uint32) for n in (0, 1, 5, 300, 600)]
    sets += [np.unique(np.concatenate([sets[3][:250], rng.integers(0, 2**32, size=40, dtype=np.uint64).astype(np.uint32)]))]
    sets += [sets[4].copy(), sets[3][::2].copy()]  # equal sets; a subset
    flat = np.concatenate(sets)
    off = np.zeros(len(sets) + 1, np.int64)
    np.cumsum([len(x) for x in sets], out=off[1:])
    a, b = np.array([i for i in range(len(sets)) for _ in sets]), np.array([j for _ in sets for j in range(len(sets))])
    truth = [len(set(sets[i].tolist()) & set(sets[j].tolist())) / len(set(sets[i].tolist()) | set(sets[j].tolist())) if len(sets[i]) and len(sets[j]) else 0.0 for i, j in zip(a, b)]  # fmt: skip
    # as stored: each document's shingles in text order, with repeats
    raw = [rng.permutation(np.concatenate([x, x[: len(x) // 3]])) for x in sets]
    raw_flat = np.concatenate(raw).astype(np.uint32)
    raw_off = np.zeros(len(raw) + 1, np.int64)
    np.cumsum([len(x) for x in raw], out=raw_off[1:])
    for data, offsets in ((flat, off), (raw_flat, raw_off)):
        got = pair_jaccards(data, offsets, a, b)
        with monkeypatch.context() as m:
            _numpy_only(m)
            ref = pair_jaccards(data, offsets, a, b)
            m.setattr(minhash, "_SET_BLOCK", 50)  # sets made a few documents at a time
            assert np.array_equal(pair_jaccards(data, offsets, a, b), ref)
        assert got.dtype == np.float32 and np.array_equal(got, ref)
        assert np.array_equal(got, np.array(truth, np.float32))
    if minhash._native is not None:
        with pytest.raises(ValueError, match="outside"):
            minhash._native.pair_jaccard(flat, off, np.array([0], np.int64), np.array([len(sets)], np.int64), np.empty(1, np.float32))


def test_compiled_kernel_rejects_bad_buffers():
    if minhash._native is None:
        pytest.skip("compiled kernel not built")
    text = np.frombuffer(b"ab cd", np.uint8)
    out, out_off = np.empty(8, np.uint64), np.empty(2, np.int64)
    with pytest.raises(ValueError, match="outside"):
        minhash._native.shingle_hashes(text, np.array([0, 9], np.int64), np.zeros(0, np.uint8), 2, out, out_off)
    with pytest.raises(ValueError, match="too small"):
        minhash._native.shingle_hashes(text, np.array([0, 5], np.int64), np.zeros(0, np.uint8), 1, np.empty(1, np.uint64), out_off)
    with pytest.raises(ValueError, match="non-ASCII"):  # a byte >= 0x80 without its class
        minhash._native.shingle_hashes(
            np.frombuffer("é".encode(), np.uint8), np.array([0, 2], np.int64), np.zeros(1, np.uint8), 1, out, out_off
        )
    assert minhash._native.shingle_hashes(text, np.array([0, 5], np.int64), np.zeros(0, np.uint8), 1, out, out_off) == 2


def test_oph_estimates_jaccard_like_independent_permutations():
    """Mean and spread of the estimate at J = 0.8 for sets of 45 to 2,000 shingles: unbiased, within 15% of binomial."""
    rng = np.random.default_rng(7)
    for size in (45, 128, 600, 2000):
        c = round(2 * 0.8 * size / 1.8)  # |A & B| for |A| = |B| = size at J = 0.8
        truth = c / (2 * size - c)
        sh, off = [], [0]
        for _ in range(400):
            u = rng.integers(0, 2**64, size=2 * size - c, dtype=np.uint64)
            for x in (u[:size], u[size - c :]):
                sh.append(x)
                off.append(off[-1] + len(x))
        sig = oph_signatures(np.concatenate(sh), np.array(off), 128, 11)
        err = (sig[0::2] == sig[1::2]).mean(axis=1) - truth
        assert abs(err.mean()) < 0.006, size
        assert err.std() < 1.15 * np.sqrt(truth * (1 - truth) / 128), size


def _outputs(out: Path) -> dict[str, str]:
    """sha256 of what a dedup stage writes for users: kept and rejected shards, the cluster listing (not _work/)."""
    return {k: v for k, v in digest_dir(out).items() if not k.startswith("_work")}


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["fuzzy", "exact"])
def test_output_is_the_same_for_any_task_memory_and_worker_count(tmp_path, stage):
    """Partition counts follow --task-memory (and CURATE_MIN_PARTITIONS); the output must not."""
    rows = []
    for i in range(600):
        base = words(20_000 + i, 120)
        rows.append((f"d{i:04d}", " ".join(base), "cc/X" if i % 3 else "pile/W"))
        if i % 7 == 0:
            rows.append((f"v{i:04d}", variant(base, 0.92, i) if stage == "fuzzy" else " ".join(base).upper(), "cc/X"))
        if i % 50 == 0:
            rows.extend((f"c{i:04d}-{k}", " ".join(base), "cc/Y") for k in range(30))  # a cluster of 31 copies
    write_docs(tmp_path / "in", rows, shards=6)
    args = ["dedup", stage, "--in", str(tmp_path / "in"), "--keep-rejected", "--priority", "pile/*"]
    env = {**os.environ, "CURATE_PROGRESS": "log"}
    subprocess.run([sys.executable, "-m", "curate", *args, "--out", str(tmp_path / "one"), "--workers", "1"], check=True, env=env,
                   capture_output=True)  # fmt: skip
    many = {**env, "CURATE_MIN_PARTITIONS": "8"}
    r = subprocess.run([sys.executable, "-m", "curate", *args, "--out", str(tmp_path / "many"), "--workers", "2", "--task-memory", "16MB"],
                       check=True, env=many, capture_output=True, text=True)  # fmt: skip
    subprocess.run([sys.executable, "-m", "curate", *args, "--out", str(tmp_path / "small"), "--workers", "2", "--task-memory", "16MB"],
                   check=True, env=env, capture_output=True)  # fmt: skip
    plan = json.loads((tmp_path / "many" / "_SUCCESS").read_text())["dedup"]["plan"]
    assert plan["task_memory"] == 16 << 20 and plan["groups"] > 1 and plan["survivor_parts"] >= 8, plan
    one, many_ = _outputs(tmp_path / "one"), _outputs(tmp_path / "many")
    assert one == _outputs(tmp_path / "small") and any(k.startswith("_clusters/") for k in one)  # byte for byte
    shards = {k: v for k, v in one.items() if not k.startswith("_clusters")}
    assert shards == {k: v for k, v in many_.items() if not k.startswith("_clusters")} and "part-00000.parquet" in shards

    def listing(out: Path) -> pd.DataFrame:  # the forced listing parts differ: the same clusters in more files
        return pd.read_parquet(out / "_clusters").sort_values(["cluster", "id"]).reset_index(drop=True)

    pd.testing.assert_frame_equal(listing(tmp_path / "one"), listing(tmp_path / "many"))
    kept = pd.read_parquet(tmp_path / "one")
    big = kept[kept["dup_count"] >= 31]
    assert len(big) >= 1 and int(big["dup_count"].max()) >= 31  # the 31 copies: one kept, standing for all of them
    assert (kept["dup_count"] >= 1).all() and kept["id"].is_unique
    assert "curate: error" not in r.stderr
