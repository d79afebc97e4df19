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
MEMBER_BYTES = 640  # one cluster member in an attach, survivor or members task (its id and source, the sorts; measured)


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
    """Members of one shard group, and each of its components' best member there (a partial survivor).

    The members (component, doc, id, source, rank, length, weight) stay in the group's file;
    only one row per (component, group), the group's best member and its weight and size, is
    shuffled by component: the reduction that chooses a survivor never holds a component's
    members, so a component of a million documents costs a million rows nowhere.
    """

    group: int
    labels: list[str]  # the label files of the components phase
    meta: list[str]  # the signature meta files of the group's chunks, in order
    members_out: str
    partials_out: str
    parts: int  # reduce partitions
    tie_break_longest: bool = True


def _best_first(t: pa.Table, tie_break_longest: bool) -> pa.Table:
    """``t`` sorted by component, then the survivor order: rank, longest (fuzzy), smallest id."""
    neg_len = pc.negate(t.column("length")) if tie_break_longest else pa.array(np.zeros(t.num_rows, np.int64))
    t = t.append_column("neg_len", neg_len)
    order = pc.sort_indices(t, sort_keys=[("component", "ascending"), ("rank", "ascending"), ("neg_len", "ascending"), ("id", "ascending")])
    return t.take(order)


def _firsts(comp: np.ndarray) -> np.ndarray:
    first = np.ones(len(comp), bool)
    first[1:] = comp[1:] != comp[:-1]
    return first


def attach_job(job: AttachJob) -> dict[str, Any]:
    from curate.formats.parquet import write_table_atomic
    from curate.partitions import hash_partition, partitioned_done, read_buckets, write_partitioned

    if partitioned_done(job.partials_out):
        return {"skipped": 1}
    cols = read_buckets([as_path(p) for p in job.labels], [job.group], ["doc", "component"])
    doc, comp = np.asarray(cols["doc"], np.int64), np.asarray(cols["component"], np.int64)
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
    write_table_atomic(as_path(job.members_out), t)  # sorted by doc (the meta files come in doc order)
    s = _best_first(t, job.tie_break_longest)
    c = s.column("component").to_numpy()
    first = _firsts(c)
    starts = np.flatnonzero(first)
    weight = np.add.reduceat(s.column("weight").to_numpy().astype(np.int64), starts) if len(c) else np.zeros(0, np.int64)
    size = np.diff(np.r_[starts, len(c)]).astype(np.int64)
    best = s.filter(pa.array(first))
    partials = pa.table({"component": best.column("component"), "id": best.column("id"), "rank": best.column("rank"),
                         "neg_len": best.column("neg_len"), "weight": pa.array(weight, pa.int64()), "size": pa.array(size, pa.int64()),
                         "group": pa.array(np.full(len(starts), job.group, np.int64))})  # fmt: skip
    write_partitioned(as_path(job.partials_out), partials, hash_partition(partials.column("component").to_numpy(), job.parts), job.parts)
    return {"members": t.num_rows}


def choose_survivors(members: pa.Table, tie_break_longest: bool = True) -> pa.Table:
    """The survivors of every component in one sort: the single-process reference the partitioned phases are tested against.

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
    t = _best_first(members, tie_break_longest)
    comp = t.column("component").to_numpy()
    first = _firsts(comp)
    kept_idx = np.maximum.accumulate(np.where(first, np.arange(len(comp)), 0))
    weight = t.column("weight").to_numpy() if "weight" in t.column_names else np.ones(len(comp), np.int64)
    starts = np.flatnonzero(first)
    dup_count = np.repeat(np.add.reduceat(weight.astype(np.int64), starts), np.diff(np.r_[starts, len(comp)]))
    ids = t.column("id")
    out = pa.table({"id": ids, "cluster": ids.take(pa.array(kept_idx)), "source": t.column("source"), "kept": pa.array(first),
                    "doc": t.column("doc"), "dup_count": pa.array(dup_count, pa.int64()), "component": t.column("component")})  # fmt: skip
    return out.take(pc.sort_indices(out, sort_keys=[("cluster", "ascending"), ("id", "ascending")]))


PARTIAL_SCHEMA = pa.schema([("component", pa.int64()), ("id", pa.string()), ("rank", pa.int32()), ("neg_len", pa.int64()),
                            ("weight", pa.int64()), ("size", pa.int64()), ("group", pa.int64())])  # fmt: skip
RESULT_SCHEMA = pa.schema([("component", pa.int64()), ("cluster", pa.string()), ("dup_count", pa.int64())])


@dataclass
class ReduceJob:
    """One partition of components: the survivor of each from its groups' best members, and the cluster's size."""

    part: int
    inputs: list[str]  # every attach job's partials
    out: str
    groups: int
    budget: int


def reduce_job(job: ReduceJob) -> dict[str, Any]:
    import json

    from curate.partitions import check_fits, partition_counts, partitioned_done, read_partition, write_partitioned
    from curate.storage import write_json_atomic

    stats_path = as_path(job.out + ".json")
    if partitioned_done(job.out) and stats_path.exists():
        return json.loads(stats_path.read_text())
    paths = [as_path(p) for p in job.inputs]
    rows = int(sum(int(partition_counts(p)[job.part]) for p in paths))
    check_fits(rows, MEMBER_BYTES, job.budget, f"dedup: the components of survivor partition {job.part}")
    t = read_partition(paths, job.part, schema=PARTIAL_SCHEMA)
    t = t.take(
        pc.sort_indices(t, sort_keys=[("component", "ascending"), ("rank", "ascending"), ("neg_len", "ascending"), ("id", "ascending")])
    )
    c = t.column("component").to_numpy()
    first = _firsts(c)
    starts = np.flatnonzero(first)
    runs = np.diff(np.r_[starts, len(c)])
    survivor = t.column("id").take(pa.array(np.repeat(starts, runs)))
    weight = np.repeat(np.add.reduceat(t.column("weight").to_numpy(), starts), runs) if len(c) else np.zeros(0, np.int64)
    sizes = np.add.reduceat(t.column("size").to_numpy(), starts) if len(c) else np.zeros(0, np.int64)
    results = pa.table({"component": t.column("component"), "cluster": survivor, "dup_count": pa.array(weight, pa.int64())})
    write_partitioned(as_path(job.out), results, t.column("group").to_numpy(), job.groups)  # to every group the component spans
    stats = {"members": int(sizes.sum()), "clusters": int(len(starts)), "removed": int(sizes.sum() - len(starts)),
             "sizes": size_histogram(sizes)}  # fmt: skip
    write_json_atomic(stats_path, stats)
    return stats


@dataclass
class FinalizeJob:
    """One shard group: each member's cluster, whether it is kept, and its cluster's dup_count; the listing rows by part."""

    group: int
    members_in: str  # the group's members (attach)
    inputs: list[str]  # every reduce job's results
    members_out: str
    listing_out: str
    listing_parts: int


def finalize_job(job: FinalizeJob) -> dict[str, Any]:
    from curate.formats.parquet import write_table_atomic
    from curate.partitions import hash_partition, partitioned_done, read_partition, write_partitioned

    if partitioned_done(job.listing_out) and as_path(job.members_out).exists():
        return {"skipped": 1}
    m = read_parquet(as_path(job.members_in))
    r = read_partition([as_path(p) for p in job.inputs], job.group, schema=RESULT_SCHEMA)
    r = r.take(pc.sort_indices(r, sort_keys=[("component", "ascending")]))
    rc = r.column("component").to_numpy()
    pos = np.searchsorted(rc, m.column("component").to_numpy())
    cluster = r.column("cluster").take(pa.array(pos))
    dup = r.column("dup_count").take(pa.array(pos))
    kept = pc.equal(m.column("id"), cluster)
    members = pa.table({"doc": m.column("doc"), "cluster": cluster, "kept": kept, "dup_count": dup})
    write_table_atomic(as_path(job.members_out), members)  # by doc: a shard's rows are a slice
    listing = pa.table({"id": m.column("id"), "cluster": cluster, "source": m.column("source"), "kept": kept, "dup_count": dup})
    write_partitioned(as_path(job.listing_out), listing, hash_partition(m.column("doc").to_numpy(), job.listing_parts), job.listing_parts)
    return {"members": m.num_rows}


LISTING_OUT_SCHEMA = pa.schema([("id", pa.string()), ("cluster", pa.string()), ("source", pa.string()), ("kept", pa.bool_()),
                                ("dup_count", pa.int64())])  # fmt: skip


@dataclass
class ListingJob:
    """One part of ``OUT/_clusters/``: its rows sorted by cluster then id (parts by a hash of the document: they depend only on the data)."""

    part: int
    inputs: list[str]
    out: str


def listing_job(job: ListingJob) -> dict[str, Any]:
    from curate.formats.parquet import write_table_atomic
    from curate.partitions import read_partition

    out = as_path(job.out)
    if out.exists():
        return {"skipped": 1}
    t = read_partition([as_path(p) for p in job.inputs], job.part, schema=LISTING_OUT_SCHEMA)
    t = t.take(pc.sort_indices(t, sort_keys=[("cluster", "ascending"), ("id", "ascending")]))
    write_table_atomic(out, t)
    return {"rows": t.num_rows}


@dataclass
class ApplyClusters(DocStage):
    """The removal pass over one input shard: drop non-survivors, tag cluster members, count what each survivor stands for.

    ``members`` is the finalize phase's file of this shard's group, sorted by doc key (this
    shard's rows are a slice of it, found by the row groups' statistics); rows not there are
    not duplicates. Dropped rows go to rejected
    with ``reason`` and ``dup_of`` (the id of the kept document); with ``dup_count`` every kept
    document gets ``dup_count``: its cluster's documents (weighted by an input ``dup_count``),
    or its own input ``dup_count`` (1 without one) when it has no duplicate. Rows are counted
    across batches, so one instance serves one shard.
    """

    members: str | None
    shard: int
    reason: str
    tag: bool = True  # add the dup_cluster column to kept documents
    dup_count: bool = True  # add the dup_count column
    _row: int = 0
    _loaded: tuple[np.ndarray, list[str], np.ndarray, np.ndarray] | None = None

    def _load(self) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
        if self._loaded is None:
            import pyarrow.parquet as pq

            lo, hi = int(doc_key(self.shard, np.zeros(1, np.int64))[0]), int(doc_key(self.shard + 1, np.zeros(1, np.int64))[0])
            if self.members and as_path(self.members).exists():
                path = as_path(self.members)
                src = path if not hasattr(path, "fs") else path.open("rb")
                t = pq.read_table(src, filters=[("doc", ">=", lo), ("doc", "<", hi)]).select(MEMBER_SCHEMA.names)
            else:
                t = MEMBER_SCHEMA.empty_table()
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
