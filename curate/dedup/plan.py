"""What exact and fuzzy dedup share: the plan (kept in ``_work/plan.json``) and the phases after the groups are known.

Both stages end the same way: a ``labels`` shuffle (each duplicate's doc key and the key of
its group, bucketed by shard group) goes through *attach*, *survivors* and *listing*
(``clusters.py``), and the removal pass runs per input shard. :func:`finish` runs those
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
    ListingJob,
    SurvivorJob,
    attach_job,
    listing_job,
    shard_groups,
    survivor_job,
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
    """Attach, survivors and listing over the ``labels`` shuffle; returns (the record's numbers, the removal pass per shard)."""
    work = ctx.work
    budget = plan.budget
    groups = int(plan.data["groups"])
    group_of_shard = plan.data["group_of_shard"]
    members_total = int(summed_counts([as_path(p) for p in labels], groups).sum()) if labels else 0
    survivor_parts = plan.get("survivor_parts", lambda: plan_partitions(members_total, MEMBER_BYTES, budget))
    listing_parts = plan.get("listing_parts", lambda: max(min_partitions(), math.ceil(members_total / LISTING_ROWS)))

    t = time.perf_counter()
    attach = [str(work / "clusters" / "attach" / f"g-{g:05d}.arrow") for g in range(groups)]
    jobs = [AttachJob(g, labels, meta_of_group(g, [s for s, gg in enumerate(group_of_shard) if gg == g]), attach[g], survivor_parts)
            for g in range(groups)]  # fmt: skip
    ctx.map(attach_job, jobs, labels=[f"group-{g:05d}" for g in range(groups)], desc=f"{name}: attach", unit="group")
    members = [str(work / "clusters" / "members" / f"c-{c:05d}.arrow") for c in range(survivor_parts)]
    listing = [str(work / "clusters" / "listing" / f"c-{c:05d}.arrow") for c in range(survivor_parts)]
    sjobs = [SurvivorJob(c, attach, members[c], listing[c], groups, group_of_shard, listing_parts, budget, tie_break_longest)
             for c in range(survivor_parts)]  # fmt: skip
    results = ctx.map(survivor_job, sjobs, labels=[f"part-{c:05d}" for c in range(survivor_parts)], desc=f"{name}: survivors",
                      unit="part")  # fmt: skip
    out = as_path(str(ctx.out)) / "_clusters"
    ljobs = [ListingJob(k, listing, str(out / f"part-{k:05d}.parquet")) for k in range(listing_parts)]
    ctx.map(listing_job, ljobs, labels=[f"part-{k:05d}" for k in range(listing_parts)], desc=f"{name}: clusters", unit="part")
    timings["clusters"] = time.perf_counter() - t
    stats: dict[str, Any] = {"members": 0, "clusters": 0, "removed": 0, "sizes": {}}
    for r in (json.loads(as_path(m + ".json").read_text()) for m in members):  # resumed tasks return the saved stats
        merge_counts(stats, r)
    del results

    def per_shard(i: int, _path: AnyPath) -> ApplyClusters:
        return ApplyClusters(members, int(group_of_shard[i]), i, reason, tag=tag, dup_count=dup_count)

    plan_info = {k: v for k, v in plan.data.items() if k not in ("group_of_shard", "chunks", "first_chunk")}
    return {"clusters": stats["clusters"], "cluster_sizes": stats["sizes"], "docs_in_clusters": stats["members"],
            "removed": stats["removed"], "plan": plan_info}, per_shard  # fmt: skip


def plan_groups(plan: Plan, files: list[AnyPath], rows_upper_bound: int) -> None:
    """Shard groups for the labels shuffle: enough that one group's members fit a task."""
    groups = plan.get("groups", lambda: min(len(files), plan_partitions(rows_upper_bound, MEMBER_BYTES, plan.budget)))
    plan.get("group_of_shard", lambda: shard_groups(shard_rows(files), groups))
