"""Fuzzy dedup at the recipe's scale: peak memory flat as the corpus grows, the same answer on every executor.

For each size, a synthetic corpus of short documents (64 words of a 20,000-word vocabulary,
~470 bytes) with planted duplicates, built from each document's number alone (a counter hash),
so that any document's text and family are known without storing them:

- 80% are unique documents;
- 10% are near-duplicates of an original elsewhere in the corpus (one word replaced: word
  5-gram Jaccard 0.85 to 0.97 with it; two of them 0.71 to 0.94 with each other);
- 10% - 1/16 are exact copies of an original elsewhere;
- 1/16 of the corpus is one boilerplate page copied (a million copies at 16M documents): the
  giant component.

The ideal clustering (connected components of the pairs with Jaccard >= 0.8) is the families
by construction: random documents share no 5-gram. Each run is ``curate dedup fuzzy --verify
exact --workers W --task-memory M`` in a fresh process tree; the largest process's peak RSS
is the largest anonymous resident memory of the run's process and its workers (``RssAnon``,
sampled every 50 ms: the data a process holds, not the pages of memory-mapped work files, which
are page cache), ``_work/`` its scratch disk. With ``--landed COMMIT``, the dedup that held the whole corpus in one process
(that commit, checked out and built in a temporary worktree) runs on the first size too, and the
output shards of both (``--no-dup-count``: that commit wrote no ``dup_count``) are compared by
sha256. With ``--ray-size N``, the N-document run is repeated on a local Ray cluster of
``--ray-nodes`` nodes on this machine and its output compared by sha256.

    .venv/bin/python benchmarks/bench_dedup_scale.py --sizes 1000000,4000000,16000000 --task-memory 512MB \\
        --workers 2 --ray-size 4000000 --landed d7a2fab

The table and the MT-NLG projection go to docs/benchmarks/dedup_scale.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import _tables as tables
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "benchmarks" / "_work" / "dedup_scale"
WORDS, VOCAB, SHARD_DOCS = 64, 20_000, 200_000
MASK = np.uint64(0xFFFFFFFFFFFFFFFF)

# MT-NLG's CommonCrawl part: the two snapshots' documents entering dedup (the chain benchmark's projection,
# docs/benchmarks/chain_scale.md) and a real document's text (bytes) after extraction and filtering.
MTNLG_DOCS = 2_750_000_000
MTNLG_DOC_BYTES = 3_000


def mix(x: np.ndarray) -> np.ndarray:
    """splitmix64, vectorised (uint64)."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def vocabulary() -> list[str]:
    rng = np.random.default_rng(7)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    out, seen = [], set()
    while len(out) < VOCAB:
        w = "".join(rng.choice(letters, rng.integers(3, 10)))
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


def kinds(n: int, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(kind, original) of documents ``idx`` of an n-document corpus: 0 unique, 1 near-duplicate, 2 copy, 3 boilerplate."""
    giant = n // 16
    base_n = n - giant
    kind = np.where(idx >= base_n, 3, np.where(idx % 10 == 1, 1, np.where(idx % 10 == 2, 2, 0)))
    originals = max(1, base_n // 10)
    orig = (mix(idx.astype(np.uint64) * np.uint64(3) + np.uint64(n)) % np.uint64(originals)).astype(np.int64) * 10  # a unique doc
    return kind, np.where(kind == 1, orig, np.where(kind == 2, orig, idx))


def word_ids(idx: np.ndarray, n: int) -> np.ndarray:
    """(len(idx), 64) word numbers of documents ``idx``."""
    kind, orig = kinds(n, idx)
    src = np.where(kind == 3, np.int64(-1), orig)  # the boilerplate page is "document -1"
    pos = np.arange(WORDS, dtype=np.uint64)
    w = (mix(src.astype(np.uint64)[:, None] * np.uint64(WORDS) + pos[None, :]) % np.uint64(VOCAB)).astype(np.int64)
    near = np.flatnonzero(kind == 1)
    if len(near):
        at = (mix(idx[near].astype(np.uint64) ^ np.uint64(0xABCDEF)) % np.uint64(WORDS)).astype(np.int64)
        new = (mix(idx[near].astype(np.uint64) * np.uint64(31) + np.uint64(7)) % np.uint64(VOCAB)).astype(np.int64)
        same = new == w[near, at]
        new[same] = (new[same] + 1) % VOCAB
        w[near, at] = new
    return w


def family(idx: np.ndarray, n: int) -> np.ndarray:
    """The true cluster of each document: its original's number, or -1 for the boilerplate copies."""
    kind, orig = kinds(n, idx)
    return np.where(kind == 3, -1, orig)


def write_shard(args: tuple[int, int, str]) -> int:
    shard, n, out = args
    vocab = np.array(vocabulary(), dtype=object)
    lo, hi = shard * SHARD_DOCS, min(n, (shard + 1) * SHARD_DOCS)
    idx = np.arange(lo, hi, dtype=np.int64)
    w = word_ids(idx, n)
    texts = [" ".join(row) for row in vocab[w]]
    kind, _ = kinds(n, idx)
    source = np.where(idx % 3 == 0, "pile/Web", "cc/CC-MAIN-2020-50")
    t = pa.table({"id": [f"d{i:010d}" for i in idx.tolist()], "text": pa.array(texts, pa.large_string()), "source": source.tolist(),
                  "url": pa.nulls(len(idx), pa.string()), "meta": pa.nulls(len(idx), pa.string())})  # fmt: skip
    path = Path(out) / f"part-{shard:05d}.parquet"
    pq.write_table(t, path.with_suffix(".tmp"), compression="zstd")
    path.with_suffix(".tmp").replace(path)
    return len(idx)


def build(n: int, workers: int) -> Path:
    out = WORK / f"corpus-{n}"
    shards = math.ceil(n / SHARD_DOCS)
    marker = out / "_BUILT"
    if marker.exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    todo = [(s, n, str(out)) for s in range(shards) if not (out / f"part-{s:05d}.parquet").exists()]
    with ProcessPoolExecutor(workers) as pool:
        list(pool.map(write_shard, todo))
    marker.write_text(json.dumps({"docs": n, "shards": shards}))
    return out


# --------------------------------------------------------------------------- running and scoring


_PROBE = r"""
import os, resource, subprocess, sys, threading, time

def tree(root):
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out

def anon(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0

proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
peak = [0]
def sample():
    while proc.poll() is None:
        for p in tree(proc.pid):
            peak[0] = max(peak[0], anon(p))
        time.sleep(0.05)
t = threading.Thread(target=sample, daemon=True)
t.start()
err = proc.stderr.read()
proc.wait()
t.join()
sys.stderr.write(err)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, peak[0])
sys.exit(proc.returncode)
"""


def run_curate(
    args: list[str], env: dict[str, str] | None = None, python: str = sys.executable, cwd: Path = WORK
) -> tuple[float, int, str]:
    """Run curate in a fresh process tree from ``cwd``; (wall seconds, the largest process's peak memory in bytes, stderr).

    The peak is the largest anonymous resident memory (``RssAnon``, sampled every 50 ms over the
    process and its workers): what a process holds, not the file pages it maps (the page cache
    of memory-mapped work files, which the kernel reclaims). ``python -m curate`` imports curate
    from its working directory first: the landed checkout runs from its own.
    """
    t0 = time.monotonic()
    r = subprocess.run([python, "-c", _PROBE, python, "-m", "curate", *args], capture_output=True, text=True, env=env, cwd=cwd)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(f"curate {' '.join(args)} failed:\n{r.stderr[-3000:]}")
    _hwm, anon = (int(x) for x in r.stdout.strip().splitlines()[-1].split())
    return wall, anon, r.stderr


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def shard_digests(out: Path) -> dict[str, str]:
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(out.glob("part-*.parquet"))}


def combined(digests: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(digests, sort_keys=True).encode()).hexdigest()


def score(out: Path, n: int) -> dict[str, float]:
    """Pair precision and recall of the clusters against the planted families (all, and without the boilerplate)."""
    listing = out / "_clusters" if (out / "_clusters").is_dir() else out / "_clusters.parquet"
    t = pq.read_table(listing, columns=["id", "cluster"])
    ids = np.array([int(i[1:]) for i in t.column("id").to_pylist()], np.int64)
    clusters = t.column("cluster").to_pylist()
    pred = np.unique(np.array(clusters, dtype=object), return_inverse=True)[1]
    out_scores = {}
    all_idx = np.arange(n, dtype=np.int64)  # true pairs over the whole corpus (members outside a predicted cluster too)
    every = np.concatenate([family(all_idx[i : i + 5_000_000], n) for i in range(0, n, 5_000_000)])
    for name, keep in (("all", np.ones(len(ids), bool)), ("no_boilerplate", family(ids, n) != -1)):
        fam = family(ids[keep], n)
        p = pred[keep]
        pairs = lambda c: float((c * (c - 1) // 2).sum())  # noqa: E731
        _, pc = np.unique(p, return_counts=True)
        both = p.astype(np.int64) * (n + 2) + (fam + 1)
        _, bc = np.unique(both, return_counts=True)
        true_fam = every
        if name == "no_boilerplate":
            true_fam = true_fam[true_fam != -1]
        _, tc = np.unique(true_fam, return_counts=True)
        tp, predicted, true = pairs(bc), pairs(pc), pairs(tc)
        out_scores[name] = (tp / predicted if predicted else 1.0, tp / true if true else 1.0)
    return out_scores


def landed_checkout(commit: str) -> Path:
    """The landed commit in a worktree with its kernels built (reused across runs)."""
    wt = WORK / f"landed-{commit}"
    if not (wt / ".built").exists():
        if wt.exists():
            shutil.rmtree(wt)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(wt), commit], check=True, capture_output=True)
        subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=wt, check=True, capture_output=True)
        (wt / ".built").write_text(commit)
    return wt


def dedup_args(corpus: Path, out: Path, workers: int, task_memory: str | None, extra: list[str]) -> list[str]:
    args = ["--quiet", "dedup", "fuzzy", "--in", str(corpus), "--out", str(out), "--verify", "exact", "--workers", str(workers),
            "--priority", "pile/*,cc/*", "--overwrite", *extra]  # fmt: skip
    return args + (["--task-memory", task_memory] if task_memory else [])


def start_ray(nodes: int) -> dict[str, str]:
    """A local cluster of ``nodes`` raylets (one CPU each) with token authentication, as docs/ray.md starts one."""
    ray = str(Path(sys.executable).with_name("ray"))
    home = WORK / "ray_home"
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HOME": str(home), "RAY_AUTH_MODE": "token"}
    env.pop("RAY_AUTH_TOKEN", None)
    subprocess.run([ray, "stop", "--force"], capture_output=True, env=env)
    subprocess.run([ray, "get-auth-token", "--generate"], capture_output=True, env=env, check=True)
    for k in range(nodes):
        head = ["--head", "--port", "6391", "--include-dashboard=false"] if k == 0 else ["--address", "127.0.0.1:6391"]
        r = subprocess.run([ray, "start", *head, "--num-cpus", "1"], capture_output=True, text=True, env=env)
        if r.returncode != 0:
            raise SystemExit(f"ray start failed:\n{r.stderr[-2000:]}")
    return {**env, "RAY_ADDRESS": "127.0.0.1:6391"}


def stop_ray(env: dict[str, str]) -> None:
    subprocess.run([str(Path(sys.executable).with_name("ray")), "stop", "--force"], capture_output=True, env=env)


def fmt_mb(b: float) -> str:
    return f"{b / (1 << 20):,.0f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000000,4000000,16000000", help="corpus sizes in documents (comma-separated)")
    ap.add_argument("--task-memory", default="512MB")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--ray-size", type=int, default=None, help="repeat this size on a local Ray cluster and compare")
    ap.add_argument("--ray-nodes", type=int, default=2)
    ap.add_argument("--landed", default=None, help="a commit of the single-process dedup to run on the first size and compare")
    ap.add_argument("--keep", action="store_true", help="keep the corpora and outputs under benchmarks/_work/dedup_scale")
    tables.add_write_option(ap)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",") if s.strip()]
    WORK.mkdir(parents=True, exist_ok=True)
    rows, runs = [], {}
    for n in sizes:
        t0 = time.monotonic()
        corpus = build(n, a.workers)
        built = time.monotonic() - t0
        corpus_bytes = du(corpus)
        out = WORK / f"out-{n}"
        wall, rss, _ = run_curate(dedup_args(corpus, out, a.workers, a.task_memory, []))
        rec = json.loads((out / "_SUCCESS").read_text())
        d = rec["dedup"]
        work_bytes = du(out / "_work")
        shingle_bytes = sum(f.stat().st_size for f in (out / "_work").rglob("*.sh*.npy"))  # --verify exact's shingle store
        scores = score(out, n)
        p_all, p_nb = scores["all"], scores["no_boilerplate"]
        runs[n] = {"wall": wall, "rss": rss, "work": work_bytes, "shingle_bytes": shingle_bytes, "phases": d["phase_seconds"], "record": rec, "digest": combined(shard_digests(out)),
                   "text_bytes": rec["bytes_in"], "rounds": d.get("components_rounds"), "plan": d.get("plan", {})}  # fmt: skip
        rows.append([f"{n:,}", f"{rec['bytes_in'] / n:,.0f}", f"{wall:,.0f}", *[f"{d['phase_seconds'].get(k, 0):,.0f}" for k in
                     ("signatures", "lsh", "components", "clusters")], f"{n / wall / a.workers:,.0f}", fmt_mb(rss), fmt_mb(work_bytes),
                     f"{work_bytes / n:,.0f}", f"{p_all[0]:.3f} / {p_all[1]:.3f}", f"{p_nb[0]:.3f} / {p_nb[1]:.3f}",
                     f"{d['clusters']:,}", str(runs[n]["rounds"])])  # fmt: skip
        print(tables.text_table(["docs", "B/doc", "s", "sig", "lsh", "cc", "clusters", "docs/s/core", "peak MB", "_work MB", "_work B/doc",
                                 "P/R", "P/R no boilerplate", "clusters", "cc rounds"], rows[-1:]), flush=True)  # fmt: skip
        print(f"  (corpus built in {built:.0f} s, {corpus_bytes / 1e6:,.0f} MB of Parquet)", flush=True)
    head = ["docs", "text bytes/doc", "wall s", "signatures s", "LSH + pairs s", "components s", "clusters s", "docs/s per core",
            "largest process peak memory MB (RssAnon)", "_work/ MB", "_work/ bytes per doc", "P / R", "P / R (no boilerplate)", "clusters",
            "component rounds"]  # fmt: skip
    body = [tables.md_table(head, rows)]
    first, last = sizes[0], sizes[-1]
    flat = runs[last]["rss"] / runs[first]["rss"]
    body.append(f"\nPeak memory of the largest process, {last:,} vs {first:,} documents: {flat:.2f}x "
                f"({fmt_mb(runs[first]['rss'])} MB -> {fmt_mb(runs[last]['rss'])} MB at --task-memory {a.task_memory}).")  # fmt: skip

    compare = []
    if a.landed:
        n = sizes[0]
        corpus = WORK / f"corpus-{n}"
        wt = landed_checkout(a.landed)
        lout, nout = WORK / f"landed-out-{n}", WORK / f"nodup-out-{n}"
        env = {**os.environ, "PYTHONPATH": str(wt)}
        lwall, lrss, _ = run_curate(dedup_args(corpus, lout, a.workers, None, []), env=env, cwd=wt)
        if (lout / "_clusters").is_dir() or "dup_count" in pq.read_schema(next(lout.glob("part-*.parquet"))).names:
            raise SystemExit(f"{wt}: the landed run used this checkout's curate, not commit {a.landed}'s")
        nwall, nrss, _ = run_curate(dedup_args(corpus, nout, a.workers, a.task_memory, ["--no-dup-count"]))
        ld, nd = shard_digests(lout), shard_digests(nout)
        same = ld == nd
        compare.append(["single-process dedup (commit " + a.landed + ")", f"{n:,}", f"{lwall:,.0f}", f"{n / lwall / a.workers:,.0f}",
                        fmt_mb(lrss), combined(ld)[:16]])  # fmt: skip
        compare.append([f"partitioned, --task-memory {a.task_memory}, --no-dup-count", f"{n:,}", f"{nwall:,.0f}",
                        f"{n / nwall / a.workers:,.0f}", fmt_mb(nrss), combined(nd)[:16]])  # fmt: skip
        body.append(f"\nThe same {n:,}-document corpus through the single-process dedup of commit {a.landed} and the partitioned one "
                    f"(`--no-dup-count`, since that commit wrote no dup_count): output shards {'byte-identical' if same else 'DIFFERENT'} "
                    f"({len(ld)} shards; sha256 of the shard digests below).\n")  # fmt: skip
        body.append(
            tables.md_table(["run", "docs", "wall s", "docs/s per core", "peak memory MB (RssAnon)", "sha256 of the shards"], compare)
        )
        if not same:
            print("OUTPUT DIFFERS from the landed dedup", file=sys.stderr)
    if a.ray_size:
        n = a.ray_size
        corpus = build(n, a.workers)
        rout = WORK / f"ray-out-{n}"
        env = start_ray(a.ray_nodes)
        try:
            rwall, rrss, _ = run_curate(dedup_args(corpus, rout, a.ray_nodes, a.task_memory, ["--executor", "ray", "--ray-address",
                                                                                              "127.0.0.1:6391"]), env=env)  # fmt: skip
        finally:
            stop_ray(env)
        rd = combined(shard_digests(rout))
        local = runs.get(n, {}).get("digest")
        body.append(f"\nRay: the {n:,}-document run on a local Ray cluster of {a.ray_nodes} nodes (one raylet each, one CPU each) "
                    f"on this machine: {rwall:,.0f} s; output shards {'byte-identical to' if rd == local else 'DIFFERENT from'} the local "
                    f"run's (sha256 of the shard digests {rd[:16]}).")  # fmt: skip

    # the MT-NLG projection, from the largest run
    r = runs[last]
    ph = r["phases"]
    removal = max(0.0, r["wall"] - sum(ph.values()))
    per_byte = ph.get("signatures", 0) * a.workers / r["text_bytes"]  # core-seconds per byte of text (shingling, MinHash)
    per_doc = (ph.get("lsh", 0) + ph.get("components", 0) + ph.get("clusters", 0) + removal) * a.workers / last  # core-seconds per doc
    core_s = per_byte * MTNLG_DOCS * MTNLG_DOC_BYTES + per_doc * MTNLG_DOCS
    # the shingle store grows with the text (4 bytes per shingle), the rest of _work/ with the documents
    scratch = (r["work"] - r["shingle_bytes"]) / last * MTNLG_DOCS + r["shingle_bytes"] / r["text_bytes"] * MTNLG_DOCS * MTNLG_DOC_BYTES
    body.append("\n## Projection: the MT-NLG CommonCrawl part\n")
    body.append(tables.md_table(["documents", "text per doc", "core-hours", "wall on 512 cores", "peak memory per task", "scratch disk (_work/)"],
                                [[f"{MTNLG_DOCS / 1e9:.2f} billion", f"{MTNLG_DOC_BYTES:,} B", f"{core_s / 3600:,.0f}",
                                  f"{core_s / 512 / 3600:,.1f} h", f"{fmt_mb(r['rss'])} MB (measured, flat)", f"{scratch / 1e12:,.1f} TB"]]))  # fmt: skip
    note = (
        "The signature phase scales with the text (measured core-seconds per byte at the largest size, times the documents' bytes); "
        "LSH, pairs, components, clusters and the removal pass with the documents (core-seconds per document at the largest size). "
        "The scratch disk: --verify exact's shingle store (32 bits per shingle) scales with the text, the rest of _work/ with the documents. The peak per task is "
        "the measured one: it does not grow with the corpus at a fixed --task-memory. Planning assumption: duplicates as common as in "
        "this corpus; a corpus with more candidate pairs per document needs proportionally more LSH and pair time."
    )
    body.append("\n" + note)
    text = "\n".join(body)
    print(text)
    if a.write:
        doc = (__doc__ or "").split("\n\n")[1:3]
        tables.write_table("dedup_scale", "Fuzzy dedup at scale: no process holds the corpus", text, note="\n\n".join(doc))
    if not a.keep:
        for n in sizes:
            shutil.rmtree(WORK / f"out-{n}", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
