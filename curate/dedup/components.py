"""Connected components of the duplicate graph, partitioned: alternating large-star and small-star rounds.

The edges never meet in one process. They are stored directed, both ways, in files
partitioned by the first node (``hash_partition(u, R)``); one round is one task per
partition that reads the edges of its nodes from every file the round before wrote,
removes repeats, applies one star operation and writes the new edges partitioned again.
The operations (Kiveris, Lattanzi, Mirrokni, Rastogi, Vassilvitskii, "Connected Components
in MapReduce and Beyond", SoCC 2014), for a node ``u`` with neighbours ``G(u)`` and
``m = min(G(u) + {u})`` over the neighbours the operation looks at:

- large-star: every neighbour larger than ``u`` is linked to ``m`` (over all of ``G(u)``);
- small-star: ``u`` and every neighbour smaller than it are linked to ``m`` (over those).

Alternating them leaves, after O(log^2 n) rounds whatever the graph's diameter (a chain of
a million documents included), one star per component whose centre is its smallest node.
A round's tasks check that on their input: every node with a smaller neighbour has exactly
one neighbour. When all do, the labels are read off that input (each node's label is its
smallest neighbour, or itself): the same labels as a single union-find over every edge
(``clusters.connected_components``, the reference the tests hold it to).

Memory per task: the directed edges of its partition, 16 bytes each and about four times
that while sorting. A node's edges stay in its partition, so the centre of a giant
component (a page copied a million times: a million edges, 16 MB) is one task's load; a
node whose edges alone exceed ``--task-memory`` is a one-line error saying what to raise.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from curate.partitions import bucket_counts, bucket_done, check_fits, hash_partition, mix64, read_buckets, write_buckets

EDGE_BYTES = 192  # one directed edge (16 bytes) with the temporaries of deduplicating, a star step and bucketing (measured)


# --------------------------------------------------------------------------- one round


def edge_digest(u: np.ndarray, v: np.ndarray) -> int:
    """An order-independent digest of a set of directed edges (sum of mixed hashes, mod 2^64)."""
    if len(u) == 0:
        return 0
    with np.errstate(over="ignore"):
        return int(np.sum(mix64(mix64(u.view(np.uint64)) ^ v.view(np.uint64)), dtype=np.uint64))


def _dedupe(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Directed edges sorted by (u, v), repeats and self-loops removed."""
    keep = u != v
    u, v = u[keep], v[keep]
    if len(u) == 0:
        return u, v
    order = np.lexsort((v, u))
    u, v = u[order], v[order]
    new = np.r_[True, (u[1:] != u[:-1]) | (v[1:] != v[:-1])]
    return u[new], v[new]


def star_step(u: np.ndarray, v: np.ndarray, op: str) -> tuple[np.ndarray, np.ndarray]:
    """One large-star or small-star over deduplicated directed edges sorted by u; returns new undirected edges (a, b)."""
    if len(u) == 0:
        return u, v
    starts = np.flatnonzero(np.r_[True, u[1:] != u[:-1]])
    node = u[starts]
    if op == "large":
        m = np.minimum(node, np.minimum.reduceat(v, starts))  # over every neighbour
        mine = np.repeat(m, np.diff(np.r_[starts, len(u)]))
        sel = v > u
        return v[sel], mine[sel]
    small = v < u  # small-star looks only at the smaller neighbours (and the node)
    vv = np.where(small, v, u)
    m = np.minimum.reduceat(vv, starts)
    mine = np.repeat(m, np.diff(np.r_[starts, len(u)]))
    a = np.concatenate([v[small], node])
    b = np.concatenate([mine[small], m])
    keep = a != b
    return a[keep], b[keep]


def is_star_forest(u: np.ndarray, v: np.ndarray) -> bool:
    """Whether every node with a smaller neighbour has exactly one neighbour (its component's centre)."""
    if len(u) == 0:
        return True
    starts = np.flatnonzero(np.r_[True, u[1:] != u[:-1]])
    degree = np.diff(np.r_[starts, len(u)])
    has_smaller = np.minimum.reduceat(v, starts) < u[starts]
    return bool(np.all(degree[has_smaller] == 1))


def labels(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(nodes, component)`` of a star forest: each node's smallest neighbour, or itself."""
    if len(u) == 0:
        return u, v
    starts = np.flatnonzero(np.r_[True, u[1:] != u[:-1]])
    node = u[starts]
    return node, np.minimum(node, np.minimum.reduceat(v, starts))


@dataclass
class RoundJob:
    """One partition of one round: read its edges from ``inputs``, apply ``op`` ("large", "small" or "label"), write ``out``."""

    part: int
    parts: int
    inputs: list[str]
    out: str
    op: str
    budget: int
    label_parts: int = 1  # for "label": the output's partitions (groups of input shards, by doc key)
    group_of_shard: Any = None  # for "label": an array shard -> group


def round_job(job: RoundJob) -> dict[str, Any]:
    """Run one round task (resumable: its output's offsets file marks it done; the stats are kept beside it)."""
    import json

    from curate.storage import as_path, write_json_atomic

    stats_path = as_path(job.out + ".json")
    if bucket_done(job.out) and stats_path.exists():
        return json.loads(stats_path.read_text())
    paths = [as_path(p) for p in job.inputs]
    rows = int(sum(bucket_counts(p)[job.part] for p in paths))
    check_fits(rows, EDGE_BYTES, job.budget, f"dedup fuzzy: the edges of connected-components partition {job.part}")
    cols = read_buckets(paths, [job.part], ["u", "v"])
    u, v = _dedupe(np.asarray(cols["u"], np.int64), np.asarray(cols["v"], np.int64))
    stats: dict[str, Any] = {"edges": int(len(u)), "digest": edge_digest(u, v), "stars": is_star_forest(u, v)}
    if job.op == "label":
        node, comp = labels(u, v)
        from curate.dedup.clusters import shard_of

        group = np.asarray(job.group_of_shard)[shard_of(node)] if len(node) else np.zeros(0, np.int64)
        write_buckets(job.out, {"doc": node, "component": comp}, group, job.label_parts)
        stats["nodes"] = int(len(node))
    else:
        a, b = star_step(u, v, job.op)
        uu, vv = np.concatenate([a, b]), np.concatenate([b, a])  # both directions
        write_buckets(job.out, {"u": uu, "v": vv}, hash_partition(uu, job.parts), job.parts)
    write_json_atomic(stats_path, stats)
    return stats


def round_paths(work: Path, round_no: int, parts: int) -> list[str]:
    return [str(work / "cc" / f"round-{round_no:03d}" / f"part-{p:05d}") for p in range(parts)]
