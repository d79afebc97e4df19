"""What exact and fuzzy dedup share: the plan (kept in ``_work/plan.json``) and the phases after the groups are known.

Both stages end the same way: a ``labels`` shuffle (each duplicate's doc key and the key of
its group, bucketed by shard group) goes through *attach* (per shard group: the members and
each component's best member there), *survivors* (per partition of components: the survivor
of each from those best members, and the cluster's size), *members* (per shard group: every
member's cluster) and *listing* (``clusters.py``), and the removal pass runs per input
shard. No task holds the members of a component: a component of any size costs one row per
shard group it spans in the reduction. :func:`finish` runs those
phases on the executor and returns the record's numbers and the removal pass's per-shard
stage. Every count it plans with is read from the files' sidecars, never gathered.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from typing import Any

from curate.dataset import open_parquet
from curate.dedup.clusters import (
    MEMBER_BYTES,
    ApplyClusters,
    AttachJob,
    FinalizeJob,
    ListingJob,
    ReduceJob,
    attach_job,
    finalize_job,
    listing_job,
    reduce_job,
    shard_groups,
)
from curate.partitions import Plan, min_partitions, plan_partitions, summed_counts
from curate.runtime import Context
from curate.stats import merge_counts
from curate.storage import AnyPath, as_path

LISTING_ROWS = 100_000  # rows per part of OUT/_clusters/ (the parts depend only on the data)


def shard_rows(files: list[AnyPath]) -> list[int]:
    return [open_parquet(f).metadata.num_rows for f in files]


def finish(ctx: Context, plan: Plan, labels: list[str], meta_of_group: Callable[[int, list[int]], list[str]],
           reason: str, *, tag: bool, dup_count: bool, tie_break_longest: bool, name: str,
           timings: dict[str, float]) -> tuple[dict[str, Any], Callable[[int, AnyPath], ApplyClusters]]:  # fmt: skip
    """Attach, reduce, finalize and listing over the ``labels`` shuffle; returns (the record's numbers, the removal pass per shard)."""
    work = ctx.work
    budget = plan.budget
    groups = int(plan.data["groups"])
    group_of_shard = plan.data["group_of_shard"]
    members_total = int(summed_counts([as_path(p) for p in labels], groups).sum()) if labels else 0
    reduce_parts = plan.get("survivor_parts", lambda: plan_partitions(members_total, MEMBER_BYTES, budget))
    listing_parts = plan.get("listing_parts", lambda: max(min_partitions(), math.ceil(members_total / LISTING_ROWS)))

    t = time.perf_counter()
    d = work / "clusters"
    members_in = [str(d / "attach" / f"g-{g:05d}.parquet") for g in range(groups)]
    partials = [str(d / "partials" / f"g-{g:05d}.arrow") for g in range(groups)]
    jobs = [AttachJob(g, labels, meta_of_group(g, [s for s, gg in enumerate(group_of_shard) if gg == g]), members_in[g], partials[g],
                      reduce_parts, tie_break_longest) for g in range(groups)]  # fmt: skip
    ctx.map(attach_job, jobs, labels=[f"group-{g:05d}" for g in range(groups)], desc=f"{name}: attach", unit="group")
    results = [str(d / "results" / f"c-{c:05d}.arrow") for c in range(reduce_parts)]
    rjobs = [ReduceJob(c, partials, results[c], groups, budget) for c in range(reduce_parts)]
    ctx.map(reduce_job, rjobs, labels=[f"part-{c:05d}" for c in range(reduce_parts)], desc=f"{name}: survivors", unit="part")
    members = [str(d / "members" / f"g-{g:05d}.parquet") for g in range(groups)]
    listing = [str(d / "listing" / f"g-{g:05d}.arrow") for g in range(groups)]
    fjobs = [FinalizeJob(g, members_in[g], results, members[g], listing[g], listing_parts) for g in range(groups)]
    ctx.map(finalize_job, fjobs, labels=[f"group-{g:05d}" for g in range(groups)], desc=f"{name}: members", unit="group")
    out = as_path(str(ctx.out)) / "_clusters"
    ljobs = [ListingJob(k, listing, str(out / f"part-{k:05d}.parquet")) for k in range(listing_parts)]
    ctx.map(listing_job, ljobs, labels=[f"part-{k:05d}" for k in range(listing_parts)], desc=f"{name}: clusters", unit="part")
    timings["clusters"] = time.perf_counter() - t
    stats: dict[str, Any] = {"members": 0, "clusters": 0, "removed": 0, "sizes": {}}
    for r in results:  # resumed tasks return the saved stats
        merge_counts(stats, json.loads(as_path(r + ".json").read_text()))

    def per_shard(i: int, _path: AnyPath) -> ApplyClusters:
        return ApplyClusters(members[int(group_of_shard[i])], i, reason, tag=tag, dup_count=dup_count)

    plan_info = {k: v for k, v in plan.data.items() if k not in ("group_of_shard", "chunks", "first_chunk")}
    return {"clusters": stats["clusters"], "cluster_sizes": stats["sizes"], "docs_in_clusters": stats["members"],
            "removed": stats["removed"], "plan": plan_info}, per_shard  # fmt: skip


def plan_groups(plan: Plan, files: list[AnyPath], rows_upper_bound: int) -> None:
    """Shard groups for the labels shuffle: enough that one group's members fit a task."""
    groups = plan.get("groups", lambda: min(len(files), plan_partitions(rows_upper_bound, MEMBER_BYTES, plan.budget)))
    plan.get("group_of_shard", lambda: shard_groups(shard_rows(files), groups))
