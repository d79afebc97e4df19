"""Decontamination speed and index memory as the evaluation index grows, against a plain Python set.

Both implementations apply the same rule (MT-NLG's 13-gram decontamination) to the same
synthetic corpus, in one run:

* curate: 64-bit n-gram keys in sorted numpy arrays (bitmap prefilter, memory-mapped from
  disk), words hashed with numpy; the counting pass scans every document, the cutting pass
  only the documents that matched;
* plain: a Python ``set`` of space-joined lowercase 13-grams and MT-NLG's loop over word
  positions (``curate.decontam.reference``): the same two passes.

Each size builds an evaluation set with about N distinct 13-grams (texts of 100 words
from a 20,000-word vocabulary) and a training corpus of ``--mb`` MB sharing that vocabulary,
with evaluation passages planted in about 2% of the documents. The outputs (pieces kept per
document) are compared, then both are timed. ``--e2e`` also times the whole stage
(``run_decontam``: index, count and cut passes with Parquet I/O, one worker).

    .venv/bin/python benchmarks/bench_decontam.py                      # 1e4, 1e6, 1e7 n-grams, 20 MB
    .venv/bin/python benchmarks/bench_decontam.py --sizes 1e4 --mb 1   # a quick check

The table goes to docs/benchmarks/decontam.md (``--no-write``: print only).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import textwrap
import time
import tracemalloc
from pathlib import Path

import _tables as tables
import numpy as np

from curate.decontam import reference
from curate.decontam.cut import cut_spans, find_matches, in_sorted
from curate.decontam.index import Index, build_index

ROOT = Path(__file__).resolve().parents[1]

N, MIN_N, CUT, MIN_PIECE, MAX_PIECES = 13, 8, 200, 200, 10
EVAL_WORDS = 100
BATCH = 1024


def vocabulary(seed: int = 1, size: int = 20_000) -> list[str]:
    rng = random.Random(seed)
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))))
    return sorted(words)


def eval_texts(n_grams: int, vocab: list[str], seed: int = 2) -> list[str]:
    rng = random.Random(seed)
    count = max(1, round(n_grams / (EVAL_WORDS - N + 1)))
    return [" ".join(rng.choices(vocab, k=EVAL_WORDS)).capitalize() + "." for _ in range(count)]


def corpus(mb: float, vocab: list[str], evals: list[str], seed: int = 3) -> list[str]:
    """Documents of sentences (8-20 words) of about 5 kB; 2% hold a planted evaluation passage."""
    rng = random.Random(seed)
    docs, total = [], 0
    weights = [1.0 / (i + 1) for i in range(len(vocab))]  # Zipf-like: common words repeat, as in text
    while total < mb * 1e6:
        sentences = []
        size = 0
        while size < 5000:
            s = " ".join(rng.choices(vocab, weights, k=rng.randint(8, 20))).capitalize() + rng.choice([".", ".", ".", "?", "!"])
            sentences.append(s)
            size += len(s) + 1
        if rng.random() < 0.02:
            sentences.insert(len(sentences) // 2, rng.choice(evals))
        text = " ".join(sentences)
        docs.append(text)
        total += len(text)
    return docs


def run_curate(docs: list[str], index: Index) -> list[list[tuple[int, int]] | None]:
    """Counting pass over every document, then the cutting pass over the ones that matched."""
    pairs_doc, pairs_key = [], []
    for a in range(0, len(docs), BATCH):
        m = find_matches(docs[a : a + BATCH], index)
        pairs_doc.append(m.doc + a)
        pairs_key.append(m.key)
    doc = np.concatenate(pairs_doc)
    key = np.concatenate(pairs_key)
    uk = np.unique(key)
    per_doc = np.unique(np.stack([doc, key.view(np.int64)], axis=1), axis=0) if doc.size else np.zeros((0, 2), np.int64)
    freq = np.bincount(np.searchsorted(uk, per_doc[:, 1].view(np.uint64)), minlength=uk.size)
    ignored = uk[freq > 10]
    todo = np.unique(per_doc[~in_sorted(ignored, per_doc[:, 1].view(np.uint64)), 0])
    out: list[list[tuple[int, int]] | None] = [[(0, len(d))] for d in docs]
    texts = [docs[i] for i in todo.tolist()]
    m = find_matches(texts, index)
    m = m.select(~in_sorted(ignored, m.key))
    bounds = np.searchsorted(m.doc, np.arange(len(texts) + 1))
    for j, i in enumerate(todo.tolist()):
        a, b = bounds[j], bounds[j + 1]
        spans = list(dict.fromkeys(zip(m.start[a:b].tolist(), m.end[a:b].tolist())))
        pieces = cut_spans(texts[j], spans, CUT)[0]
        kept = [p for p in pieces if p[1] - p[0] >= MIN_PIECE]
        out[i] = None if len(kept) > MAX_PIECES else kept
    return out


def run_plain(docs: list[str], grams: set[str]) -> list[list[tuple[int, int]] | None]:
    lengths = reference.lengths_of(grams)
    found = [reference.doc_ngrams(d, grams, lengths) for d in docs]
    freq: dict[str, int] = {}
    for f in found:
        for g in f:
            freq[g] = freq.get(g, 0) + 1
    active = {g for g, c in freq.items() if c <= 10}
    out: list[list[tuple[int, int]] | None] = []
    for d, f in zip(docs, found):
        if not f & active:
            out.append([(0, len(d))])
            continue
        kept, _short, dropped = reference.decontaminate(d, active, CUT, MIN_PIECE, MAX_PIECES, lengths=lengths)
        out.append(None if dropped else kept)
    return out


def set_bytes(grams: set[str]) -> int:
    return sys.getsizeof(grams) + sum(sys.getsizeof(g) for g in grams)


def build_peak_bytes(evals: list[str]) -> int:
    """Peak memory allocated while building the index (Python objects and numpy arrays, tracemalloc), above the
    evaluation text already in memory. A second, untimed build: tracing slows it down."""
    tracemalloc.start()
    try:
        built = build_index([("eval", evals)], N, MIN_N)
        peak = tracemalloc.get_traced_memory()[1]
        del built
    finally:
        tracemalloc.stop()
    return peak


def e2e(docs: list[str], evals: list[str], tmp: Path) -> float:
    """Seconds for the whole stage (index, count, cut) over Parquet, one worker."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from curate.decontam.run import Decontam
    from curate.executor import LocalExecutor
    from curate.runtime import run

    src = tmp / "in"
    src.mkdir()
    per = 2000
    for k in range(0, len(docs), per):
        part = docs[k : k + per]
        pq.write_table(
            pa.table(
                {"id": [f"d{k + i}" for i in range(len(part))], "text": pa.array(part, pa.large_string()), "source": ["bench"] * len(part)}
            ),
            src / f"part-{k // per:05d}.parquet",
        )
    (tmp / "ev.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in evals))
    t0 = time.perf_counter()
    run(Decontam(evals=[str(tmp / "ev.jsonl")]), inputs=[str(src)], out=tmp / "out", executor=LocalExecutor(1))
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1e4,1e6,1e7", help="Evaluation n-gram counts (comma-separated).")
    ap.add_argument("--mb", type=float, default=20.0, help="MB of training text.")
    ap.add_argument("--e2e", action="store_true", help="Also time the whole stage (run_decontam, Parquet I/O, 1 worker).")
    ap.add_argument("--skip-plain-over", type=float, default=float("inf"), help="Skip the plain set above this many n-grams.")
    tables.add_write_option(ap)
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    vocab = vocabulary()
    rows = []
    for size in sizes:
        evals = eval_texts(size, vocab)
        docs = corpus(args.mb, vocab, evals)
        mb = sum(len(d) for d in docs) / 1e6
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            built = build_index([("eval", evals)], N, MIN_N)
            built.save(Path(tmp) / "index")
            t_build = time.perf_counter() - t0
            index = Index.load(Path(tmp) / "index")  # memory maps, as the workers use it
            n_keys = int(index.long.keys.size + index.short.keys.size)
            t0 = time.perf_counter()
            ours = run_curate(docs, index)
            t_ours = time.perf_counter() - t0
            row = {"size": size, "keys": n_keys, "mb": mb, "c_build": t_build, "c_bytes": index.nbytes, "c_scan": t_ours}
            del index, built
            row["c_peak"] = build_peak_bytes(evals)
            if size <= args.skip_plain_over:
                t0 = time.perf_counter()
                grams = reference.build(evals, N, MIN_N)
                row["p_build"] = time.perf_counter() - t0
                row["p_bytes"] = set_bytes(grams)
                t0 = time.perf_counter()
                plain = run_plain(docs, grams)
                row["p_scan"] = time.perf_counter() - t0
                row["same"] = plain == ours
                del grams
            if args.e2e:
                row["e2e"] = e2e(docs, evals, Path(tmp))
        rows.append(row)
        cut = sum(1 for o, d in zip(ours, docs) if o != [(0, len(d))])
        print(f"size {size:.0e}: {n_keys:,} keys, {len(docs):,} docs ({mb:.1f} MB), {cut} cut or dropped", file=sys.stderr)

    head = ["eval n-grams", "impl", "build s", "build peak MB", "index MB", "B/n-gram", "MB/s", "speed ratio", "same output"]
    out = []
    for r in rows:
        c_rate = r["mb"] / r["c_scan"]
        out.append([f"{r['size']:.0e}", "curate (numpy)", f"{r['c_build']:.2f}", f"{r['c_peak'] / 1e6:,.1f}",
                    f"{r['c_bytes'] / 1e6:,.1f}", f"{r['c_bytes'] / r['keys']:.1f}", f"{c_rate:.2f}", "", ""])  # fmt: skip
        if "p_scan" in r:
            p_rate = r["mb"] / r["p_scan"]
            out.append(["", "plain set", f"{r['p_build']:.2f}", "", f"{r['p_bytes'] / 1e6:,.1f}", f"{r['p_bytes'] / r['keys']:.1f}",
                        f"{p_rate:.2f}", f"{c_rate / p_rate:.1f}x", "yes" if r["same"] else "NO"])  # fmt: skip
        if "e2e" in r:
            out.append(["", "curate stage e2e", "", "", "", "", f"{r['mb'] / r['e2e']:.2f}", "", ""])
    legend = (
        "MB/s: training text scanned per second, one core (counting pass over all documents + cutting pass); "
        "speed ratio: curate / plain set. Index MB: curate's arrays (shared by all workers through the page cache), "
        "the plain set's Python objects (a copy per worker process). Build peak MB: memory allocated while curate builds "
        "its index (tracemalloc, a second untimed build), above the evaluation text."
    )
    print()
    print(tables.text_table(head, out, left=2))
    print("\n" + textwrap.fill(legend, 110))
    if args.write:
        mbs = sorted({f"{r['mb']:.1f}" for r in rows})
        note = (
            "Both implementations apply MT-NLG's 13-gram rule (cut 200 characters around a match to the sentence end, "
            "drop pieces under 200 characters and documents left in more than 10 pieces, ignore n-grams in more than 10 "
            "documents) to the same synthetic corpus in one run, and their outputs (pieces kept per document) are compared. "
            "curate: 64-bit n-gram keys in sorted numpy arrays with a bitmap prefilter, memory-mapped from disk; plain: a "
            "Python `set` of space-joined lowercase 13-grams and MT-NLG's loop over word positions "
            "(`curate.decontam.reference`). Each size builds an evaluation set of about that many distinct 13-grams (texts "
            f"of {EVAL_WORDS} words from a 20,000-word vocabulary) and {', '.join(mbs)} MB of training text (documents of "
            "about 5 kB, Zipf-like word frequencies, an evaluation passage planted in about 2% of them). Every figure is "
            "one run, on one core, in this process"
            + (
                "; the e2e row is the whole stage (`run_decontam`: index, count and cut passes with Parquet I/O, one worker)"
                if args.e2e
                else ""
            )
            + f". {legend} numpy {np.__version__}."
        )
        tables.write_table("decontam", "Decontamination: curate's index vs a Python set of n-grams", tables.md_table(head, out), note)


if __name__ == "__main__":
    main()
