"""Sub-document dedup: dedup lines (exact, --max-doc-frequency, --approx) and its removal pass."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from curate.dedup.lines import BloomFilter, join_kept, split_units
from tests.test_dataset import _kill_when, digest_dir
from tests.test_dedup import words, write_docs
from tests.test_hardening import _invalid_utf8_dataset

BOILER = ["Accept all cookies to continue browsing this site", "Copyright 2024 Example Media Group. All rights reserved.",
          "Subscribe to our newsletter for weekly updates"]  # fmt: skip
SHARED = "This syndicated paragraph appears under many different articles of the same network of sites and says the same."


def sentence(seed: int, n: int = 12) -> str:
    return " ".join(words(seed, n)).capitalize() + "."


def planted(n: int = 120, seed: int = 0) -> tuple[list[tuple[str, str, str]], set[str]]:
    """Documents of unique lines with planted boilerplate lines and a shared paragraph; returns (rows, the unique lines)."""
    rng = random.Random(seed)
    rows, unique = [], set()
    for i in range(n):
        own = [sentence(seed * 100_000 + i * 10 + k) for k in range(4)]
        unique.update(own)
        lines = own[:2] + [rng.choice(BOILER)] + own[2:]
        paras = ["\n".join(lines)]
        if i % 3 == 0:
            paras.append(SHARED)
        paras.append(BOILER[i % 3])
        rows.append((f"d{i:04d}", "\n\n".join(paras), "cc/X" if i % 2 else "pile/W"))
    return rows, unique


def _texts(out: Path) -> dict[str, str]:
    return dict(pd.read_parquet(out)[["id", "text"]].itertuples(index=False))


def _count_lines(texts: dict[str, str], line: str) -> int:
    return sum(t.split("\n").count(line) for t in texts.values())


# --------------------------------------------------------------------------- units


@pytest.mark.parametrize("unit", ["line", "paragraph"])
def test_split_then_join_gives_the_text_back_and_cuts_with_the_separator(unit):
    texts = ["", "a", "a\nb", "a\n\nb\n", "a\n  \n\n b\n\nc", "\n\n", "one\r\ntwo"]
    for t in texts:
        units, seps = split_units(t, unit)
        assert len(seps) == len(units) - 1
        assert join_kept(units, seps, set()) == t
    units, seps = split_units("p1 l1\np1 l2\n\np2\n \np3", "paragraph")
    assert units == ["p1 l1\np1 l2", "p2", "p3"]
    assert join_kept(units, seps, {1}) == "p1 l1\np1 l2\n\np3" and join_kept(units, seps, {2}) == "p1 l1\np1 l2\n\np2"
    assert join_kept(*split_units("x\ny\nz", "line"), {0, 2}) == "y" and join_kept(*split_units("x", "line"), {0}) == ""


# --------------------------------------------------------------------------- dedup lines


def test_planted_boilerplate_lines_are_cut_unique_lines_never(run, tmp_path):
    rows, unique = planted()
    write_docs(tmp_path / "in", rows, shards=3)
    res = run("dedup", "lines", "--in", tmp_path / "in", "--out", tmp_path / "o", "--priority", "pile/*", "--workers", 1)
    texts = _texts(tmp_path / "o")
    assert len(texts) == len(rows)
    kept_lines = {ln for t in texts.values() for ln in t.split("\n")}
    assert unique <= kept_lines  # nothing unique cut
    for b in BOILER:
        assert _count_lines(texts, b) == 1  # each boilerplate line once, in the first pile/ document holding it
    assert _count_lines(texts, SHARED) == 1
    first = min(i for i, t, s in rows if s == "pile/W" and BOILER[0] in t)
    assert BOILER[0] in texts[first]
    rec = json.loads((tmp_path / "o" / "_SUCCESS").read_text())
    per = rec["counters"]["dedup_lines"]
    assert set(per) == {"cc/X", "pile/W"}
    cut = sum(s["units_cut"] for s in per.values())
    planted_copies = sum(t.split("\n").count(b) for _, t, _ in rows for b in [*BOILER, SHARED])
    assert cut == planted_copies - 4
    assert sum(s["bytes_cut"] for s in per.values()) == sum(len(t.encode()) for _, t, _ in rows) - sum(
        len(t.encode()) for t in texts.values()
    )
    assert f"lines cut: {cut:,} of" in res.stdout


def test_paragraph_unit_cuts_shared_paragraphs_not_their_lines(run, tmp_path):
    rows, unique = planted()
    write_docs(tmp_path / "in", rows)
    run("dedup", "lines", "--in", tmp_path / "in", "--out", tmp_path / "o", "--unit", "paragraph")
    texts = _texts(tmp_path / "o")
    paras = [p for t in texts.values() for p in t.split("\n\n")]
    assert paras.count(SHARED) == 1 and all(paras.count(b) == 1 for b in BOILER)
    assert sum(_count_lines(texts, b) for b in BOILER) == len(rows) + 3  # the lines inside unique paragraphs stay
    assert unique <= {ln for t in texts.values() for ln in t.split("\n")}
    assert SHARED in texts["d0000"]  # no --priority: the smallest id keeps it


def test_normalisation_min_chars_and_ties_by_id(run, tmp_path):
    rows = [("b", "Hello   World, this is it\nshort\nend b here", "s"), ("a", "hello world, this is it\nshort\nend a here", "s"),
            ("c", "HELLO WORLD, THIS IS IT!\nshort", "s")]  # fmt: skip
    write_docs(tmp_path / "in", rows)
    run("dedup", "lines", "--in", tmp_path / "in", "--out", tmp_path / "o", "--min-remaining-chars", "0")
    t = _texts(tmp_path / "o")
    assert t["a"] == "hello world, this is it\nshort\nend a here"  # smallest id keeps the line; "short" is under --min-chars
    assert t["b"] == "short\nend b here" and t["c"] == "HELLO WORLD, THIS IS IT!\nshort"  # "!" differs without punct
    run("dedup", "lines", "--in", tmp_path / "in", "--out", tmp_path / "p", "--normalize", "lower,whitespace,punct",
        "--min-chars", "3", "--min-remaining-chars", "0")  # fmt: skip
    t = _texts(tmp_path / "p")
    assert t["c"] == "" or "HELLO" not in t["c"]
    assert t["a"].startswith("hello world") and "short" in t["a"] and "short" not in t["b"]


def test_max_doc_frequency_cuts_everywhere_above_n(run, tmp_path):
    rows = [(f"d{i}", f"{sentence(i)}\nshared by three docs here\n" + ("shared by all five docs\n" if True else ""), "s")
            for i in range(5)]  # fmt: skip
    rows = [(i, t.replace("shared by three docs here\n", "") if int(i[1:]) >= 3 else t, s) for i, t, s in rows]
    write_docs(tmp_path / "in", rows, shards=2)
    run("dedup", "lines", "--in", tmp_path / "in", "--out", tmp_path / "o", "--max-doc-frequency", "3", "--min-remaining-chars", "0")
    t = _texts(tmp_path / "o")
    assert all("shared by all five docs" not in v for v in t.values())  # 5 documents > 3: cut from all
    assert sum("shared by three docs here" in v for v in t.values()) == 3  # 3 documents: not more than 3, kept in all
    assert all(sentence(int(i[1:])) in v for i, v in t.items())


def test_documents_left_too_short_are_rejected(run, tmp_path):
    rows = [("a", "A long enough unique first line for the test\nthe same footer line everywhere", "s"),
            ("b", "the same footer line everywhere\nok", "s"), ("c", "the same footer line everywhere", "s")]  # fmt: skip
    write_docs(tmp_path / "in", rows)
    res = run("dedup", "lines", "--in", tmp_path / "in", "--out", tmp_path / "o", "--keep-rejected", "--min-remaining-chars", "5")
    assert sorted(_texts(tmp_path / "o")) == ["a"]
    rej = pd.read_parquet(tmp_path / "o" / "_rejected")
    assert sorted(rej["id"]) == ["b", "c"] and set(rej["reason"]) == {"lines:too_short"}
    assert rej.set_index("id").loc["b", "text"] == "the same footer line everywhere\nok"  # rejected as it came in
    assert "lines:too_short 2" in res.stdout


def test_empty_docs_giant_line_and_invalid_utf8_are_counted_not_fatal(run, tmp_path):
    giant = "word " * 400_000
    rows = [("e1", "", "s"), ("e2", "", "s"), ("g1", giant, "s"), ("g2", giant, "s"), ("x", "x", "s")]
    write_docs(tmp_path / "in", rows)
    run("dedup", "lines", "--in", tmp_path / "in", "--out", tmp_path / "o", "--keep-rejected")
    t = _texts(tmp_path / "o")
    assert t["g1"] == giant and "g2" not in t and t["e1"] == "" and t["x"] == "x"
    rec = json.loads((tmp_path / "o" / "_SUCCESS").read_text())
    assert rec["counters"]["dedup_lines"]["s"]["empty_docs"] == 2 and rec["rejected"]["lines:too_short"]["docs"] == 1
    src = _invalid_utf8_dataset(tmp_path / "bad")
    res = run("dedup", "lines", "--in", src, "--out", tmp_path / "b", "--workers", 1)
    assert "Traceback" not in res.stderr
    rec = json.loads((tmp_path / "b" / "_SUCCESS").read_text())
    assert rec["counters"]["invalid_utf8_repaired"]["text"] == 2 and rec["docs_in"] == 12
    pq.read_table(tmp_path / "b").column("text").validate(full=True)


def test_bad_options(run, tmp_path):
    write_docs(tmp_path / "in", [("a", "x y z", "s")])
    o = tmp_path / "o"
    res = run("dedup", "lines", "--in", tmp_path / "in", "--out", o, "--approx", "--priority", "pile/*", ok=False)
    assert res.exit_code == 1 and "give the best --in first" in res.stderr
    res = run("dedup", "lines", "--in", tmp_path / "in", "--out", o, "--approx", "--max-doc-frequency", "3", ok=False)
    assert res.exit_code == 1 and "choose one" in res.stderr
    res = run("dedup", "lines", "--in", tmp_path / "in", "--out", o, "--unit", "sentence", ok=False)
    assert res.exit_code == 2


def _corpus(path: Path, n: int = 400) -> None:
    rows, _ = planted(n, seed=3)
    rows += [(f"z{i:04d}", "\n".join([BOILER[i % 3], sentence(900_000 + i), SHARED]), "cc/Y") for i in range(n // 4)]
    write_docs(path, rows, shards=5)


@pytest.mark.slow
@pytest.mark.parametrize("mode", [[], ["--max-doc-frequency", "20"], ["--unit", "paragraph"]])
def test_output_is_the_same_for_any_task_memory_and_worker_count(tmp_path, mode):
    _corpus(tmp_path / "in")
    args = ["dedup", "lines", "--in", str(tmp_path / "in"), "--keep-rejected", "--priority", "cc/Y", *mode]
    env = {**os.environ, "CURATE_PROGRESS": "log"}
    subprocess.run([sys.executable, "-m", "curate", *args, "--out", str(tmp_path / "one"), "--workers", "1"], check=True, env=env,
                   capture_output=True)  # fmt: skip
    many = {**env, "CURATE_MIN_PARTITIONS": "8"}
    subprocess.run([sys.executable, "-m", "curate", *args, "--out", str(tmp_path / "many"), "--workers", "2", "--task-memory", "64MB"],
                   check=True, env=many, capture_output=True)  # fmt: skip
    plan = json.loads((tmp_path / "many" / "_SUCCESS").read_text())["dedup_lines"]["plan"]
    assert plan["task_memory"] == 64 << 20 and plan["fine_parts"] >= 8 and plan["decide_tasks"] >= 8, plan
    one = {k: v for k, v in digest_dir(tmp_path / "one").items() if not k.startswith("_work")}
    assert one == {k: v for k, v in digest_dir(tmp_path / "many").items() if not k.startswith("_work")}
    assert "part-00004.parquet" in one


@pytest.mark.slow
@pytest.mark.parametrize("phase,pattern,count", [
    ("hashes", "_work/hash/c-*.arrow.off.npy", 2),
    ("decide", "_work/cut/t-*.off.npy", 2),
    ("removal", "part-*.parquet", 2),
])  # fmt: skip
def test_killed_in_each_phase_reruns_to_identical_output(tmp_path, phase, pattern, count):
    _corpus(tmp_path / "in", 1500)
    env = {**os.environ, "CURATE_PROGRESS": "log", "CURATE_MIN_PARTITIONS": "4"}
    args = ["dedup", "lines", "--in", str(tmp_path / "in"), "--keep-rejected", "--workers", "1", "--task-memory", "16MB"]
    subprocess.run([sys.executable, "-m", "curate", *args, "--out", str(tmp_path / "ref")], check=True, env=env, capture_output=True)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "curate", *args, "--out", str(out)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    _kill_when(proc, out, pattern, count)
    assert not (out / "_SUCCESS").exists(), f"the kill in phase {phase} came after the end"
    subprocess.run([sys.executable, "-m", "curate", *args, "--out", str(out)], check=True, env=env, capture_output=True)
    assert digest_dir(out) == digest_dir(tmp_path / "ref")


# --------------------------------------------------------------------------- --approx


@pytest.mark.parametrize("p", [0.01, 0.001])
def test_bloom_filter_false_positive_rate_is_within_its_bound(p):
    rng = np.random.default_rng(7)
    n = 20_000
    bloom = BloomFilter(n, p)
    hi, lo = rng.integers(0, 2**64, n, dtype=np.uint64), rng.integers(0, 2**64, n, dtype=np.uint64)
    bloom.add(hi, lo)
    assert bloom.contains(hi, lo).all()  # no false negatives
    q = 400_000
    fp = bloom.contains(rng.integers(0, 2**64, q, dtype=np.uint64), rng.integers(0, 2**64, q, dtype=np.uint64)).mean()
    assert fp <= 1.25 * p, fp  # the rate the filter was sized for (a binomial of 400k draws: far within)
    assert bloom.m == int(np.ceil(-n * np.log(p) / np.log(2) ** 2)) and bloom.k == round(bloom.m / n * np.log(2))


def test_approx_cuts_planted_lines_in_input_order(run, tmp_path):
    rows, unique = planted(300)
    write_docs(tmp_path / "in", rows, shards=3)
    run("dedup", "lines", "--in", tmp_path / "in", "--out", tmp_path / "a", "--approx", "--fp-rate", "0.01", "--workers", 1)
    texts = _texts(tmp_path / "a")
    for b in [*BOILER, SHARED]:
        assert _count_lines(texts, b) == 1
    assert BOILER[0] in texts[min(i for i, t, _ in rows if BOILER[0] in t)]  # the first in input order keeps it
    kept = {ln for t in texts.values() for ln in t.split("\n")}
    lost = len(unique - kept)
    assert lost <= 0.01 * len(unique) * 3  # a unique line is cut only by a false positive (rate 0.01; 3x for the draw)


# --------------------------------------------------------------------------- dedup substrings


def _brute_force(docs: list[list[int]], length: int) -> list[np.ndarray]:
    """Lee et al.'s rule by counting every window: a position is struck when a window of ``length`` holding it occurs twice."""
    seen: dict[tuple[int, ...], int] = {}
    for d in docs:
        for i in range(len(d) - length + 1):
            w = tuple(d[i : i + length])
            seen[w] = seen.get(w, 0) + 1
    out = []
    for d in docs:
        gone = np.zeros(len(d), bool)
        for i in range(len(d) - length + 1):
            if seen[tuple(d[i : i + length])] >= 2:
                gone[i : i + length] = True
        out.append(gone)
    return out


def test_window_hashes_equal_for_equal_windows_only():
    from curate.dedup.substrings import window_hashes

    rng = np.random.default_rng(1)
    seq = rng.integers(0, 4, 3000).astype(np.int32)
    hi, lo = window_hashes(seq, 6)
    windows = [tuple(seq[i : i + 6]) for i in range(len(seq) - 5)]
    by_hash: dict[tuple[int, int], set] = {}
    for w, h, g in zip(windows, hi.tolist(), lo.tolist()):
        by_hash.setdefault((h, g), set()).add(w)
    assert all(len(v) == 1 for v in by_hash.values()) and len(by_hash) == len(set(windows))
    h2, l2 = window_hashes(seq[100:200], 6)
    assert h2[0] == hi[100] and l2[-1] == lo[194]  # position-free


@pytest.mark.parametrize("min_parts", ["1", "6"])
def test_substrings_equal_a_brute_force_reference_across_chunks(run, tmp_path, monkeypatch, min_parts):
    """Bytes over a 3-letter alphabet: many repeats of every length, inside documents, across documents, shards and chunks."""
    monkeypatch.setenv("CURATE_MIN_PARTITIONS", min_parts)  # 6: several chunks per shard, repeats cross chunk edges
    rng = random.Random(5)
    shared = "".join(rng.choice("abc") for _ in range(40))
    texts = []
    for i in range(30):
        body = "".join(rng.choice("abc") for _ in range(rng.randint(0, 80)))
        if i % 4 == 0:
            body = body[: len(body) // 2] + shared + body[len(body) // 2 :]
        texts.append(body)
    rows = [(f"d{i:03d}", t, "s") for i, t in enumerate(texts)]
    write_docs(tmp_path / "in", rows, shards=3)
    res = run("dedup", "substrings", "--in", tmp_path / "in", "--out", tmp_path / "o", "--sequence", "bytes", "--min-length", "12",
              "--min-remaining-chars", "0", "--workers", 1)  # fmt: skip
    got = _texts(tmp_path / "o")
    ref = _brute_force([list(t.encode()) for t in texts], 12)
    for (i, t, _), gone in zip(rows, ref):
        want = "".join(ch for ch, g in zip(t, gone) if not g)
        assert got[i] == want, i
    assert sum(g.sum() for g in ref) > 200  # the test strikes something
    rec = json.loads((tmp_path / "o" / "_SUCCESS").read_text())
    assert rec["counters"]["dedup_substrings"]["s"]["bytes_cut"] == sum(int(g.sum()) for g in ref)
    if min_parts == "6":
        assert len(rec["dedup_substrings"]["plan"]) and json.loads((tmp_path / "o" / "_work" / "plan.json").read_text())["chunks"][5]
    assert "bytes cut:" in res.stdout


def test_substrings_strike_a_shared_passage_of_50_gpt2_tokens_from_every_copy(run, tmp_path):
    passage = " ".join(words(77, 80))
    rows = [(f"d{i}", f"{sentence(500 + i, 30)} {passage if i < 3 else ''} {sentence(600 + i, 30)}", "cc/X") for i in range(6)]
    rows.append(("e", "", "cc/X"))
    rows.append(("short", passage, "cc/X"))  # nothing but the passage: left empty, rejected
    write_docs(tmp_path / "in", rows, shards=2)
    run("dedup", "substrings", "--in", tmp_path / "in", "--out", tmp_path / "o", "--keep-rejected")
    got = _texts(tmp_path / "o")
    assert "short" not in got and set(pd.read_parquet(tmp_path / "o" / "_rejected")["reason"]) == {"substrings:too_short"}
    for i in range(6):
        # unique text stays; a token at the passage's edge goes with it when it repeats too (d0 and d2's " R", every ".")
        assert sentence(500 + i, 30)[:-1] in got[f"d{i}"] and sentence(600 + i, 30)[1:] in got[f"d{i}"]
        assert " ".join(words(77, 80)[5:70]) not in got[f"d{i}"]
    assert got["e"] == ""


@pytest.mark.slow
def test_substrings_output_is_the_same_for_any_task_memory_and_worker_count_and_after_a_kill(tmp_path):
    _corpus(tmp_path / "in", 600)
    args = ["dedup", "substrings", "--in", str(tmp_path / "in"), "--keep-rejected", "--min-length", "20"]
    env = {**os.environ, "CURATE_PROGRESS": "log"}
    subprocess.run([sys.executable, "-m", "curate", *args, "--out", str(tmp_path / "one"), "--workers", "1"], check=True, env=env,
                   capture_output=True)  # fmt: skip
    many = {**env, "CURATE_MIN_PARTITIONS": "8"}
    subprocess.run([sys.executable, "-m", "curate", *args, "--out", str(tmp_path / "many"), "--workers", "2", "--task-memory", "64MB"],
                   check=True, env=many, capture_output=True)  # fmt: skip
    plan = json.loads((tmp_path / "many" / "_SUCCESS").read_text())["dedup_substrings"]["plan"]
    assert plan["task_memory"] == 64 << 20 and plan["fine_parts"] >= 8 and plan["merge_tasks"] >= 8, plan
    one = digest_dir(tmp_path / "one")
    assert one == digest_dir(tmp_path / "many") and "part-00004.parquet" in one
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "curate", *args, "--out", str(out), "--workers", "1"], env=many,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    _kill_when(proc, out, "_work/repeated/t-*.off.npy", 2)
    assert not (out / "_SUCCESS").exists()
    subprocess.run([sys.executable, "-m", "curate", *args, "--out", str(out), "--workers", "1"], check=True, env=many, capture_output=True)
    assert digest_dir(out) == one
    kept = pd.read_parquet(tmp_path / "one")
    assert sum(SHARED in t for t in kept["text"]) == 0  # every copy of the shared paragraph struck


@pytest.mark.parametrize("stage", [["lines"], ["substrings", "--min-length", "8"]])
def test_only_sources_compares_and_cuts_only_those_documents(run, tmp_path, stage):
    line = "a footer line shared by every document of both sources, long enough for any minimum"
    rows = [(f"p{i}", f"{sentence(i)}\n{line}", "pile/W") for i in range(3)] + [
        (f"c{i}", f"{sentence(50 + i)}\n{line}", "cc/X") for i in range(3)
    ]
    write_docs(tmp_path / "in", rows, shards=2)
    run("dedup", *stage, "--in", tmp_path / "in", "--out", tmp_path / "o", "--only-sources", "cc/*", "--min-remaining-chars", "0")
    t = _texts(tmp_path / "o")
    assert all(t[f"p{i}"] == rows[i][1] for i in range(3))  # not compared, not cut
    assert sum(line in t[f"c{i}"] for i in range(3)) == (1 if stage == ["lines"] else 0)  # lines: the first copy stays
    rec = json.loads((tmp_path / "o" / "_SUCCESS").read_text())
    assert rec["counters"]["passed_through"] == 3 and set(rec["counters"][f"dedup_{stage[0]}"]) == {"cc/X"}


def test_the_report_shows_what_was_cut_per_source(run, tmp_path):
    from curate.report.fmt import fmt_int

    rows, _ = planted(60)
    write_docs(tmp_path / "in", rows)
    run("dedup", "lines", "--in", tmp_path / "in", "--out", tmp_path / "run" / "lines")
    run("dedup", "substrings", "--in", tmp_path / "run" / "lines", "--out", tmp_path / "run" / "subs", "--min-length", "20")
    run("report", tmp_path / "run", "--out", tmp_path / "report.html")
    html = (tmp_path / "report.html").read_text()
    assert 'id="subdoc"' in html and 'id="subdoc-lines"' in html and 'id="subdoc-subs"' in html
    per = json.loads((tmp_path / "run" / "lines" / "_SUCCESS").read_text())["counters"]["dedup_lines"]
    for d in per.values():
        assert f">{fmt_int(d['bytes_cut'])}<" in html and f">{fmt_int(d['units_cut'])}<" in html


@pytest.mark.slow
def test_both_stages_on_ray_equal_local(tmp_path, run):
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'curate[ray]')")
    root = str(Path(__file__).resolve().parents[1])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env={"env_vars": {"PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}})  # fmt: skip
    try:
        _corpus(tmp_path / "in", 300)
        out = {}
        for ex in ("local", "ray"):
            o = tmp_path / ex
            common = ["--executor", ex, "--workers", "2", "--keep-rejected", "--task-memory", "64MB"]
            run("dedup", "lines", "--in", tmp_path / "in", "--out", o / "lines", *common)
            run("dedup", "substrings", "--in", o / "lines", "--out", o / "subs", "--min-length", "20", *common)
            out[ex] = o
        for stage in ("lines", "subs"):
            local = digest_dir(out["local"] / stage)
            assert local and local == digest_dir(out["ray"] / stage), stage
    finally:
        ray.shutdown()


def test_struck_matches_both_halves_of_a_fingerprint():
    from curate.dedup.substrings import struck

    u = np.uint64
    keys = (np.array([5, 7, 7, 9], u), np.array([1, 2, 3, 4], u))  # two fingerprints share the high half 7
    hashes = (np.array([7, 7, 7, 5, 9, 8], u), np.array([3, 2, 9, 2, 4, 1], u))
    gone = struck(hashes, keys, 2, 7)
    # windows 0 (7,3), 1 (7,2) and 4 (9,4) repeat; 2 (7,9) and 3 (5,2) match one half only; 5 (8,1) none
    assert gone.tolist() == [True, True, True, False, True, True, False]
