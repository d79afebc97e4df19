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

    .venv/bin/python benchmarks/decontam.py                      # 1e4, 1e6, 1e7 n-grams, 20 MB
    .venv/bin/python benchmarks/decontam.py --sizes 1e4 --mb 1   # a quick check
"""

from __future__ import annotations

import sys

# benchmarks/ must not shadow standard modules (benchmarks/tokenize.py vs the stdlib tokenize).
sys.path[:] = [p for p in sys.path if not p.rstrip("/").endswith("benchmarks")]
sys.modules.pop("tokenize", None)

import argparse
import random
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate.decontam import reference  # noqa: E402
from curate.decontam.cut import cut_spans, find_matches, in_sorted  # noqa: E402
from curate.decontam.index import Index, build_index  # noqa: E402

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

    print()
    head = f"{'eval n-grams':>12} {'impl':<16} {'build s':>8} {'index MB':>9} {'B/n-gram':>9} {'MB/s':>8} {'speed ratio':>11} {'same output':>11}"
    print(head)
    print("-" * len(head))
    for r in rows:
        c_rate = r["mb"] / r["c_scan"]
        print(
            f"{r['size']:>12.0e} {'curate (numpy)':<16} {r['c_build']:>8.2f} {r['c_bytes'] / 1e6:>9.1f} {r['c_bytes'] / r['keys']:>9.1f} "
            f"{c_rate:>8.2f} {'':>11} {'':>11}"
        )
        if "p_scan" in r:
            p_rate = r["mb"] / r["p_scan"]
            print(
                f"{'':>12} {'plain set':<16} {r['p_build']:>8.2f} {r['p_bytes'] / 1e6:>9.1f} {r['p_bytes'] / r['keys']:>9.1f} "
                f"{p_rate:>8.2f} {c_rate / p_rate:>10.1f}x {'yes' if r['same'] else 'NO':>11}"
            )
        if "e2e" in r:
            print(f"{'':>12} {'curate stage e2e':<16} {'':>8} {'':>9} {'':>9} {r['mb'] / r['e2e']:>8.2f} {'':>11} {'':>11}")
    print("\nMB/s: training text scanned per second, one core (counting pass over all documents + cutting pass);")
    print("speed ratio: curate / plain set. Index MB: curate's arrays (shared by all workers through the page cache),")
    print("the plain set's Python objects (a copy per worker process).")


if __name__ == "__main__":
    main()
