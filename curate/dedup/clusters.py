"""Clusters of duplicates: survivor choice and the removal pass, partitioned; the single-process reference components.

Documents are addressed by a 64-bit *doc key*, ``shard_index << 32 | row``, so the
removal pass can find its rows in each input shard without a lookup table.

After the components (``components.py``) come three partitioned phases, so that no process
holds the clustered documents of the corpus: *attach* (one task per group of input shards:
its documents' component, id, source, rank, length and weight, shuffled by component),
*survivors* (one task per partition of components: the survivor of each, every member's
cluster and the cluster's size, shuffled back by shard group, and the listing shuffled by a
hash of the component), and *listing* (``OUT/_clusters/part-K.parquet``, whose parts depend
only on the data). The removal pass then runs per input shard, as every map stage does.

:func:`connected_components` is the single-process union-find the partitioned rounds are
tested against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


SIZE_BUCKETS = ("2", "3", "4", "5-9", "10-99", "100+")


def size_histogram(sizes: np.ndarray) -> dict[str, int]:
    """Number of clusters by size bucket (2, 3, 4, 5-9, 10-99, 100+), from each cluster's member count."""
    buckets = dict.fromkeys(SIZE_BUCKETS, 0)
    for s, n in zip(*np.unique(sizes, return_counts=True)):
        key = str(s) if s <= 4 else "5-9" if s < 10 else "10-99" if s < 100 else "100+"
        buckets[key] += int(n)
    return {k: v for k, v in buckets.items() if v}


# --------------------------------------------------------------------------- the partitioned phases after the components

ATTACH_SCHEMA = pa.schema([("component", pa.int64()), ("doc", pa.int64()), ("id", pa.string()), ("source", pa.string()),
                           ("rank", pa.int32()), ("length", pa.int64()), ("weight", pa.int64())])  # fmt: skip
MEMBER_SCHEMA = pa.schema([("doc", pa.int64()), ("cluster", pa.string()), ("kept", pa.bool_()), ("dup_count", pa.int64())])
LISTING_SCHEMA = pa.schema([("id", pa.string()), ("cluster", pa.string()), ("source", pa.string()), ("kept", pa.bool_()),
                            ("dup_count", pa.int64()), ("component", pa.int64())])  # fmt: skip
MEMBER_BYTES = 320  # one cluster member in a survivor task (its id and source, the sort), for planning


def shard_groups(rows_per_shard: list[int], groups: int) -> list[int]:
    """Group of each input shard: consecutive shards, about the same number of documents per group."""
    total = max(1, sum(rows_per_shard))
    out, acc = [], 0
    for n in rows_per_shard:
        out.append(min(groups - 1, acc * groups // total))
        acc += n
    return out


@dataclass
class AttachJob:
    """Members of one shard group: each node's component with its document's id, source, rank, length, weight."""

    group: int
    labels: list[str]  # the label files of the components phase
    meta: list[str]  # the signature meta files of the group's chunks, in order
    out: str
    parts: int  # survivor partitions


def attach_job(job: AttachJob) -> dict[str, Any]:
    from curate.partitions import hash_partition, partitioned_done, read_buckets, write_partitioned

    out = as_path(job.out)
    if partitioned_done(out):
        return {"skipped": 1}
    cols = read_buckets([as_path(p) for p in job.labels], [job.group], ["doc", "component"])
    doc, comp = cols["doc"].astype(np.int64), cols["component"].astype(np.int64)
    order = np.argsort(doc)
    doc, comp = doc[order], comp[order]
    pieces = []
    for m in job.meta:
        meta = read_parquet(as_path(m), columns=["doc", "id", "source", "rank", "length", "weight"])
        keys = meta.column("doc").to_numpy()
        pos = np.searchsorted(doc, keys)
        hit = (pos < len(doc)) & (doc[np.minimum(pos, max(0, len(doc) - 1))] == keys) if len(doc) else np.zeros(len(keys), bool)
        if not hit.any():
            continue
        sub = meta.filter(pa.array(hit))
        pieces.append(sub.add_column(0, "component", pa.array(comp[pos[hit]], pa.int64())))
    t = pa.concat_tables(pieces).select(ATTACH_SCHEMA.names).cast(ATTACH_SCHEMA) if pieces else ATTACH_SCHEMA.empty_table()
    write_partitioned(out, t, hash_partition(t.column("component").to_numpy(), job.parts), job.parts)
    return {"members": t.num_rows}


def choose_survivors(members: pa.Table, tie_break_longest: bool = True) -> pa.Table:
    """Mark the survivor of each component.

    ``members`` has columns doc, component, id, source, rank (priority: lower first), length
    and optionally weight. The survivor is the member of the best rank, then (with
    ``tie_break_longest``) the longest, then the smallest id. Returns id, cluster (the
    survivor's id), source, kept, doc, dup_count (the sum of the component's weights: how many
    documents the survivor stands for) and component, sorted by cluster then id.
    """
    if members.num_rows == 0:
        return pa.table({"id": pa.array([], pa.string()), "cluster": pa.array([], pa.string()), "source": pa.array([], pa.string()),
                         "kept": pa.array([], pa.bool_()), "doc": pa.array([], pa.int64()), "dup_count": pa.array([], pa.int64()),
                         "component": pa.array([], pa.int64())})  # fmt: skip
    neg_len = pc.negate(members.column("length")) if tie_break_longest else pa.array(np.zeros(members.num_rows, np.int64))
    t = members.append_column("neg_len", neg_len)
    order = pc.sort_indices(t, sort_keys=[("component", "ascending"), ("rank", "ascending"), ("neg_len", "ascending"), ("id", "ascending")])
    t = t.take(order)
    comp = t.column("component").to_numpy()
    first = np.ones(len(comp), bool)
    first[1:] = comp[1:] != comp[:-1]
    kept_idx = np.maximum.accumulate(np.where(first, np.arange(len(comp)), 0))
    weight = t.column("weight").to_numpy() if "weight" in t.column_names else np.ones(len(comp), np.int64)
    starts = np.flatnonzero(first)
    sums = np.add.reduceat(weight.astype(np.int64), starts)
    dup_count = np.repeat(sums, np.diff(np.r_[starts, len(comp)]))
    ids = t.column("id")
    cluster = ids.take(pa.array(kept_idx))
    out = pa.table({"id": ids, "cluster": cluster, "source": t.column("source"), "kept": pa.array(first), "doc": t.column("doc"),
                    "dup_count": pa.array(dup_count, pa.int64()), "component": t.column("component")})  # fmt: skip
    order = pc.sort_indices(out, sort_keys=[("cluster", "ascending"), ("id", "ascending")])
    return out.take(order)


@dataclass
class SurvivorJob:
    """One survivor partition: choose each component's survivor; members by shard group, the listing by its part."""

    part: int
    inputs: list[str]  # every attach file
    out_members: str
    out_listing: str
    groups: int
    group_of_shard: list[int]
    listing_parts: int
    budget: int
    tie_break_longest: bool = True


def survivor_job(job: SurvivorJob) -> dict[str, Any]:
    from curate.partitions import check_fits, hash_partition, partition_counts, partitioned_done, read_partition, write_partitioned

    if partitioned_done(job.out_members) and partitioned_done(job.out_listing) and as_path(job.out_members + ".json").exists():
        import json

        return json.loads(as_path(job.out_members + ".json").read_text())
    paths = [as_path(p) for p in job.inputs]
    rows = int(sum(int(partition_counts(p)[job.part]) for p in paths))
    check_fits(rows, MEMBER_BYTES, job.budget, f"dedup: cluster members of survivor partition {job.part}")
    t = read_partition(paths, job.part, schema=ATTACH_SCHEMA)
    chosen = choose_survivors(t, tie_break_longest=job.tie_break_longest)
    docs = chosen.column("doc").to_numpy()
    members = pa.table({"doc": docs, "cluster": chosen.column("cluster"), "kept": chosen.column("kept"),
                        "dup_count": chosen.column("dup_count")})  # fmt: skip
    order = np.argsort(docs, kind="stable")  # within a shard group, by doc: the removal pass slices its shard
    members = members.take(pa.array(order))
    group = np.asarray(job.group_of_shard, np.int64)[shard_of(members.column("doc").to_numpy())] if len(docs) else np.zeros(0, np.int64)
    write_partitioned(as_path(job.out_members), members, group, job.groups)
    listing = chosen.select(LISTING_SCHEMA.names)
    write_partitioned(as_path(job.out_listing), listing, hash_partition(chosen.column("component").to_numpy(), job.listing_parts),
                      job.listing_parts)  # fmt: skip
    kept = chosen.column("kept").to_numpy(zero_copy_only=False)
    comp = chosen.column("component").to_numpy()
    sizes = np.unique(comp, return_counts=True)[1] if len(comp) else np.zeros(0, np.int64)
    stats = {"members": int(len(docs)), "clusters": int(kept.sum()), "removed": int((~kept).sum()), "sizes": size_histogram(sizes)}
    from curate.storage import write_json_atomic

    write_json_atomic(as_path(job.out_members + ".json"), stats)
    return stats


@dataclass
class ListingJob:
    """One part of ``OUT/_clusters/``: its clusters, sorted by cluster then id (parts depend only on the data)."""

    part: int
    inputs: list[str]
    out: str


def listing_job(job: ListingJob) -> dict[str, Any]:
    from curate.formats.parquet import write_table_atomic
    from curate.partitions import read_partition

    out = as_path(job.out)
    if out.exists():
        return {"skipped": 1}
    t = read_partition([as_path(p) for p in job.inputs], job.part, schema=LISTING_SCHEMA)
    t = t.take(pc.sort_indices(t, sort_keys=[("cluster", "ascending"), ("id", "ascending")]))
    write_table_atomic(out, t.select(["id", "cluster", "source", "kept", "dup_count"]))
    return {"rows": t.num_rows}


@dataclass
class ApplyClusters(DocStage):
    """The removal pass over one input shard: drop non-survivors, tag cluster members, count what each survivor stands for.

    ``members`` are the survivor phase's member files; this shard's rows are in their batch
    ``group``, sorted by doc key; rows not there are not duplicates. Dropped rows go to rejected
    with ``reason`` and ``dup_of`` (the id of the kept document); with ``dup_count`` every kept
    document gets ``dup_count``: its cluster's documents (weighted by an input ``dup_count``),
    or its own input ``dup_count`` (1 without one) when it has no duplicate. Rows are counted
    across batches, so one instance serves one shard.
    """

    members: list[str] | None
    group: int
    shard: int
    reason: str
    tag: bool = True  # add the dup_cluster column to kept documents
    dup_count: bool = True  # add the dup_count column
    _row: int = 0
    _loaded: tuple[np.ndarray, list[str], np.ndarray, np.ndarray] | None = None

    def _load(self) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
        if self._loaded is None:
            from curate.partitions import read_partition

            lo, hi = doc_key(self.shard, np.zeros(1, np.int64))[0], doc_key(self.shard + 1, np.zeros(1, np.int64))[0]
            pieces = []
            for p in self.members or []:
                t = read_partition([as_path(p)], self.group, schema=MEMBER_SCHEMA)
                docs = t.column("doc").to_numpy()
                a, b = np.searchsorted(docs, lo), np.searchsorted(docs, hi)
                if b > a:
                    pieces.append(t.slice(int(a), int(b - a)))
            t = pa.concat_tables(pieces) if pieces else MEMBER_SCHEMA.empty_table()
            rows = row_of(t.column("doc").to_numpy())
            order = np.argsort(rows, kind="stable")
            self._loaded = (rows[order], t.column("cluster").take(pa.array(order)).to_pylist(),
                            t.column("kept").to_numpy(zero_copy_only=False)[order], t.column("dup_count").to_numpy()[order])  # fmt: skip
        return self._loaded

    def decide_batch(self, batch: Batch) -> Decisions:
        rows, clusters, kept_flags, counts = self._load()
        n = batch.table.num_rows
        lo, hi = self._row, self._row + n
        self._row = hi
        a, b = np.searchsorted(rows, lo), np.searchsorted(rows, hi)
        cluster_col: list[str | None] = [None] * n
        keep = np.ones(n, bool)
        if "dup_count" in batch.table.column_names:
            weight = batch.table.column("dup_count").cast(pa.int64()).fill_null(1).to_numpy().copy()
        else:
            weight = np.ones(n, np.int64)
        for j in range(a, b):
            r = int(rows[j]) - lo
            cluster_col[r] = clusters[j]
            keep[r] = bool(kept_flags[j])
            weight[r] = counts[j]
        clusters_arr = pa.array(cluster_col, pa.string())
        columns: dict[Any, Any] = {"dup_cluster": clusters_arr} if self.tag else {}
        if self.dup_count:
            columns["dup_count"] = pa.array(weight, pa.int64())
        return Decisions(
            [None if k else self.reason for k in keep.tolist()],
            columns=columns,
            rejected_columns={pa.field("dup_of", pa.string()): clusters_arr},
        )
