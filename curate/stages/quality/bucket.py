"""Percentile buckets of score columns (``curate quality bucket``): exact weighted thresholds over the whole input, in bounded memory.

Nemotron-CC's ensemble: each classifier's scores are mapped to ``B`` percentile buckets over the
corpus (each bucket holding about 1/B of the tokens, or of the documents), and a document's
bucket is the maximum over the classifiers. Thresholds: of column c with weights ``w`` (``W``
in all, NaN scores left out), ``t_k`` is the smallest score whose cumulative weight (of every
score <= it) reaches ``k * W / B``, for k = 1 .. B-1; a document's bucket in c is how many
thresholds its score exceeds (0 .. B-1).

Exact, without sorting or holding the scores: every float32 maps to a uint32 that sorts as the
float does. Phase 1 (a task per shard) counts documents and sums the integer weights per value
of the top 20 bits (sparse, per shard); the sums, merged in the driver (2^20 bins, 16 MB per
column), place each threshold in one bin. Phase 2 (a task per shard) sums the weights of the
values in those bins by their low 12 bits (B-1 x 4096 bins per column), which places each
threshold on one float value. Integer sums, in any order: the same thresholds for any worker
count, executor or sharding. A map pass then writes ``quality_bucket`` (int8; null when every
column is NaN).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.dataset import iter_tables
from curate.errors import CurateError
from curate.partitions import TASK_MEMORY_HELP, budget_of, check_fits, format_size
from curate.registry import stage
from curate.runtime import MAP_OPTIONS, Batch, Context, Counters, Decisions, DocStage, Stage, param
from curate.storage import as_path, np_load, rmtree, save_npy_atomic

HI_BITS, LO_BITS = 20, 12
WEIGHTS = ("tokens", "docs")
BUCKET_FIELD = pa.field("quality_bucket", pa.int8())


def sortable(scores: np.ndarray) -> np.ndarray:
    """uint32 keys that sort as the float32 scores do (negative floats have their bits flipped, others their sign bit set)."""
    bits = np.ascontiguousarray(scores, dtype=np.float32).view(np.uint32)
    return np.where(bits >> np.uint32(31), ~bits, bits | np.uint32(0x80000000)).astype(np.uint32)


def unsortable(keys: np.ndarray) -> np.ndarray:
    """The float32 values of :func:`sortable` keys."""
    keys = np.asarray(keys, dtype=np.uint32)
    return np.where(keys >> np.uint32(31), keys & np.uint32(0x7FFFFFFF), ~keys).astype(np.uint32).view(np.float32)


def weights_of(table: pa.Table, weight: str) -> np.ndarray:
    """Each document's weight: 1, or its tokens, counted as runs of non-space characters (a tokenizer-free proxy)."""
    if weight == "docs":
        return np.ones(table.num_rows, np.int64)
    counts = pc.count_substring_regex(table.column("text"), r"\S+")
    return np.asarray(counts.fill_null(0).to_numpy(zero_copy_only=False), np.int64)


def crossings(counts_w: np.ndarray, total: int, buckets: int, below: np.ndarray | None = None) -> np.ndarray:
    """For k = 1..B-1, the index of the bin where the cumulative weight (plus ``below[k]``) first reaches k * W / B."""
    cum = np.cumsum(counts_w, dtype=np.int64)
    ks = np.arange(1, buckets, dtype=np.int64)
    need = ks * total  # compare cum * B >= k * W in integers
    if below is None:
        return np.searchsorted(cum * buckets, need, side="left")
    return np.array([np.searchsorted((cum + below[i]) * buckets, need[i], side="left") for i in range(len(ks))], np.int64)


@dataclass
class HistJob:
    path: str
    out: str
    columns: list[str]
    weight: str


def hist_job(job: HistJob) -> dict[str, Any]:
    """Per column: the (top-20-bit bin, documents, weight) of one shard's scores, sparse, into ``out``."""
    out = as_path(job.out)
    if as_path(job.out + ".done.npy").exists():
        return {"skipped": 1}
    bins: dict[str, list[np.ndarray]] = {c: [] for c in job.columns}
    ws: dict[str, list[np.ndarray]] = {c: [] for c in job.columns}
    names = [*job.columns, "text"] if job.weight == "tokens" else list(job.columns)
    for table in iter_tables(as_path(job.path), names):
        w = weights_of(table, job.weight)
        for c in job.columns:
            s = np.asarray(table.column(c).to_numpy(zero_copy_only=False), np.float32)
            ok = ~np.isnan(s)
            bins[c].append((sortable(s[ok]) >> np.uint32(LO_BITS)).astype(np.int64))
            ws[c].append(w[ok])
    for i, c in enumerate(job.columns):
        b = np.concatenate(bins[c]) if bins[c] else np.zeros(0, np.int64)
        w = np.concatenate(ws[c]) if ws[c] else np.zeros(0, np.int64)
        uniq, inv = np.unique(b, return_inverse=True)
        save_npy_atomic(as_path(f"{out}.{i}.npy"), np.stack([uniq, np.bincount(inv, minlength=len(uniq)),
                                                             np.bincount(inv, weights=w, minlength=len(uniq)).astype(np.int64)]))  # fmt: skip
    save_npy_atomic(as_path(job.out + ".done.npy"), np.ones(1, np.int8))
    return {"docs": int(sum(len(w) for w in ws[job.columns[0]]))}


@dataclass
class RefineJob:
    path: str
    columns: list[str]
    weight: str
    bins: list[list[int]]  # per column: the top-bit bin of each threshold


def refine_job(job: RefineJob) -> dict[str, Any]:
    """Per column and threshold: the weight of this shard's scores in the threshold's bin, by their low 12 bits."""
    lo_size = 1 << LO_BITS
    sums = [np.zeros((len(b), lo_size), np.int64) for b in job.bins]
    names = [*job.columns, "text"] if job.weight == "tokens" else list(job.columns)
    wanted = [np.array(b, np.int64) for b in job.bins]
    for table in iter_tables(as_path(job.path), names):
        w = weights_of(table, job.weight)
        for i, c in enumerate(job.columns):
            s = np.asarray(table.column(c).to_numpy(zero_copy_only=False), np.float32)
            ok = ~np.isnan(s)
            keys, wk = sortable(s[ok]), w[ok]
            hi = (keys >> np.uint32(LO_BITS)).astype(np.int64)
            for k, b in enumerate(wanted[i]):
                m = hi == b
                if m.any():
                    sums[i][k] += np.bincount((keys[m] & np.uint32(lo_size - 1)).astype(np.int64), weights=wk[m], minlength=lo_size).astype(
                        np.int64
                    )
    return {"sums": sums}


def thresholds_from(hists: list[np.ndarray], buckets: int) -> tuple[np.ndarray, int, int]:
    """Merged sparse histograms of one column -> (dense weights by top bits, total weight, documents)."""
    dense = np.zeros(1 << HI_BITS, np.int64)
    docs = 0
    for h in hists:
        if h.shape[1]:
            dense[h[0]] += h[2]  # a shard's bins are unique
            docs += int(h[1].sum())
    return dense, int(dense.sum()), docs


@dataclass
class AssignBuckets(DocStage):
    """The map pass: each document's bucket in every column, and the maximum (``quality_bucket``)."""

    columns: list[str] = field(default_factory=list)
    thresholds: list[list[float]] = field(default_factory=list)
    weight: str = "tokens"
    min_bucket: int | None = None
    max_bucket: int | None = None

    def decide_batch(self, batch: Batch) -> Decisions:
        table = batch.table
        n = table.num_rows
        best = np.full(n, -1, np.int64)
        for c, t in zip(self.columns, self.thresholds):
            s = np.asarray(table.column(c).to_numpy(zero_copy_only=False), np.float32)
            b = np.searchsorted(np.asarray(t, np.float32), s, side="left")  # thresholds strictly below the score
            b = np.where(np.isnan(s), -1, b)
            best = np.maximum(best, b)
        valid = best >= 0
        w = weights_of(table, self.weight) if n else np.zeros(0, np.int64)
        counters = Counters()
        for k in np.unique(best[valid]).tolist():
            m = best == k
            counters.add("bucket_docs", str(k), n=int(m.sum()))
            counters.add("bucket_weight", str(k), n=int(w[m].sum()))
        if (~valid).any():
            counters.add("unbucketed", n=int((~valid).sum()))
        arr = pa.array(best.astype(np.int8), BUCKET_FIELD.type, mask=~valid)
        reasons = None
        if self.min_bucket is not None or self.max_bucket is not None:  # outside the range, or no bucket at all: dropped
            lo, hi = self.min_bucket or 0, 127 if self.max_bucket is None else self.max_bucket
            reasons = [None if lo <= k <= hi else "quality_bucket" for k in best.tolist()]
        return Decisions(reasons, columns={BUCKET_FIELD: arr}, counters=counters)


@stage("quality bucket", section="select", order=42)
@dataclass
class QualityBucket(Stage):
    """Percentile buckets of score columns over the whole input; quality_bucket (int8) = the maximum bucket over the columns.

    Each column's B-1 thresholds split its scores into B buckets of equal weight (tokens: runs
    of non-space characters; or docs), computed exactly over every input shard (two histogram
    passes, bounded memory, the same for any --workers). NaN scores are left out; a document
    with no score in any column gets a null bucket. _SUCCESS holds the thresholds (`buckets`).
    --min-bucket K / --max-bucket L keep only documents of buckets K..L (the others: reason quality_bucket).

    \b
    Example (Nemotron-CC-style ensemble of two classifiers):
      curate quality bucket --in out/scored --columns dclm_score,ours --buckets 20 --weight tokens --out out/bucketed
    """

    name: ClassVar[str] = "quality_bucket"
    title: ClassVar[str] = "quality bucket"
    kind: ClassVar[str] = "global"
    options: ClassVar[tuple[str, ...]] = tuple(o for o in MAP_OPTIONS if o != "only_sources")  # thresholds are over every document
    columns: list[str] = param(help="Score columns (float; comma-separated or repeated).", metavar="A,B", multiple=True, split=True,
                               required=True)  # fmt: skip
    buckets: int = param(20, "Buckets per column (Nemotron-CC: 20).", min=2, max=127)
    weight: str = param("tokens", "What each bucket holds an equal share of: tokens (runs of non-space characters) or docs.",
                        choices=WEIGHTS)  # fmt: skip
    min_bucket: int | None = param(None, "Keep only documents whose quality_bucket is at least this (the others: reason "
                                   "quality_bucket; a document with no bucket too) [default: keep all].", min=0,
                                   show_default=False)  # fmt: skip
    max_bucket: int | None = param(None, "Keep only documents whose quality_bucket is at most this (with --min-bucket: a range, "
                                   "e.g. one part of a blend) [default: no upper bound].", min=0, show_default=False)  # fmt: skip
    task_memory: str | None = param(None, TASK_MEMORY_HELP, metavar="SIZE", record=False)

    def __post_init__(self) -> None:
        if self.max_bucket is not None and not 0 <= self.max_bucket < self.buckets:
            raise CurateError(f"--max-bucket must be between 0 and {self.buckets - 1} (--buckets {self.buckets}), got {self.max_bucket}")
        if self.min_bucket is not None and self.max_bucket is not None and self.min_bucket > self.max_bucket:
            raise CurateError(f"--min-bucket {self.min_bucket} is above --max-bucket {self.max_bucket}")
        if self.min_bucket is not None and not 0 <= self.min_bucket < self.buckets:
            raise CurateError(f"--min-bucket must be between 0 and {self.buckets - 1} (--buckets {self.buckets}), got {self.min_bucket}")
        if isinstance(self.columns, str):
            self.columns = [self.columns]
        self.columns = [c.strip() for v in self.columns for c in v.split(",") if c.strip()]
        if not self.columns:
            raise CurateError("--columns: name at least one score column")
        if len(set(self.columns)) != len(self.columns):
            raise CurateError(f"--columns names a column twice: {', '.join(self.columns)}")
        if self.weight not in WEIGHTS:
            raise CurateError(f"unknown --weight {self.weight!r}; choose one of: {', '.join(WEIGHTS)}")
        if not 2 <= self.buckets <= 127:
            raise CurateError(f"--buckets must be between 2 and 127 (an int8 column), got {self.buckets}")

    @property
    def required_columns(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("id", "text", "source", *self.columns)

    def summary(self, record: dict[str, Any]) -> list[str]:
        lines = super().summary(record)
        for c, v in record.get("buckets", {}).get("columns", {}).items():
            t = v.get("thresholds", [])
            shown = ", ".join(f"{x:.4g}" for x in t[:3]) + (" ... " + ", ".join(f"{x:.4g}" for x in t[-2:]) if len(t) > 3 else "")
            lines.append(f"  {c}: {v.get('scored', 0):,} scored, thresholds {shown}")
        return lines

    def run(self, ctx: Context) -> dict[str, Any]:
        budget = budget_of(self.task_memory, ctx)
        n_cols, b = len(self.columns), self.buckets
        check_fits(n_cols, 2 * (1 << HI_BITS) * 8 + b * (1 << LO_BITS) * 8, budget, "quality bucket: the histograms")
        t0 = time.perf_counter()
        files, work = ctx.files, ctx.work
        outs = [str(work / "hist" / f"s-{i:06d}") for i in range(len(files))]
        jobs = [HistJob(str(f), o, self.columns, self.weight) for f, o in zip(files, outs)]
        ctx.map(hist_job, jobs, labels=[f"shard-{i:06d}" for i in range(len(files))], desc="quality bucket: histograms", unit="shard")
        dense, totals, docs, bins = [], [], [], []
        for i in range(n_cols):
            d, total, n = thresholds_from([np.asarray(np_load(as_path(f"{o}.{i}.npy"), mmap=False)) for o in outs], b)
            dense.append(d)
            totals.append(total)
            docs.append(n)
            bins.append(crossings(d, total, b).tolist() if total else [])
        rjobs = [RefineJob(str(f), self.columns, self.weight, bins) for f in files]
        results = ctx.map(refine_job, rjobs, labels=[f"shard-{i:06d}" for i in range(len(files))], desc="quality bucket: thresholds",
                          unit="shard")  # fmt: skip
        thresholds: list[list[float]] = []
        columns: dict[str, Any] = {}
        for i, c in enumerate(self.columns):
            t: list[float] = []
            if totals[i]:
                lo = np.sum([r["sums"][i] for r in results], axis=0)
                before = np.concatenate([[0], np.cumsum(dense[i], dtype=np.int64)])[np.asarray(bins[i])]
                for k, hb in enumerate(bins[i]):
                    lo_idx = crossings(lo[k], totals[i], b, below=np.full(b - 1, before[k]))[k]
                    key = (np.uint32(hb) << np.uint32(LO_BITS)) | np.uint32(lo_idx)
                    t.append(float(unsortable(np.array([key]))[0]))
            thresholds.append(t)
            columns[c] = {"thresholds": t, "scored": docs[i], "weight_total": totals[i]}
        seconds = time.perf_counter() - t0
        plan = {"hist_bins": 1 << HI_BITS, "refine_bins": 1 << LO_BITS, "task_memory": format_size(budget)}

        def per_shard(_i: int, _path: Any) -> AssignBuckets:
            return AssignBuckets(list(self.columns), thresholds, self.weight, self.min_bucket, self.max_bucket)

        def finish(_merged: dict[str, Any]) -> dict[str, Any]:
            rmtree(work / "hist", ignore_errors=True)  # the histograms: the thresholds are in the record
            return {"buckets": {"n": b, "weight": self.weight, "method": "exact (two histogram passes)", "columns": columns,
                                "plan": plan, "threshold_seconds": round(seconds, 3)}}  # fmt: skip

        return ctx.map_pass(per_shard=per_shard, finish=finish)
