"""Fuzzy dedup, phases b and c: LSH candidate pairs per partition, their union without repeats, verification.

Within one band, documents whose band hashes are equal are candidates. An LSH partition is one
band's range of hash values, so every run of equal hashes lies in one partition: its (hash,
doc) rows from every chunk are sorted (no dictionary of the corpus), and each run becomes
edges: every pair when the run is small (so verification can judge each pair), otherwise a
star from the run's first document plus a chain through the run, which keeps the run connected
with a number of edges linear in its size. The pairs go to pair partitions by a hash of the
pair, so one union task sees every copy of a pair (from every band) and keeps one; with
``--verify`` it then keeps the pairs whose Jaccard reaches the threshold, and writes the edges,
both ways, into the partitions of the connected-components rounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from curate.dedup.minhash import estimated_jaccard, pair_jaccards
from curate.dedup.signatures import ChunkIndex, ShingleStore, SignatureStore
from curate.partitions import bucket_done, check_fits, hash_partition, mix64, read_buckets, write_buckets
from curate.storage import as_path

ALL_PAIRS_MAX = 32  # runs up to this size give every pair (496 pairs at most)


def candidate_pairs(hashes: np.ndarray, docs: np.ndarray, all_pairs_max: int = ALL_PAIRS_MAX) -> tuple[np.ndarray, np.ndarray]:
    """Edges (a < b) between documents with equal band hash. Inputs need not be sorted."""
    if len(hashes) < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.lexsort((docs, hashes))
    h, d = hashes[order], docs[order]
    starts = np.flatnonzero(np.r_[True, h[1:] != h[:-1]])
    sizes = np.diff(np.r_[starts, len(h)])
    multi = sizes >= 2
    starts, sizes = starts[multi], sizes[multi]
    if len(starts) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    out_a, out_b = [], []
    pair_runs = sizes == 2  # the common case, vectorised
    s2 = starts[pair_runs]
    out_a.append(d[s2])
    out_b.append(d[s2 + 1])
    rest_starts, rest_sizes = starts[~pair_runs], sizes[~pair_runs]
    small = rest_sizes <= all_pairs_max
    for n in np.unique(rest_sizes[small]).tolist():  # every run of one size at once
        i, j = np.triu_indices(n, k=1)
        s_n = rest_starts[small & (rest_sizes == n)][:, None]
        out_a.append(d[s_n + i].ravel())
        out_b.append(d[s_n + j].ravel())
    for s, n in zip(rest_starts[~small].tolist(), rest_sizes[~small].tolist()):  # a star plus a chain
        run = d[s : s + n]
        out_a.extend([np.full(n - 1, run[0]), run[1:-1]])
        out_b.extend([run[1:], run[2:]])
    a, b = np.concatenate(out_a), np.concatenate(out_b)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keep = lo != hi
    return lo[keep], hi[keep]


def unique_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop repeated (a, b) edges; the rest sorted by (a, b)."""
    if len(a) == 0:
        return a, b
    order = np.lexsort((b, a))  # an order of two int64 keys, ~50x faster than np.unique(axis=0)
    a, b = a[order], b[order]
    new = np.r_[True, (a[1:] != a[:-1]) | (b[1:] != b[:-1])]
    return a[new], b[new]


def verify_pairs(
    a: np.ndarray, b: np.ndarray, threshold: float, signatures: SignatureStore, shingles: ShingleStore | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keep the pairs whose Jaccard is at least ``threshold``; returns (a, b, jaccard).

    Without ``shingles`` the Jaccard is estimated from the full signatures (the fraction of
    equal minima); with it, it is computed exactly from the shingle sets.
    """
    if len(a) == 0:
        return a, b, np.zeros(0, np.float32)
    if shingles is None:
        j = estimated_jaccard(signatures.get(a), signatures.get(b)).astype(np.float32)
    else:
        keys, sh, offsets = shingles.load(np.concatenate([a, b]))
        j = pair_jaccards(sh, offsets, np.searchsorted(keys, a), np.searchsorted(keys, b))
    keep = j >= np.float32(threshold) - np.float32(1e-6)
    return a[keep], b[keep], j[keep]


# --------------------------------------------------------------------------- the tasks

LSH_BYTES = 128  # one (hash, doc) row in an LSH task, with its sort and the pairs it makes (measured)
PAIR_BYTES = 96  # one candidate pair in a union task, with the sort that removes repeats (measured)
VERIFY_CHUNK = 100_000  # candidate pairs verified at once (bounds the signatures or shingles loaded)


def pair_partition(a: np.ndarray, b: np.ndarray, parts: int) -> np.ndarray:
    """The pair partition of each pair (a < b): a hash of both, so every copy of a pair meets in one union task."""
    if parts == 1:
        return np.zeros(len(a), np.int64)
    with np.errstate(over="ignore"):
        return (mix64(mix64(a.view(np.uint64)) ^ b.view(np.uint64)) % np.uint64(parts)).astype(np.int64)


@dataclass
class LshJob:
    group: int
    parts: list[int]  # LSH partitions (band * lsh_parts + hash range)
    inputs: list[str]  # every chunk's bucket file
    work: str
    pair_parts: int
    budget: int
    lsh_parts: int = 1  # LSH partitions per band


def lsh_job(job: LshJob) -> dict[str, Any]:
    """Candidate pairs of a group of LSH partitions, bucketed by pair partition (skipped when written)."""
    out = as_path(job.work) / "lsh" / "pairs" / f"g-{job.group:05d}"
    if bucket_done(out):
        return {"skipped": 1}
    paths = [as_path(p) for p in job.inputs]
    a_all, b_all = [], []
    for p in job.parts:
        cols = read_buckets(paths, [p], ["h", "d"])
        check_fits(len(cols["h"]), LSH_BYTES, job.budget, f"dedup fuzzy: LSH bucket range {p % job.lsh_parts} of band {p // job.lsh_parts}")
        a, b = candidate_pairs(np.asarray(cols["h"], np.uint64), np.asarray(cols["d"], np.int64))
        a_all.append(a)
        b_all.append(b)
    a = np.concatenate(a_all) if a_all else np.zeros(0, np.int64)
    b = np.concatenate(b_all) if b_all else np.zeros(0, np.int64)
    write_buckets(out, {"a": a, "b": b}, pair_partition(a, b, job.pair_parts), job.pair_parts)
    return {"candidates": int(len(a))}


@dataclass
class UnionJob:
    group: int
    parts: list[int]  # pair partitions
    inputs: list[str]  # every LSH task's pair file
    work: str
    cc_parts: int
    threshold: float
    verify: str
    first_chunk: list[int]
    chunk_rows: int
    budget: int


def union_job(job: UnionJob) -> dict[str, Any]:
    """The unique candidate pairs of a group of pair partitions, verified, as edges both ways for the first CC round."""
    import json

    from curate.storage import write_json_atomic

    work = as_path(job.work)
    out = work / "cc" / "edges" / f"u-{job.group:05d}"
    stats_path = as_path(str(out) + ".json")
    if bucket_done(out) and stats_path.exists():
        return json.loads(stats_path.read_text())
    paths = [as_path(p) for p in job.inputs]
    cols = read_buckets(paths, job.parts, ["a", "b"])
    check_fits(len(cols["a"]), PAIR_BYTES, job.budget, f"dedup fuzzy: candidate pairs of pair partitions {job.parts[0]}-{job.parts[-1]}")
    a, b = unique_pairs(np.asarray(cols["a"], np.int64), np.asarray(cols["b"], np.int64))
    pairs = len(a)
    if job.verify != "none" and len(a):
        index = ChunkIndex(job.first_chunk, job.chunk_rows)
        sigs = SignatureStore(work, index)
        shingles = ShingleStore(work, index) if job.verify == "exact" else None
        kept_a, kept_b = [], []
        for i in range(0, len(a), VERIFY_CHUNK):
            ea, eb, _ = verify_pairs(a[i : i + VERIFY_CHUNK], b[i : i + VERIFY_CHUNK], job.threshold, sigs, shingles)
            kept_a.append(ea)
            kept_b.append(eb)
        a, b = np.concatenate(kept_a), np.concatenate(kept_b)
    u, v = np.concatenate([a, b]), np.concatenate([b, a])
    write_buckets(out, {"u": u, "v": v}, hash_partition(u, job.cc_parts), job.cc_parts)
    stats = {"pairs": int(pairs), "edges": int(len(a))}
    write_json_atomic(stats_path, stats)
    return stats
