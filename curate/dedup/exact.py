"""Exact deduplication across all inputs: one 128-bit hash of normalised text per document.

Phase a (one task per chunk of an input shard) hashes every document and writes (hash, doc)
rows bucketed by hash range, and the documents' meta (id, source, rank, weight). Phase b
(one task per bucket: about 32 bytes per document, never all hashes in a process) sorts its
rows and writes every run of equal hashes (two or more documents) as group members. The
groups then go through the phases fuzzy dedup ends with (``plan.finish``): each group keeps
the document of the best priority (ties: the smallest id), and the removal pass drops the
others (``exact_dup``, with ``dup_of``). ``--task-memory`` sizes the chunks and buckets.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from curate.dataset import iter_tables, open_parquet
from curate.dedup.clusters import doc_key, shard_of
from curate.dedup.fuzzy import DEDUP_OPTION_HELP, DEDUP_OPTIONS, PRIORITY_HELP
from curate.dedup.plan import finish, plan_groups, shard_rows
from curate.dedup.signatures import META_SCHEMA, plan_chunks
from curate.errors import CurateError
from curate.formats.parquet import write_table_atomic
from curate.partitions import (
    TASK_MEMORY_HELP,
    Plan,
    bucket_counts,
    bucket_done,
    budget_of,
    check_fits,
    plan_partitions,
    range_partition,
    read_buckets,
    write_buckets,
)
from curate.registry import stage
from curate.runtime import Context, Stage, param
from curate.schema import source_rank
from curate.storage import as_path

log = logging.getLogger("curate")

NORMALIZATIONS = ("lower", "whitespace", "punct")


def check_priority_and_normalize(stage: Any) -> None:
    """Split a stage's ``priority`` and ``normalize`` given as one comma-separated string; refuse an unknown normalisation."""
    for name in ("priority", "normalize"):
        value = getattr(stage, name)
        if isinstance(value, str):
            setattr(stage, name, [p.strip() for p in value.split(",") if p.strip()])
    bad = [n for n in stage.normalize if n not in NORMALIZATIONS]
    if bad:
        raise CurateError(f"unknown normalisation {bad[0]!r}; choose from {', '.join(NORMALIZATIONS)}")


def normalize_texts(texts: pa.Array | pa.ChunkedArray, ops: list[str]) -> pa.Array:
    """Apply the chosen normalisations with Arrow kernels (lower, punct removal, whitespace folding)."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if "lower" in ops:
        texts = pc.utf8_lower(texts)
    if "punct" in ops:
        texts = pc.replace_substring_regex(texts, r"[^\p{L}\p{N}\p{M}\s]+", "")
    if "whitespace" in ops:
        texts = pc.utf8_trim_whitespace(pc.replace_substring_regex(texts, r"\s+", " "))
    return texts


HASH_BYTES = 128  # one (hash, doc) row in a bucket task, with its sort (measured)
HASH_DOC_BYTES = 1024  # what a hash task holds per document of its chunk (the text of one batch, its meta row)


@dataclass
class HashJob:
    chunk: int
    shard: int
    start: int
    stop: int
    path: str
    work: str
    buckets: int
    priority: list[str]
    normalize: list[str]


def hash_job(job: HashJob) -> dict[str, Any]:
    """128-bit hashes of one chunk's normalised texts, bucketed by hash range; its meta last (the done marker)."""
    work = as_path(job.work)
    meta_path = work / "hash" / f"c-{job.chunk:06d}.meta.parquet"
    if meta_path.exists():
        return {"skipped": 1}
    rank = source_rank(job.priority)
    names = [c for c in ("id", "text", "source", "dup_count") if c in open_parquet(as_path(job.path)).schema_arrow.names]
    metas, his, los, docs = [], [], [], []
    at = job.start
    for table in iter_tables(as_path(job.path), names, rows=(job.start, job.stop)):
        n = table.num_rows
        if n == 0:
            continue
        norm = normalize_texts(table.column("text"), job.normalize).cast(pa.large_binary()).to_pylist()
        digests = [xxhash.xxh3_128_intdigest(t) for t in norm]
        his.append(np.array([d >> 64 for d in digests], np.uint64))
        los.append(np.array([d & 0xFFFFFFFFFFFFFFFF for d in digests], np.uint64))
        keys = doc_key(job.shard, np.arange(at, at + n))
        at += n
        docs.append(keys)
        ranks = pa.array([rank(s) for s in table.column("source").to_pylist()], pa.int32())
        weight = table.column("dup_count").cast(pa.int64()).fill_null(1) if "dup_count" in names else pa.array(np.ones(n, np.int64))
        metas.append(pa.table({"doc": keys, "id": table.column("id"), "source": table.column("source"), "rank": ranks,
                               "length": pc.utf8_length(table.column("text")).cast(pa.int64()),
                               "shingles": pa.array(np.zeros(n, np.int32)), "weight": weight}).cast(META_SCHEMA))  # fmt: skip
    hi = np.concatenate(his) if his else np.zeros(0, np.uint64)
    cols = {"hi": hi, "lo": np.concatenate(los) if los else np.zeros(0, np.uint64),
            "doc": np.concatenate(docs) if docs else np.zeros(0, np.int64)}  # fmt: skip
    write_buckets(work / "hash" / f"c-{job.chunk:06d}", cols, range_partition(hi, job.buckets), job.buckets)
    write_table_atomic(meta_path, pa.concat_tables(metas) if metas else META_SCHEMA.empty_table())
    return {"docs": int(len(hi))}


@dataclass
class BucketJob:
    bucket: int
    inputs: list[str]
    out: str
    groups: int
    group_of_shard: list[int]
    budget: int


def bucket_job(job: BucketJob) -> dict[str, Any]:
    """The groups of identical texts of one hash range: each member's doc key and its group's (the smallest doc key)."""
    out = as_path(job.out)
    if bucket_done(out):
        return {"skipped": 1}
    paths = [as_path(p) for p in job.inputs]
    rows = int(sum(bucket_counts(p)[job.bucket] for p in paths))
    check_fits(rows, HASH_BYTES, job.budget, f"dedup exact: hash bucket {job.bucket}")
    c = read_buckets(paths, [job.bucket], ["hi", "lo", "doc"])
    hi, lo, doc = np.asarray(c["hi"], np.uint64), np.asarray(c["lo"], np.uint64), np.asarray(c["doc"], np.int64)
    order = np.lexsort((doc, lo, hi))
    hi, lo, doc = hi[order], lo[order], doc[order]
    n = len(hi)
    new_run = np.ones(n, bool)
    if n > 1:
        new_run[1:] = (hi[1:] != hi[:-1]) | (lo[1:] != lo[:-1])
    run_id = np.cumsum(new_run) - 1
    run_size = np.bincount(run_id) if n else np.zeros(0, np.int64)
    in_dup = run_size[run_id] >= 2 if n else np.zeros(0, bool)
    first_doc = doc[np.maximum.accumulate(np.where(new_run, np.arange(n), 0))] if n else np.zeros(0, np.int64)
    members, groups = doc[in_dup], first_doc[in_dup]
    g = np.asarray(job.group_of_shard, np.int64)[shard_of(members)] if len(members) else np.zeros(0, np.int64)
    write_buckets(out, {"doc": members, "component": groups}, g, job.groups)
    return {"docs": n, "duplicates": int(in_dup.sum() - new_run[in_dup].sum())}


@stage("dedup exact", section="deduplicate", order=10)
@dataclass
class ExactDedup(Stage):
    """Drop documents whose normalised text appeared before, across all inputs.

    Of each group of identical texts the document of the best --priority source is kept
    (ties: the smallest id); the others are rejected with reason exact_dup and dup_of.
    Every kept document gets dup_count (the identical documents it stands for).
    OUT/_clusters/ lists every group (id, cluster, source, kept, dup_count).

    \b
    Example:
      curate dedup exact --in out/langid --in out/cc_langid --out out/exact \\
          --priority 'pile/Wikipedia,pile/*,cc/*'
    """

    name: ClassVar[str] = "dedup_exact"
    sections: ClassVar[dict[str, str]] = {"dedup": "dedup"}
    kind: ClassVar[str] = "global"
    options: ClassVar[tuple[str, ...]] = DEDUP_OPTIONS
    option_help: ClassVar[dict[str, str]] = DEDUP_OPTION_HELP
    priority: list[str] = param([], PRIORITY_HELP, metavar="SRC,...", multiple=True, split=True)
    normalize: list[str] = param(["lower", "whitespace"], "Normalisations before hashing: any of lower, whitespace, punct "
                                 "(comma-separated; '' for none).", metavar="OPS", multiple=True, split=True)  # fmt: skip
    dup_count: bool = param(True, "Give every kept document dup_count: how many identical documents of the input it stands "
                            "for (for up-weighting; dedup fuzzy adds its clusters' on top).", secondary="--no-dup-count")  # fmt: skip
    task_memory: str | None = param(None, TASK_MEMORY_HELP, metavar="SIZE", record=False)

    def __post_init__(self) -> None:
        check_priority_and_normalize(self)

    def summary(self, record: dict[str, Any]) -> list[str]:
        d = record.get("dedup", {})
        return [*super().summary(record), f"  clusters: {d.get('clusters', 0):,}  sizes: {d.get('cluster_sizes', {})}"]

    def run(self, ctx: Context) -> dict[str, Any]:
        """Hash and group all inputs, then the removal pass."""
        files = ctx.files
        work = ctx.work
        plan = Plan(work, budget_of(self.task_memory, ctx))
        budget = plan.budget
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        total = sum(shard_rows(files))
        chunk_rows = plan.get("chunk_rows", lambda: max(1024, budget // 2 // HASH_DOC_BYTES))
        chunks = plan.get("chunks", lambda: plan_chunks(files, chunk_rows)[0])
        buckets = plan.get("buckets", lambda: plan_partitions(total, HASH_BYTES, budget, power_of_two=True))
        jobs = [HashJob(k, s_, a_, b_, str(files[s_]), str(work), buckets, self.priority, self.normalize)
                for k, (s_, a_, b_) in enumerate(chunks)]  # fmt: skip
        ctx.map(hash_job, jobs, labels=[f"chunk-{k:06d}" for k in range(len(chunks))], desc="dedup exact: hashes", unit="chunk")
        plan_groups(plan, files, total)
        inputs = [str(work / "hash" / f"c-{k:06d}") for k in range(len(chunks))]
        labels = [str(work / "dups" / f"b-{b:05d}") for b in range(buckets)]
        groups, group_of_shard = int(plan.data["groups"]), plan.data["group_of_shard"]
        bjobs = [BucketJob(b, inputs, labels[b], groups, group_of_shard, budget) for b in range(buckets)]
        ctx.map(bucket_job, bjobs, labels=[f"bucket-{b:05d}" for b in range(buckets)], desc="dedup exact: buckets", unit="bucket")
        timings["hash_and_group"] = time.perf_counter() - t0

        def meta_of_group(_g: int, shards: list[int]) -> list[str]:
            wanted = set(shards)
            return [str(work / "hash" / f"c-{k:06d}.meta.parquet") for k, (s_, _a, _b) in enumerate(chunks) if s_ in wanted]

        numbers, per_shard = finish(ctx, plan, labels, meta_of_group, "exact_dup", tag=False, dup_count=self.dup_count,
                                    tie_break_longest=False, name="dedup exact", timings=timings)  # fmt: skip

        def record(merged: dict[str, Any]) -> dict[str, Any]:
            return {"dedup": {"clusters": numbers["clusters"], "cluster_sizes": numbers["cluster_sizes"],
                              "docs_in_clusters": numbers["docs_in_clusters"], "plan": numbers["plan"],
                              "phase_seconds": {k: round(v, 3) for k, v in timings.items()}}}  # fmt: skip

        return ctx.map_pass(per_shard=per_shard, finish=record)
