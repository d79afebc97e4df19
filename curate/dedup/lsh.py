"""LSH candidate pairs from sorted band hashes, and their verification.

Within one band, documents whose band hashes are equal are candidates. The band's
(hash, doc) rows are sorted (no dictionary of the corpus), and each run of equal hashes
becomes edges: every pair when the run is small (so verification can judge each pair),
otherwise a star from the run's first document plus a chain through the run, which
keeps the run connected with a number of edges linear in its size.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from curate.dedup.clusters import row_of, shard_of
from curate.dedup.minhash import estimated_jaccard, pair_jaccards, ranges
from curate.storage import as_path, np_load

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
    """Drop repeated (a, b) edges."""
    if len(a) == 0:
        return a, b
    pairs = np.unique(np.stack([a, b], axis=1), axis=0)
    return pairs[:, 0].copy(), pairs[:, 1].copy()


class SignatureStore:
    """Signatures of every input shard, memory-mapped from ``_work/signatures/*.sig.npy``.

    Worker processes share the page cache instead of each loading all signatures (on an
    object store each shard's file is read into memory once per store).
    """

    def __init__(self, sig_dir: Path) -> None:
        self.dir = as_path(sig_dir)
        self._maps: dict[int, np.ndarray] = {}

    def _shard(self, s: int) -> np.ndarray:
        if s not in self._maps:
            self._maps[s] = np_load(self.dir / f"part-{s:05d}.sig.npy")
        return self._maps[s]

    def get(self, keys: np.ndarray) -> np.ndarray:
        """Signature rows of doc ``keys`` (any order), as one array."""
        shards, rows = shard_of(keys), row_of(keys)
        first = self._shard(int(shards[0])) if len(keys) else None
        out = np.empty((len(keys), first.shape[1] if first is not None else 0), np.uint32)
        for s in np.unique(shards):
            m = shards == s
            out[m] = self._shard(int(s))[rows[m]]
        return out


class ShingleStore:
    """Shingle hashes per document (32 bits each, for ``--verify exact``), as the signature phase stored them.

    :meth:`load` gathers the documents that verification needs, in one vectorised pass per
    shard, copying them out of memory maps that are closed right after: memory holds the
    shingles of one verification chunk (4 bytes each), never a whole shard's file.
    """

    def __init__(self, dir_: Path) -> None:
        self.dir = as_path(dir_)

    def load(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(the sorted unique ``keys``, their shingle hashes concatenated, int64 offsets per key)."""
        keys = np.unique(keys)
        parts, counts = [], []
        shards = shard_of(keys)
        for s in np.unique(shards):  # sorted keys come shard by shard
            rows = row_of(keys[shards == s])
            flat = np_load(self.dir / f"part-{int(s):05d}.npy")
            off = np_load(self.dir / f"part-{int(s):05d}.off.npy")
            n_sh = np.asarray(off[rows + 1] - off[rows])
            parts.append(np.asarray(flat[ranges(np.asarray(off[rows]), n_sh)]))
            counts.append(n_sh)
            del flat, off  # unmap: the pages read no longer count against the process
        offsets = np.zeros(len(keys) + 1, np.int64)
        if counts:
            np.cumsum(np.concatenate(counts), out=offsets[1:])
        return keys, (np.concatenate(parts) if parts else np.zeros(0, np.uint32)), offsets


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
