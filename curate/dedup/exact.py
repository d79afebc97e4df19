"""Exact deduplication across all inputs: one 128-bit hash of normalised text per document.

Phase a hashes every document and writes (hash, doc, rank, id, source) into buckets by
hash (``_work/hashes/bucket-BB/part-S.parquet``), so phase b holds one bucket, never all
hashes, in a process: 16 bytes of hash + 8 of doc key + 4 of rank + the id per document.
Phase b sorts each bucket and keeps, of every run of equal hashes, the document of the
best priority (ties: the smallest id). The removal pass is shared with fuzzy dedup.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from curate.dataset import iter_tables, open_parquet
from curate.dedup.clusters import ApplyClusters, cluster_size_histogram, doc_key
from curate.dedup.fuzzy import DEDUP_OPTION_HELP, DEDUP_OPTIONS, PRIORITY_HELP, write_clusters
from curate.errors import CurateError
from curate.formats.parquet import write_table_atomic
from curate.registry import stage
from curate.runtime import Context, Stage, param
from curate.schema import source_rank
from curate.storage import read_parquet
from curate.targets import shard_name

log = logging.getLogger("curate")

NORMALIZATIONS = ("lower", "whitespace", "punct")
DOCS_PER_BUCKET = 4_000_000


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


@dataclass
class _HashJob:
    index: int
    path: Path
    work: Path
    buckets: int
    priority: list[str]
    normalize: list[str]


def _hash_job(job: _HashJob) -> dict[str, Any]:
    done = job.work / "hashes" / "_done" / f"part-{job.index:05d}"
    if done.exists():
        return {"skipped": 1}
    rank = source_rank(job.priority)
    parts: list[pa.Table] = []
    row = 0
    for table in iter_tables(job.path, ["id", "text", "source"]):
        n = table.num_rows
        if n == 0:
            continue
        norm = normalize_texts(table.column("text"), job.normalize).cast(pa.large_binary()).to_pylist()
        digests = [xxhash.xxh3_128_intdigest(t) for t in norm]
        hi = np.array([d >> 64 for d in digests], np.uint64)
        lo = np.array([d & 0xFFFFFFFFFFFFFFFF for d in digests], np.uint64)
        parts.append(
            pa.table(
                {
                    "hi": hi,
                    "lo": lo,
                    "doc": doc_key(job.index, np.arange(row, row + n)),
                    "rank": pa.array([rank(s) for s in table.column("source").to_pylist()], pa.int32()),
                    "id": table.column("id"),
                    "source": table.column("source"),
                }
            )
        )
        row += n
    if parts:
        t = pa.concat_tables(parts)
    else:
        t = pa.table({"hi": pa.array([], pa.uint64()), "lo": pa.array([], pa.uint64()), "doc": pa.array([], pa.int64()),
                      "rank": pa.array([], pa.int32()), "id": pa.array([], pa.string()), "source": pa.array([], pa.string())})  # fmt: skip
    bucket = (t.column("hi").to_numpy() % np.uint64(job.buckets)).astype(np.int64)
    for b in range(job.buckets):
        write_table_atomic(job.work / "hashes" / f"bucket-{b:03d}" / f"part-{job.index:05d}.parquet", t.filter(pa.array(bucket == b)))
    done.parent.mkdir(parents=True, exist_ok=True)
    done.touch()
    return {"docs": row}


@dataclass
class _BucketJob:
    bucket: int
    work: Path
    shards: int


def _bucket_job(job: _BucketJob) -> dict[str, Any]:
    out = job.work / "dups" / f"bucket-{job.bucket:03d}.parquet"
    if out.exists():
        return {"skipped": 1}
    d = job.work / "hashes" / f"bucket-{job.bucket:03d}"
    t = pa.concat_tables([read_parquet(d / f"part-{s:05d}.parquet") for s in range(job.shards)])
    t = t.take(pc.sort_indices(t, sort_keys=[("hi", "ascending"), ("lo", "ascending"), ("rank", "ascending"), ("id", "ascending")]))
    hi, lo = t.column("hi").to_numpy(), t.column("lo").to_numpy()
    n = len(hi)
    new_run = np.ones(n, bool)
    if n > 1:
        new_run[1:] = (hi[1:] != hi[:-1]) | (lo[1:] != lo[:-1])
    run_id = np.cumsum(new_run) - 1
    run_size = np.bincount(run_id, minlength=int(run_id[-1]) + 1 if n else 0)
    in_dup = run_size[run_id] >= 2 if n else np.zeros(0, bool)
    first_idx = np.maximum.accumulate(np.where(new_run, np.arange(n), 0)) if n else np.zeros(0, np.int64)
    sel = pa.array(in_dup)
    ids = t.column("id")
    dups = pa.table(
        {
            "id": ids.filter(sel),
            "cluster": ids.take(pa.array(first_idx[in_dup])),
            "source": t.column("source").filter(sel),
            "kept": pa.array(new_run[in_dup]),
            "doc": t.column("doc").filter(sel),
        }
    )
    write_table_atomic(out, dups)
    return {"docs": n, "duplicates": int(in_dup.sum() - new_run[in_dup].sum())}


@stage("dedup exact", section="deduplicate", order=10)
@dataclass
class ExactDedup(Stage):
    """Drop documents whose normalised text appeared before, across all inputs.

    Of each group of identical texts the document of the best --priority source is kept
    (ties: the smallest id); the others are rejected with reason exact_dup and dup_of.
    OUT/_clusters.parquet lists every group (id, cluster, source, kept).

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
    buckets: int | None = param(None, "Hash buckets of phase b [default: one per 4M documents, at most 256].", min=1, record=False)

    def __post_init__(self) -> None:
        for name in ("priority", "normalize"):
            value = getattr(self, name)
            if isinstance(value, str):
                setattr(self, name, [p.strip() for p in value.split(",") if p.strip()])
        bad = [n for n in self.normalize if n not in NORMALIZATIONS]
        if bad:
            raise CurateError(f"unknown normalisation {bad[0]!r}; choose from {', '.join(NORMALIZATIONS)}")

    def summary(self, record: dict[str, Any]) -> list[str]:
        d = record.get("dedup", {})
        return [*super().summary(record), f"  clusters: {d.get('clusters', 0):,}  sizes: {d.get('cluster_sizes', {})}"]

    def run(self, ctx: Context) -> dict[str, Any]:
        """Hash and group all inputs, then the removal pass."""
        files = ctx.files
        work = ctx.work
        buckets = self.buckets
        if buckets is None:
            total = sum(open_parquet(f).metadata.num_rows for f in files)
            buckets = max(1, min(256, math.ceil(total / DOCS_PER_BUCKET)))
        t0 = time.perf_counter()
        jobs = [_HashJob(i, f, work, buckets, self.priority, self.normalize) for i, f in enumerate(files)]
        ctx.map(_hash_job, jobs, labels=[shard_name(i) for i in range(len(files))], desc="dedup exact: hashes")
        bjobs = [_BucketJob(b, work, len(files)) for b in range(buckets)]
        ctx.map(_bucket_job, bjobs, labels=[f"bucket-{b:03d}" for b in range(buckets)], desc="dedup exact: buckets", unit="bucket")
        clusters_path = ctx.out / "_clusters.parquet"
        if not clusters_path.exists():
            dups = pa.concat_tables([read_parquet(work / "dups" / f"bucket-{b:03d}.parquet") for b in range(buckets)])
            dups = dups.take(pc.sort_indices(dups, sort_keys=[("cluster", "ascending"), ("id", "ascending")]))
            write_clusters(work, ctx.out, dups, len(files))
        clusters = read_parquet(clusters_path)
        seconds = time.perf_counter() - t0

        def finish(merged: dict[str, Any]) -> dict[str, Any]:
            return {
                "dedup": {
                    "buckets": buckets,
                    "clusters": int(clusters.filter(clusters.column("kept")).num_rows),
                    "cluster_sizes": cluster_size_histogram(clusters),
                    "phase_seconds": {"hash_and_group": round(seconds, 3)},
                }
            }

        members = work / "members"
        return ctx.map_pass(per_shard=lambda i, f: ApplyClusters(str(members / f"part-{i:05d}.parquet"), "exact_dup", tag=False),
                            finish=finish)  # fmt: skip
