"""Fuzzy dedup side by side: curate vs datasketch (MinHash + MinHashLSH) vs rensa (RMinHash + RMinHashLSH).

Builds a synthetic corpus of ~3 KB documents with known near-duplicate families (word
substitutions at controlled rates, sentence insertions), computes the exact word-5-gram
Jaccard of every within-family pair, and scores each method's clusters against the
*ideal clustering*: connected components of the pairs with true Jaccard >= threshold
(docs/design.md). Each method runs in its own process, so its peak
memory (max RSS) and wall time are its own; all run on one core.

    .venv/bin/python benchmarks/bench_dedup.py                      # 20k docs, quality and speed table
    .venv/bin/python benchmarks/bench_dedup.py --docs 100000 --methods curate-exact,datasketch
    .venv/bin/python benchmarks/bench_dedup.py --docs 100000 --memory 100000,200000   # the docs' tables
    .venv/bin/python benchmarks/bench_dedup.py --methods '' --memory 100000,200000    # curate's peak memory only

The tables (side by side, where curate's time goes, peak memory as the corpus grows) go to
docs/benchmarks/dedup.md (``--no-write``: print only).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import _tables as tables
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]

THRESHOLD = 0.8
NUM_PERM = 128
NGRAM = 5


# --------------------------------------------------------------------------- corpus


def _vocab(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 10))) for _ in range(n)]


def shingles(text: str) -> set[str]:
    w = re.sub(r"[^\w\s]+", " ", text.lower()).split()
    if 0 < len(w) < NGRAM:
        return {" ".join(w)}
    return {" ".join(w[i : i + NGRAM]) for i in range(len(w) - NGRAM + 1)}


def build_corpus(n_docs: int, seed: int, out_dir: Path, shard_docs: int = 10_000) -> dict:
    """Write the corpus as Parquet shards; return ground truth (ids, family, true pairs >= threshold)."""
    rng = random.Random(seed)
    vocab = _vocab(50_000, seed)
    weights = np.array([1 / (i + 1) ** 0.8 for i in range(len(vocab))])
    weights /= weights.sum()
    nprng = np.random.default_rng(seed)
    rates = [0.005, 0.01, 0.02, 0.04, 0.08]
    docs: list[tuple[str, str, int]] = []  # id, text, family
    fam = 0
    while len(docs) < n_docs:
        n_words = int(rng.gauss(520, 120))
        base = list(nprng.choice(len(vocab), size=max(n_words, 30), p=weights))
        words = [vocab[i] for i in base]
        text = " ".join(" ".join(words[i : i + 14]) + "." for i in range(0, len(words), 14))
        docs.append((f"f{fam:06d}-0", text, fam))
        if rng.random() < 0.15:  # a family of near duplicates
            for k in range(rng.randint(1, 4)):
                w = list(words)
                rate = rng.choice(rates)
                for _ in range(max(1, int(rate * len(w)))):
                    w[rng.randrange(len(w))] = vocab[int(nprng.integers(len(vocab)))]
                if rng.random() < 0.3:
                    pos = rng.randrange(len(w))
                    w[pos:pos] = [vocab[int(nprng.integers(len(vocab)))] for _ in range(rng.randint(5, 40))]
                t = " ".join(" ".join(w[i : i + 14]) + "." for i in range(0, len(w), 14))
                docs.append((f"f{fam:06d}-{k + 1}", t, fam))
        fam += 1
    docs = docs[:n_docs]
    rng.shuffle(docs)
    out_dir.mkdir(parents=True, exist_ok=True)
    for s in range(0, len(docs), shard_docs):
        chunk = docs[s : s + shard_docs]
        pq.write_table(
            pa.table(
                {
                    "id": [d[0] for d in chunk],
                    "text": pa.array([d[1] for d in chunk], pa.large_string()),
                    "source": ["bench"] * len(chunk),
                    "url": pa.nulls(len(chunk), pa.string()),
                    "meta": pa.nulls(len(chunk), pa.string()),
                }
            ),
            out_dir / f"part-{s // shard_docs:05d}.parquet",
        )
    by_fam: dict[int, list[tuple[str, str]]] = {}
    for i, t, f in docs:
        by_fam.setdefault(f, []).append((i, t))
    pairs = []
    fam_pairs = 0
    for members in by_fam.values():
        if len(members) < 2:
            continue
        sets = [shingles(t) for _, t in members]
        for a in range(len(members)):
            for b in range(a + 1, len(members)):
                fam_pairs += 1
                j = len(sets[a] & sets[b]) / len(sets[a] | sets[b])
                if j >= THRESHOLD:
                    pairs.append((members[a][0], members[b][0]))
    return {"ids": [d[0] for d in docs], "pairs": pairs, "family_pairs": fam_pairs, "bytes": sum(len(d[1].encode()) for d in docs)}


# --------------------------------------------------------------------------- scoring


def components(ids: list[str], pairs: list[tuple[str, str]]) -> dict[str, str]:
    parent = {i: i for i in ids}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {i: find(i) for i in ids}


def pair_scores(pred: dict[str, str], ideal: dict[str, str]) -> tuple[float, float, float]:
    """Pair precision/recall/F1 of 'same predicted cluster' vs 'same ideal cluster'."""

    def c2(n: int) -> int:
        return n * (n - 1) // 2

    ids = list(ideal)
    joint = Counter((pred[i], ideal[i]) for i in ids)
    tp = sum(c2(n) for n in joint.values())
    pp = sum(c2(n) for n in Counter(pred[i] for i in ids).values())
    ip = sum(c2(n) for n in Counter(ideal[i] for i in ids).values())
    p = tp / pp if pp else 1.0
    r = tp / ip if ip else 1.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


# --------------------------------------------------------------------------- methods (each runs in a child process)


def _texts(data: Path) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    for f in sorted(data.glob("part-*.parquet")):
        t = pq.read_table(f, columns=["id", "text"])
        ids += t.column("id").to_pylist()
        texts += t.column("text").to_pylist()
    return ids, texts


def run_datasketch(data: Path) -> list[tuple[str, str]]:
    """The classic pipeline: shingle in Python, MinHash.bulk (shared permutations), MinHashLSH insert + query."""
    from datasketch import MinHash, MinHashLSH

    ids, texts = _texts(data)
    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM)
    sigs = MinHash.bulk(([s.encode() for s in shingles(t)] for t in texts), num_perm=NUM_PERM, seed=1)
    with lsh.insertion_session() as session:
        for i, m in zip(ids, sigs):
            session.insert(i, m)
    pairs = []
    for i, m in zip(ids, sigs):
        for j in lsh.query(m):
            if j != i:
                pairs.append((i, j))
    return pairs


def run_rensa(data: Path) -> list[tuple[str, str]]:
    """rensa's RMinHash + RMinHashLSH with its own band choice (16 bands x 8 rows)."""
    from rensa import RMinHash, RMinHashLSH

    ids, texts = _texts(data)
    lsh = RMinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM, num_bands=16)
    sigs = []
    for k, t in enumerate(texts):
        m = RMinHash(num_perm=NUM_PERM, seed=1)
        m.update(list(shingles(t)))
        lsh.insert(k, m)
        sigs.append(m)
    pairs = []
    for k, m in enumerate(sigs):
        for j in lsh.query(m):
            if j != k and sigs[j].jaccard(m) >= THRESHOLD:
                pairs.append((ids[k], ids[j]))
    return pairs


def run_curate(data: Path, verify: str, work: Path, shingling: str = "compiled") -> tuple[list[tuple[str, str]], dict]:
    """`curate dedup fuzzy` end to end (read Parquet, all phases, write output), one worker."""
    out = work / f"curate-{verify}-{shingling}"
    cmd = [
        sys.executable,
        "-m",
        "curate",
        "-q",
        "dedup",
        "fuzzy",
        "--in",
        str(data),
        "--out",
        str(out),
        "--workers",
        "1",
        "--verify",
        verify,
        "--overwrite",
    ]
    subprocess.run(cmd, check=True, env={**os.environ, "CURATE_PROGRESS": "log", "CURATE_SHINGLING": shingling})
    cl = pq.read_table(out / "_clusters", columns=["id", "cluster"])
    done = json.loads((out / "_SUCCESS").read_text())
    info = {"phase_seconds": done["dedup"]["phase_seconds"], "wall_seconds": done["wall_seconds"], "shingling": shingling}
    return list(zip(cl.column("id").to_pylist(), cl.column("cluster").to_pylist())), info


def child(method: str, data: str, work: str, result: str) -> None:
    t0 = time.perf_counter()
    info: dict = {}
    if method == "datasketch":
        pairs = run_datasketch(Path(data))
    elif method == "rensa":
        pairs = run_rensa(Path(data))
    else:  # curate-VERIFY, or curate-VERIFY-numpy without the compiled kernel
        verify, _, shingling = method.removeprefix("curate-").partition("-")
        pairs, info = run_curate(Path(data), verify, Path(work), shingling or "compiled")
    seconds = time.perf_counter() - t0
    # VmHWM, not RUSAGE_SELF: Linux carries the parent's high-water mark into ru_maxrss across
    # fork + exec, so a child of this (large) benchmark process would report the parent's peak.
    own_kb = int(next(line.split()[1] for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM")))
    rss = max(own_kb, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    Path(result).write_text(json.dumps({"seconds": seconds, "peak_mb": rss / 1024, "pairs": pairs, "curate": info}))


def measure(method: str, data: Path, work: Path) -> dict:
    result = work / f"{method}.json"
    subprocess.run([sys.executable, __file__, "--child", method, str(data), str(work), str(result)], check=True)
    return json.loads(result.read_text())


# --------------------------------------------------------------------------- main


LABELS = {
    "curate-exact": "curate `--verify exact`",
    "curate-signature": "curate `--verify signature`",
    "curate-none": "curate (no verify)",
    "curate-exact-numpy": "curate `--verify exact`, numpy shingling (no compiled kernel)",
    "curate-signature-numpy": "curate `--verify signature`, numpy shingling",
    "curate-none-numpy": "curate (no verify), numpy shingling",
}


def memory_table(sizes: list[int], seed: int, work: Path, reuse: dict[int, tuple[int, dict]]) -> tuple[list, str]:
    """curate --verify exact at each corpus size: rows (docs, bytes, peak MB, seconds) and the slope line."""
    rows = []
    for n in sizes:
        if n in reuse:  # the side-by-side run already measured this corpus (same size, same seed)
            nbytes, r = reuse[n]
        else:
            data = work / f"mem-{n}"
            t = time.perf_counter()
            info = build_corpus(n, seed, data)
            print(f"built {n:,} docs ({info['bytes'] / 1e6:.0f} MB) in {time.perf_counter() - t:.0f} s", flush=True)
            nbytes, r = info["bytes"], measure("curate-exact", data, work)
        rows.append((n, nbytes, r["peak_mb"], r["seconds"]))
    slope = ""
    if len(rows) >= 2:
        (n1, _, m1, _), (n2, _, m2, _) = rows[0], rows[-1]
        per_doc_kb = (m2 - m1) / (n2 - n1) * 1024
        slope = f"slope: {per_doc_kb:.2f} KB per doc; extrapolated peak at 1M docs: {m1 + (1_000_000 - n1) * (m2 - m1) / (n2 - n1):.0f} MB"
    return rows, slope


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--methods",
        default="curate-exact,curate-signature,curate-none,curate-exact-numpy,rensa,datasketch",
        help="curate-VERIFY (VERIFY: exact, signature, none; add -numpy for the numpy shingling), rensa, datasketch; '' for none",
    )
    ap.add_argument("--memory", default="", help="comma-separated corpus sizes: curate's peak memory at each (no peers)")
    ap.add_argument("--work", default=None, help="work directory (default: a temporary one)")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    tables.add_write_option(ap)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    work = Path(args.work or tempfile.mkdtemp(prefix="curate-bench-dedup-"))
    methods = [m for m in args.methods.split(",") if m]
    sections: list[str] = []
    notes: list[str] = []
    reuse: dict[int, tuple[int, dict]] = {}
    if methods:
        t = time.perf_counter()
        info = build_corpus(args.docs, args.seed, work / "data")
        ideal = components(info["ids"], info["pairs"])
        n_ideal_pairs = sum(c * (c - 1) // 2 for c in Counter(ideal.values()).values())
        corpus_line = (
            f"{args.docs:,} docs, {info['bytes'] / 1e6:.1f} MB ({info['bytes'] / args.docs / 1e3:.1f} KB per document), "
            f"{info['family_pairs']:,} within-family pairs, {len(info['pairs']):,} with J >= {THRESHOLD} "
            f"({n_ideal_pairs:,} same-cluster pairs in the ideal clustering)"
        )
        print(f"corpus: {corpus_line}; built in {time.perf_counter() - t:.0f} s", flush=True)
        results = {}
        raw = {}
        for method in methods:
            r = measure(method, work / "data", work)
            pred = components(info["ids"], [tuple(p) for p in r["pairs"]])
            p, rec, f1 = pair_scores(pred, ideal)
            results[method] = (r["seconds"], r["peak_mb"], p, rec, f1)
            raw[method] = r
            print(f"  {method}: {r['seconds']:.1f} s", flush=True)
        if "curate-exact" in raw:
            reuse[args.docs] = (info["bytes"], raw["curate-exact"])
        base = results.get("datasketch")
        print(f"\n{'method':<18} {'docs/s':>8} {'x datasketch':>13} {'peak MB':>8} {'precision':>10} {'recall':>7} {'F1':>6}")
        rows = []
        for m, (s, mb, p, r, f1) in results.items():
            ratio = f"{base[0] / s:.1f}x" if base else "-"
            print(f"{m:<18} {args.docs / s:>8.0f} {ratio:>13} {mb:>8.0f} {p:>10.3f} {r:>7.3f} {f1:>6.3f}")
            rows.append([LABELS.get(m, m), f"{args.docs / s:,.0f}", ratio, f"{mb:,.0f} MB", f"{p:.3f}", f"{r:.3f}", f"{f1:.3f}"])
        print("\n(one core each; curate times include reading and writing Parquet and every phase; peers hold everything in memory)")
        sections += [
            f"## Side by side: {args.docs:,} documents",
            "",
            f"Corpus: {corpus_line}.",
            "",
            tables.md_table(["method", "docs/s", "vs datasketch", "peak RSS", "precision", "recall", "F1"], rows),
        ]
        phase_rows = []
        phases = ("signatures", "lsh", "verify", "clusters")
        for m, r in raw.items():
            c = r.get("curate") or {}
            if not c:
                continue
            ps = c["phase_seconds"]
            removal = c["wall_seconds"] - sum(ps.values())
            rest = r["seconds"] - c["wall_seconds"]
            phase_rows.append(
                [
                    LABELS.get(m, m),
                    c["shingling"],
                    *(f"{ps[k]:.2f}" if k in ps else "-" for k in phases),
                    f"{removal:.2f}",
                    f"{rest:.2f}",
                    f"{r['seconds']:.2f}",
                ]  # fmt: skip
            )
        if phase_rows:
            print("\nwhere curate's time goes (seconds):")
            head = ["method", "shingling", "signatures", "LSH bands + pairs", "verify", "components + clusters", "removal pass",
                    "start-up and the rest", "total"]  # fmt: skip
            print(tables.text_table(head, phase_rows, indent="  "))
            sections += [
                "",
                "### Where curate's time goes (seconds)",
                "",
                "From each run's `phase_seconds` in `OUT/_SUCCESS`; the removal pass (read, filter, write zstd Parquet) is the "
                "stage's wall time less its phases, start-up and the rest is the process's wall time less the stage's (interpreter "
                "and imports, reading the clusters back).",
                "",
                tables.md_table(head, phase_rows),
            ]
        notes.append(
            "Side by side: a synthetic corpus of documents with known near-duplicate families (word substitutions at "
            "controlled rates, inserted sentences), scored against the ideal clustering: connected components of the pairs "
            f"whose exact word-{NGRAM}-gram Jaccard is >= {THRESHOLD}. Precision and recall count pairs of documents that share "
            "a cluster. Each method runs once, in its own process, on one core: curate's fuzzy stage end to end (a new "
            "process: start-up, Parquet in, every phase, the removal pass, Parquet out; `--workers 1`), datasketch "
            f"(`MinHash.bulk` + `MinHashLSH`, {NUM_PERM} permutations, threshold {THRESHOLD}) and rensa (`RMinHash` + "
            "`RMinHashLSH`, 16 bands, candidates checked on the signature), which hold everything in memory and only hash and "
            "query. Peak RSS is the process's high-water mark (VmHWM, and its children's). "
            f"{tables.versions('datasketch', 'rensa')}."
        )
    if args.memory:
        mrows, slope = memory_table([int(x) for x in args.memory.split(",")], args.seed, work, reuse)
        print(f"\n{'docs':>10} {'MB text':>9} {'peak MB':>9} {'seconds':>8} {'docs/s':>8}")
        for n, b, mb, s in mrows:
            print(f"{n:>10,} {b / 1e6:>9.0f} {mb:>9.0f} {s:>8.1f} {n / s:>8.0f}")
        if slope:
            print(f"\n{slope}")
        if sections:
            sections.append("")
        sections += [
            "## curate's peak memory as the corpus grows (`--verify exact`)",
            "",
            tables.md_table(
                ["docs", "MB of text", "peak RSS MB", "seconds", "docs/s"],
                [[f"{n:,}", f"{b / 1e6:.0f}", f"{mb:.0f}", f"{s:.1f}", f"{n / s:,.0f}"] for n, b, mb, s in mrows],
            ),
        ]
        if slope:
            sections += ["", slope[0].upper() + slope[1:] + " (a straight line through the first and last size, not measured at 1M)."]
        notes.append(
            "Memory: the same corpus generator at each size, curate's fuzzy stage with `--verify exact` on one worker, "
            "run once per size; peak RSS as above."
        )
    if args.write and sections:
        tables.write_table("dedup", "Fuzzy dedup: curate vs datasketch and rensa", "\n".join(sections), "\n\n".join(notes))


if __name__ == "__main__":
    main()
