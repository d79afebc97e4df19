"""Clusters of duplicates: connected components, survivor choice, and the removal pass.

Documents are addressed by a 64-bit *doc key*, ``shard_index << 32 | row``, so the
removal pass can find its rows in each input shard without a lookup table.

Memory of the component step is proportional to the documents that appear in edges,
not to the corpus: per such document 8 bytes (its key) + 8 (its label) + 4 (its parent in
the union-find), and per edge 2 x 4 bytes of node indices (with the numpy temporaries of one
round, about 3 times that).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.runtime import Batch, Decisions, DocStage
from curate.storage import as_path, read_parquet

SHARD_SHIFT = 32
ROW_MASK = (1 << SHARD_SHIFT) - 1


def doc_key(shard: int, rows: np.ndarray) -> np.ndarray:
    """Doc keys of ``rows`` of shard ``shard``."""
    return (np.int64(shard) << np.int64(SHARD_SHIFT)) | rows.astype(np.int64)


def shard_of(keys: np.ndarray) -> np.ndarray:
    return (keys >> SHARD_SHIFT).astype(np.int64)


def row_of(keys: np.ndarray) -> np.ndarray:
    return (keys & ROW_MASK).astype(np.int64)


def connected_components(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Components of the graph with edges ``a[i] - b[i]`` (doc keys).

    Returns ``(nodes, labels)``: every doc key in an edge, sorted, and its component
    label (the smallest doc key of the component), so labels are stable across runs.

    A vectorised union-find over node indices: each round hooks the larger root of every
    edge whose ends have different roots under the smaller one, then jumps pointers
    (parent = parent[parent]) until every node points at its root. A parent is never larger than its node, so the root of a
    component ends as its smallest node. Rounds are few for duplicate clusters (they are
    small); each costs a pass over the edges.
    """
    if len(a) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    nodes, inv = np.unique(np.concatenate([a, b]), return_inverse=True)
    index = np.int32 if len(nodes) < 2**31 else np.int64
    ia, ib = inv[: len(a)].astype(index), inv[len(a) :].astype(index)
    parent = np.arange(len(nodes), dtype=index)
    while True:
        ra, rb = parent[ia], parent[ib]
        differ = ra != rb
        if not differ.any():
            break
        ia, ib, ra, rb = ia[differ], ib[differ], ra[differ], rb[differ]  # settled edges stay settled
        np.minimum.at(parent, np.maximum(ra, rb), np.minimum(ra, rb))
        while True:
            grand = parent[parent]
            if np.array_equal(grand, parent):
                break
            parent = grand
    return nodes, nodes[parent]


def choose_survivors(members: pa.Table, tie_break_longest: bool = True) -> pa.Table:
    """Mark the survivor of each component.

    ``members`` has columns doc, component, id, source, rank (priority: lower first) and
    length. The survivor is the member of the best rank, then (with ``tie_break_longest``)
    the longest, then the smallest id. Returns id, cluster (the survivor's id), source,
    kept, doc, sorted by cluster then id.
    """
    if members.num_rows == 0:
        return pa.table(
            {"id": pa.array([], pa.string()), "cluster": pa.array([], pa.string()), "source": pa.array([], pa.string()),
             "kept": pa.array([], pa.bool_()), "doc": pa.array([], pa.int64())}
        )  # fmt: skip
    neg_len = pc.negate(members.column("length")) if tie_break_longest else pa.array(np.zeros(members.num_rows, np.int64))
    t = members.append_column("neg_len", neg_len)
    order = pc.sort_indices(t, sort_keys=[("component", "ascending"), ("rank", "ascending"), ("neg_len", "ascending"), ("id", "ascending")])
    t = t.take(order)
    comp = t.column("component").to_numpy()
    first = np.ones(len(comp), bool)
    first[1:] = comp[1:] != comp[:-1]
    kept_idx = np.maximum.accumulate(np.where(first, np.arange(len(comp)), 0))
    ids = t.column("id")
    cluster = ids.take(pa.array(kept_idx))
    out = pa.table({"id": ids, "cluster": cluster, "source": t.column("source"), "kept": pa.array(first), "doc": t.column("doc")})
    order = pc.sort_indices(out, sort_keys=[("cluster", "ascending"), ("id", "ascending")])
    return out.take(order)


def cluster_size_histogram(clusters: pa.Table) -> dict[str, int]:
    """Number of clusters by size bucket (2, 3, 4, 5-9, 10-99, 100+)."""
    if clusters.num_rows == 0:
        return {}
    sizes = clusters.group_by("cluster").aggregate([("id", "count")]).column("id_count").to_numpy()
    buckets = {"2": 0, "3": 0, "4": 0, "5-9": 0, "10-99": 0, "100+": 0}
    for s, n in zip(*np.unique(sizes, return_counts=True)):
        key = str(s) if s <= 4 else "5-9" if s < 10 else "10-99" if s < 100 else "100+"
        buckets[key] += int(n)
    return {k: v for k, v in buckets.items() if v}


@dataclass
class ApplyClusters(DocStage):
    """The removal pass over one input shard: drop non-survivors, tag cluster members.

    ``members`` is this shard's Parquet file of (row, cluster, kept); rows not in it are
    not duplicates. Dropped rows go to rejected with ``reason`` and ``dup_of`` (the id of
    the kept document). Rows are counted across batches, so one instance serves one shard.
    """

    members: str | None
    reason: str
    tag: bool = True  # add the dup_cluster column to kept documents
    _row: int = 0
    _loaded: tuple[np.ndarray, list[str], np.ndarray] | None = None

    def _load(self) -> tuple[np.ndarray, list[str], np.ndarray]:
        if self._loaded is None:
            if self.members and as_path(self.members).exists():
                t = read_parquet(as_path(self.members))
                order = np.argsort(t.column("row").to_numpy(), kind="stable")
                self._loaded = (
                    t.column("row").to_numpy()[order],
                    [t.column("cluster")[int(i)].as_py() for i in order],
                    t.column("kept").to_numpy(zero_copy_only=False)[order],
                )
            else:
                self._loaded = (np.zeros(0, np.int64), [], np.zeros(0, bool))
        return self._loaded

    def decide_batch(self, batch: Batch) -> Decisions:
        rows, clusters, kept_flags = self._load()
        n = batch.table.num_rows
        lo, hi = self._row, self._row + n
        self._row = hi
        a, b = np.searchsorted(rows, lo), np.searchsorted(rows, hi)
        cluster_col: list[str | None] = [None] * n
        keep = np.ones(n, bool)
        for j in range(a, b):
            r = int(rows[j]) - lo
            cluster_col[r] = clusters[j]
            keep[r] = bool(kept_flags[j])
        clusters_arr = pa.array(cluster_col, pa.string())
        return Decisions(
            [None if k else self.reason for k in keep.tolist()],
            columns={"dup_cluster": clusters_arr} if self.tag else {},
            rejected_columns={pa.field("dup_of", pa.string()): clusters_arr},
        )
