"""Fuzzy deduplication across the whole corpus, every phase a set of bounded tasks: no process holds the corpus.

Phases (each a set of tasks on the executor, local processes or Ray; files under ``OUT/_work/``):

a. signatures, one task per chunk of an input shard (``signatures.py``): MinHash signatures,
   band hashes bucketed by LSH partition (band, hash range), the documents' meta;
b. LSH, one task per group of LSH partitions (``lsh.py``): candidate pairs from runs of equal
   band hashes, bucketed by pair partition;
c. union, one task per group of pair partitions: the pairs without repeats, verified with
   ``--verify``, as edges for the components;
d. connected components in rounds (``components.py``): large-star and small-star until every
   component is a star around its smallest document, then each document's label;
e. attach, survivors and listing (``clusters.py``): each component's survivor (best
   ``--priority``, then longest, then smallest id), every member's cluster and how many
   documents it stands for, and ``OUT/_clusters/part-K.parquet``;
f. the removal pass per input shard: kept documents with ``dup_cluster`` and ``dup_count``,
   dropped ones (``fuzzy_dup``) with ``dup_of``.

``--task-memory`` is the data one task may hold; from it and the rows each phase counted the
plan chooses chunk sizes and partition counts (``_work/plan.json``, kept for a resumed run).
The output is the same for any ``--task-memory``, worker count and executor, and the same as
one process holding everything would write: every phase partitions by a hash or a range of
the rows' own keys, and sorts what it joins. A task whose output exists is skipped, so a
killed run resumes where it stopped.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from curate.dedup import minhash
from curate.dedup.components import EDGE_BYTES, RoundJob, round_job, round_paths
from curate.dedup.lsh import LSH_BYTES, PAIR_BYTES, LshJob, UnionJob, lsh_job, union_job
from curate.dedup.minhash import optimal_bands
from curate.dedup.plan import finish, plan_groups, shard_rows
from curate.dedup.signatures import SIG_BYTES_PER_DOC, SigJob, plan_chunks, sig_path, signature_job
from curate.errors import CurateError
from curate.partitions import TASK_MEMORY_HELP, Plan, budget_of, format_size, group_parts, plan_partitions, summed_counts
from curate.registry import stage
from curate.runtime import MAP_OPTIONS, Context, Stage, param
from curate.storage import as_path

log = logging.getLogger("curate")

MAX_ROUNDS = 200  # large-star/small-star settle in O(log^2 n) rounds; this is a guard, never reached


@dataclass
class FuzzyConfig:
    """Parameters of fuzzy dedup; ``bands``/``rows`` None means datasketch's optimum."""

    threshold: float = 0.8
    ngram: int = 5
    num_perm: int = 128
    bands: int | None = None
    rows: int | None = None
    seed: int = 42
    verify: str = "none"  # none | signature | exact
    priority: list[str] = field(default_factory=list)

    def resolved(self) -> FuzzyConfig:
        """Fill in bands and rows; with verification the choice leans towards recall."""
        if not 0.0 < self.threshold <= 1.0:
            raise CurateError(f"--threshold must be in (0, 1], got {self.threshold}")
        if self.ngram < 1 or self.num_perm < 2:
            raise CurateError("--ngram must be >= 1 and --num-perm >= 2")
        if self.verify not in ("none", "signature", "exact"):
            raise CurateError(f"--verify must be none, signature or exact, got {self.verify!r}")
        b, r = self.bands, self.rows
        if (b is None) != (r is None):
            raise CurateError("give both --bands and --rows, or neither")
        if b is None:
            weights = (0.5, 0.5) if self.verify == "none" else (0.1, 0.9)
            b, r = optimal_bands(self.threshold, self.num_perm, *weights)
        if b * r > self.num_perm:
            raise CurateError(f"--bands {b} x --rows {r} = {b * r} exceeds --num-perm {self.num_perm}")
        return FuzzyConfig(self.threshold, self.ngram, self.num_perm, b, r, self.seed, self.verify, list(self.priority))


PRIORITY_HELP = (
    "Ordered sources or globs, best first (e.g. 'pile/Wikipedia,pile/*,cc/*'): a cluster keeps its document from the best source."
)
DEDUP_OPTION_HELP = {
    "inputs": "Input dataset directory (repeatable: all inputs are deduplicated together).",
    "out": "Output dataset directory (work files under OUT/_work/).",
    "keep_rejected": "Write removed duplicates to OUT/_rejected/ with reason and dup_of.",
}
DEDUP_OPTIONS = tuple(o for o in MAP_OPTIONS if o != "only_sources")


@stage("dedup fuzzy", section="deduplicate", order=20)
@dataclass
class FuzzyDedup(Stage):
    """MinHash-LSH near-duplicate removal across all inputs (MT-NLG: Jaccard >= 0.8).

    Phases (each a set of bounded, resumable tasks; files under OUT/_work/): signatures,
    LSH candidate pairs per band and hash range, their union (verified with --verify),
    connected components in rounds, survivors, removal. No task holds more than
    --task-memory, whatever the corpus size; the output is the same for any value. From each
    cluster the document of the best --priority source is kept (ties: the longest, then the
    smallest id); the others are rejected with reason fuzzy_dup and dup_of. Kept cluster
    members get dup_cluster, every kept document dup_count. OUT/_clusters/ lists the clusters.

    \b
    Example:
      curate dedup fuzzy --in out/exact --out out/fuzzy --priority 'pile/*,cc/*' --verify exact
    """

    name: ClassVar[str] = "dedup_fuzzy"
    sections: ClassVar[dict[str, str]] = {"dedup": "dedup"}
    kind: ClassVar[str] = "global"
    options: ClassVar[tuple[str, ...]] = DEDUP_OPTIONS
    option_help: ClassVar[dict[str, str]] = DEDUP_OPTION_HELP
    priority: list[str] = param([], PRIORITY_HELP, metavar="SRC,...", multiple=True, split=True)
    threshold: float = param(0.8, "Jaccard similarity of word n-gram sets at which two documents are duplicates.", min=0.0, max=1.0,
                             min_open=True)  # fmt: skip
    ngram: int = param(5, "Words per shingle.", min=1)
    num_perm: int = param(128, "MinHash permutations.", min=2)
    bands: int | None = param(None, "LSH bands [default: datasketch's optimum for the threshold].", min=1)
    rows: int | None = param(None, "Rows per band (with --bands).", min=1)
    verify: str = param("none", "Check each candidate pair's Jaccard before it joins a cluster: 'signature' estimates it from the "
                        "full signature (--verify alone), 'exact' computes it from the shingle sets.",
                        choices=("none", "signature", "exact"), flag_value="signature")  # fmt: skip
    seed: int = param(42, "MinHash permutation seed.")
    dup_count: bool = param(True, "Give every kept document dup_count: how many documents of the input it stands for (its "
                            "cluster's, summing an input dup_count from dedup exact), for up-weighting by cluster size.",
                            secondary="--no-dup-count")  # fmt: skip
    task_memory: str | None = param(None, TASK_MEMORY_HELP, metavar="SIZE", record=False)

    def __post_init__(self) -> None:
        if isinstance(self.priority, str):
            self.priority = [p.strip() for p in self.priority.split(",") if p.strip()]
        self.cfg = FuzzyConfig(self.threshold, self.ngram, self.num_perm, self.bands, self.rows, self.seed, self.verify,
                               list(self.priority)).resolved()  # fmt: skip

    def derived_params(self) -> dict[str, Any]:
        return asdict(self.cfg)  # bands and rows resolved

    def summary(self, record: dict[str, Any]) -> list[str]:
        d = record.get("dedup", {})
        return [
            *super().summary(record),
            f"  {d.get('bands')} bands x {d.get('rows')} rows, verify {d.get('verify')}: {d.get('unique_edges', 0):,} edges, "
            f"{d.get('clusters', 0):,} clusters, sizes {d.get('cluster_sizes', {})}",
        ]

    def run(self, ctx: Context) -> dict[str, Any]:
        """The phases over all inputs, then the removal pass."""
        cfg = self.cfg
        files = ctx.files
        work = ctx.work
        plan = Plan(work, budget_of(self.task_memory, ctx))
        budget = plan.budget
        timings: dict[str, float] = {}
        log.info("dedup fuzzy: %d shard(s), %d permutations, %d bands x %d rows, threshold %.2f, verify %s, shingling %s, "
                 "--task-memory %s", len(files), cfg.num_perm, cfg.bands, cfg.rows, cfg.threshold, cfg.verify, minhash.SHINGLING,
                 format_size(budget))  # fmt: skip

        # a. signatures, per chunk of an input shard
        t = time.perf_counter()
        rows = shard_rows(files)
        total = sum(rows)
        chunk_rows = plan.get("chunk_rows", lambda: max(1024, budget // 2 // SIG_BYTES_PER_DOC))
        chunks = plan.get("chunks", lambda: plan_chunks(files, chunk_rows)[0])
        first_chunk = plan.get("first_chunk", lambda: plan_chunks(files, chunk_rows)[1])
        lsh_parts = plan.get("lsh_parts", lambda: plan_partitions(total, LSH_BYTES, budget, power_of_two=True))
        sig_jobs = [SigJob(k, s_, a_, b_, str(files[s_]), str(work), cfg.num_perm, cfg.ngram, cfg.seed, cfg.bands, cfg.rows,
                           lsh_parts, cfg.verify, list(cfg.priority)) for k, (s_, a_, b_) in enumerate(chunks)]  # fmt: skip
        ctx.map(signature_job, sig_jobs, labels=[f"chunk-{k:06d}" for k in range(len(chunks))], desc="dedup fuzzy: signatures",
                unit="chunk")  # fmt: skip
        timings["signatures"] = time.perf_counter() - t

        # b. LSH candidate pairs, per group of (band, hash range) partitions
        t = time.perf_counter()
        lsh_in = [str(work / "lsh" / "in" / f"c-{k:06d}") for k in range(len(chunks))]
        counts = summed_counts([as_path(p) for p in lsh_in], cfg.bands * lsh_parts)
        pair_parts = plan.get("pair_parts", lambda: plan_partitions(int(counts.sum()) * 4, PAIR_BYTES, budget, power_of_two=True))
        lsh_groups = plan.get("lsh_groups", lambda: group_parts(counts, LSH_BYTES, budget))
        ljobs = [LshJob(g, parts, lsh_in, str(work), pair_parts, budget, lsh_parts) for g, parts in enumerate(lsh_groups)]
        ctx.map(lsh_job, ljobs, labels=[f"lsh-{g:05d}" for g in range(len(ljobs))], desc="dedup fuzzy: LSH", unit="group")

        # c. their union without repeats, verified
        pair_files = [str(work / "lsh" / "pairs" / f"g-{g:05d}") for g in range(len(ljobs))]
        pcounts = summed_counts([as_path(p) for p in pair_files], pair_parts)
        candidates = int(pcounts.sum())
        cc_parts = plan.get("cc_parts", lambda: plan_partitions(2 * candidates, EDGE_BYTES, budget))
        union_groups = plan.get("union_groups", lambda: group_parts(pcounts, PAIR_BYTES, budget))
        ujobs = [UnionJob(g, parts, pair_files, str(work), cc_parts, cfg.threshold, cfg.verify, first_chunk, chunk_rows, budget)
                 for g, parts in enumerate(union_groups)]  # fmt: skip
        unions = ctx.map(union_job, ujobs, labels=[f"pairs-{g:05d}" for g in range(len(ujobs))], desc="dedup fuzzy: pairs",
                         unit="group")  # fmt: skip
        unique_pairs = sum(u["pairs"] for u in unions)
        edges = sum(u["edges"] for u in unions)
        timings["lsh"] = time.perf_counter() - t

        # d. connected components, in rounds
        t = time.perf_counter()
        plan_groups(plan, files, min(total, 2 * edges))
        inputs = [str(work / "cc" / "edges" / f"u-{g:05d}") for g in range(len(ujobs))]
        labels, rounds = self._components(ctx, plan, inputs, cc_parts)
        timings["components"] = time.perf_counter() - t

        # e, f. survivors, clusters, then the removal pass
        def meta_of_group(_g: int, shards: list[int]) -> list[str]:
            return [str(sig_path(work, k, "meta.parquet")) for k, (s_, _a, _b) in enumerate(chunks) if s_ in set(shards)]

        numbers, per_shard = finish(ctx, plan, labels, meta_of_group, "fuzzy_dup", tag=True, dup_count=self.dup_count,
                                    tie_break_longest=True, name="dedup fuzzy", timings=timings)  # fmt: skip

        def record(merged: dict[str, Any]) -> dict[str, Any]:
            return {"dedup": {"bands": cfg.bands, "rows": cfg.rows, "num_perm": cfg.num_perm, "threshold": cfg.threshold,
                              "verify": cfg.verify, "candidate_pairs": unique_pairs, "unique_edges": edges,
                              "docs_in_edges": numbers["docs_in_clusters"], "clusters": numbers["clusters"],
                              "cluster_sizes": numbers["cluster_sizes"], "components_rounds": rounds, "plan": numbers["plan"],
                              "phase_seconds": {k: round(v, 3) for k, v in timings.items()}}}  # fmt: skip

        return ctx.map_pass(per_shard=per_shard, finish=record)

    def _components(self, ctx: Context, plan: Plan, inputs: list[str], parts: int) -> tuple[list[str], int]:
        """Large-star and small-star rounds until every component is a star; then the labels. Returns (label files, rounds)."""
        work = ctx.work
        groups, group_of_shard = int(plan.data["groups"]), plan.data["group_of_shard"]
        k = 0
        while True:
            if k >= MAX_ROUNDS:
                raise CurateError(f"dedup fuzzy: connected components did not settle in {MAX_ROUNDS} rounds (a bug: please report it)")
            outs = round_paths(work, k, parts)
            op = "large" if k % 2 == 0 else "small"
            jobs = [RoundJob(p, parts, inputs, outs[p], op, plan.budget) for p in range(parts)]
            stats = ctx.map(round_job, jobs, labels=[f"round-{k}-{p:05d}" for p in range(parts)], desc=f"dedup fuzzy: components {k + 1}",
                            unit="part")  # fmt: skip
            if all(s["stars"] for s in stats):
                break  # this round's input is a star forest: its labels are the answer
            inputs = outs
            k += 1
        label_out = [str(work / "cc" / "labels" / f"part-{p:05d}") for p in range(parts)]
        jobs = [RoundJob(p, parts, inputs, label_out[p], "label", plan.budget, groups, group_of_shard) for p in range(parts)]
        ctx.map(round_job, jobs, labels=[f"labels-{p:05d}" for p in range(parts)], desc="dedup fuzzy: labels", unit="part")
        return label_out, k + 1
