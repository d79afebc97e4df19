"""Line and paragraph dedup across all inputs: repeated units are cut out of their documents, the documents kept.

Phase a (one task per chunk of an input shard) splits every document into units (lines, or
paragraphs separated by blank lines), normalises them as ``dedup exact`` does, and writes a
(128-bit hash, rank, id, doc key, unit number) row per unit of at least ``--min-chars``
characters, range-partitioned by hash into ``fine`` partitions planned from an upper bound of
the unit count (every hashed unit has at least ``--min-chars`` bytes). Phase b (one task per
group of consecutive partitions, grouped by the rows phase a counted, so a task holds at most
``--task-memory``) sorts its rows and decides per hash:

- first occurrence (default): of equal units the one of the best ``--priority`` source, then
  the smallest document id, then the first in its document, is kept; every later one is cut;
- ``--max-doc-frequency N``: a unit found in more than ``N`` documents is cut everywhere;
- ``--approx``: no sort; the partitions' rows are streamed in input order through a Bloom
  filter per task (Dolma's paragraph dedup), sized for the task's rows at ``--fp-rate``:
  a unit whose bits are all set is cut. A unique unit is cut with probability <= ``--fp-rate``.

The cut (doc key, unit) rows are written per input shard; the removal pass (one per shard,
:class:`ApplyLines`) cuts them, and rejects a document left shorter than
``--min-remaining-chars`` (reason ``lines:too_short``). The output is the same for any
``--task-memory`` and worker count (``--approx`` aside: its filters' sizes follow the plan).
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from curate.dataset import iter_tables, open_parquet
from curate.dedup.clusters import doc_key, row_of, shard_of
from curate.dedup.exact import check_priority_and_normalize, normalize_texts
from curate.dedup.fuzzy import DEDUP_OPTION_HELP, PRIORITY_HELP
from curate.dedup.signatures import plan_chunks
from curate.errors import CurateError
from curate.partitions import (
    TASK_MEMORY_HELP,
    Plan,
    bucket_done,
    budget_of,
    check_fits,
    group_parts,
    partition_counts,
    partitioned_done,
    plan_partitions,
    range_partition,
    read_buckets,
    read_partition,
    write_buckets,
    write_partitioned,
)
from curate.registry import stage
from curate.runtime import MAP_OPTIONS, Batch, Context, Decisions, DocStage, Stage, param
from curate.schema import source_matcher, source_rank
from curate.stats import Counters
from curate.storage import as_path

UNITS = ("line", "paragraph")
REASON = "lines:too_short"
ROW_SCHEMA = pa.schema([("hi", pa.uint64()), ("lo", pa.uint64()), ("rank", pa.int32()), ("id", pa.string()),
                        ("doc", pa.int64()), ("unit", pa.int32())])  # fmt: skip
ROW_BYTES = 256  # one unit's row in a decide task: its columns, the id, the sort's indices and numpy copies (an estimate)
DOC_BYTES = 16384  # what a hash task holds per document of its chunk: the text of a batch, its units, their rows
_PARAGRAPH = re.compile(r"(\n(?:[^\S\n]*\n)+)")  # one or more blank lines (whitespace-only) between paragraphs


# --------------------------------------------------------------------------- units


def split_units(text: str, unit: str) -> tuple[list[str], list[str]]:
    """``(units, separators)``: ``text == units[0] + seps[0] + units[1] + ... + units[-1]``."""
    if unit == "line":
        parts = text.split("\n")
        return parts, ["\n"] * (len(parts) - 1)
    pieces = _PARAGRAPH.split(text)
    return pieces[0::2], pieces[1::2]


def join_kept(units: list[str], seps: list[str], cut: set[int]) -> str:
    """The text without the units numbered in ``cut``; each cut unit goes with the separator after it (the last: before it)."""
    kept = [k for k in range(len(units)) if k not in cut]
    if not kept:
        return ""
    return "".join(units[k] + seps[k] for k in kept[:-1]) + units[kept[-1]]


def text_bytes_upper_bound(files: list[Any]) -> int:
    """The uncompressed bytes of every input's ``text`` column (from the Parquet footers): a bound on the units' bytes."""
    total = 0
    for f in files:
        md = open_parquet(f).metadata
        names = [md.schema.column(i).name for i in range(md.num_columns)]
        if "text" not in names:
            continue
        i = names.index("text")
        total += sum(md.row_group(g).column(i).total_uncompressed_size for g in range(md.num_row_groups))
    return total


# --------------------------------------------------------------------------- phase a: hashes


@dataclass
class HashJob:
    chunk: int
    shard: int
    start: int
    stop: int
    path: str
    out: str
    parts: int
    unit: str
    normalize: list[str]
    min_chars: int
    priority: list[str]
    only: str | None = None  # --only-sources: units of other sources are not hashed (the removal pass passes them through)


def hash_job(job: HashJob) -> dict[str, Any]:
    """Every unit of at least ``min_chars`` normalised characters of one chunk, as hash rows range-partitioned by hash."""
    out = as_path(job.out)
    if partitioned_done(out):
        return {"skipped": 1}
    rank = source_rank(job.priority)
    match = source_matcher(job.only)
    tables = []
    at = job.start
    for table in iter_tables(as_path(job.path), ["id", "text", "source"], rows=(job.start, job.stop)):
        n = table.num_rows
        if n == 0:
            continue
        flat: list[str] = []
        owner: list[int] = []
        number: list[int] = []
        for i, (text, source) in enumerate(zip(table.column("text").to_pylist(), table.column("source").to_pylist())):
            if not text or not match(source):
                continue
            units, _ = split_units(text, job.unit)
            flat.extend(units)
            owner.extend([i] * len(units))
            number.extend(range(len(units)))
        if not flat:
            at += n
            continue
        norm = normalize_texts(pa.array(flat, pa.large_string()), job.normalize)
        long_enough = np.asarray(pc.greater_equal(pc.utf8_length(norm), job.min_chars).to_numpy(zero_copy_only=False))
        take = np.flatnonzero(long_enough)
        values = norm.take(pa.array(take)).cast(pa.large_binary()).to_pylist()
        digests = [xxhash.xxh3_128_intdigest(v) for v in values]
        who = np.asarray(owner, np.int64)[take]
        ids = table.column("id").take(pa.array(who))
        ranks = np.array([rank(s) for s in table.column("source").to_pylist()], np.int32)[who]
        tables.append(pa.table({"hi": pa.array(np.array([d >> 64 for d in digests], np.uint64)),
                                "lo": pa.array(np.array([d & 0xFFFFFFFFFFFFFFFF for d in digests], np.uint64)),
                                "rank": pa.array(ranks), "id": ids.cast(pa.string()),
                                "doc": pa.array(doc_key(job.shard, at + who)),
                                "unit": pa.array(np.asarray(number, np.int32)[take])}, schema=ROW_SCHEMA))  # fmt: skip
        at += n
    rows = pa.concat_tables(tables) if tables else ROW_SCHEMA.empty_table()
    hi = rows.column("hi").to_numpy() if rows.num_rows else np.zeros(0, np.uint64)
    write_partitioned(out, rows, range_partition(hi, job.parts), job.parts)
    return {"units": rows.num_rows}


# --------------------------------------------------------------------------- phase b: the decision per hash


@dataclass
class BucketJob:
    task: int
    parts: list[int]
    inputs: list[str]
    out: str
    shards: int
    budget: int
    max_doc_frequency: int | None
    approx: bool
    fp_rate: float


def bucket_job(job: BucketJob) -> dict[str, Any]:
    """The units to cut among one group of hash partitions, written per input shard as (doc, unit) rows."""
    out = as_path(job.out)
    if bucket_done(out):
        return {"skipped": 1}
    doc, unit = _approx_cuts(job) if job.approx else _exact_cuts(job)
    write_buckets(out, {"doc": doc, "unit": unit}, shard_of(doc), job.shards)
    return {"cut": int(len(doc))}


def _rows(job: BucketJob) -> int:
    return int(sum(int(partition_counts(as_path(p))[q]) for p in job.inputs for q in job.parts))


def _exact_cuts(job: BucketJob) -> tuple[np.ndarray, np.ndarray]:
    rows = _rows(job)
    check_fits(rows, ROW_BYTES, job.budget, f"dedup lines: hash partitions {job.parts[0]}-{job.parts[-1]}")
    t = read_partition([as_path(p) for p in job.inputs], job.parts, schema=ROW_SCHEMA)
    if t.num_rows == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int32)
    t = t.sort_by([("hi", "ascending"), ("lo", "ascending"), ("rank", "ascending"), ("id", "ascending"),
                   ("doc", "ascending"), ("unit", "ascending")])  # fmt: skip
    hi, lo = t.column("hi").to_numpy(), t.column("lo").to_numpy()
    doc, unit = t.column("doc").to_numpy(), t.column("unit").to_numpy()
    n = len(hi)
    new_run = np.ones(n, bool)
    new_run[1:] = (hi[1:] != hi[:-1]) | (lo[1:] != lo[:-1])
    if job.max_doc_frequency is None:
        cut = ~new_run  # the first of each run (best rank, smallest id, first in its document) stays
    else:
        run_id = np.cumsum(new_run) - 1
        new_doc = new_run.copy()
        new_doc[1:] |= doc[1:] != doc[:-1]  # a run is sorted by (rank, id, doc): a document's rows are together
        docs_per_run = np.bincount(run_id, weights=new_doc).astype(np.int64)
        cut = docs_per_run[run_id] > job.max_doc_frequency
    return doc[cut], unit[cut]


class BloomFilter:
    """A Bloom filter of ``m`` bits and ``k`` hash functions for ``n`` items at false-positive rate ``p``.

    ``m = ceil(-n ln p / (ln 2)^2)`` and ``k = round(m / n ln 2)`` (the optimum); the bit positions
    of an item are ``h1 + i h2 mod m`` for ``i < k`` (double hashing over the item's 128-bit hash).
    """

    def __init__(self, n: int, p: float) -> None:
        n = max(1, n)
        self.m = max(64, math.ceil(-n * math.log(p) / math.log(2) ** 2))
        self.k = max(1, round(self.m / n * math.log(2)))
        self.bits = np.zeros((self.m + 7) // 8, np.uint8)

    @staticmethod
    def bytes_per_item(p: float) -> float:
        return -math.log(p) / math.log(2) ** 2 / 8

    def _positions(self, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
        i = np.arange(self.k, dtype=np.uint64)
        with np.errstate(over="ignore"):
            h = hi[:, None] + i[None, :] * (lo[:, None] | np.uint64(1))
        return (h % np.uint64(self.m)).astype(np.int64)

    def contains(self, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
        pos = self._positions(hi, lo)
        return ((self.bits[pos >> 3] >> (pos & 7).astype(np.uint8)) & 1).astype(bool).all(axis=1)

    def add(self, hi: np.ndarray, lo: np.ndarray) -> None:
        pos = self._positions(hi, lo).ravel()
        np.bitwise_or.at(self.bits, pos >> 3, (np.uint8(1) << (pos & 7).astype(np.uint8)))


def _approx_cuts(job: BucketJob) -> tuple[np.ndarray, np.ndarray]:
    """Dedup by a Bloom filter in input order (chunk by chunk): a unit is cut when the filter holds it already."""
    bloom = BloomFilter(_rows(job), job.fp_rate)
    docs, units = [], []
    for p in job.inputs:  # chunk order is input order: --in order, shard, row
        t = read_partition([as_path(p)], job.parts, schema=ROW_SCHEMA)
        if t.num_rows == 0:
            continue
        t = t.sort_by([("doc", "ascending"), ("unit", "ascending")])
        hi, lo = t.column("hi").to_numpy(), t.column("lo").to_numpy()
        order = np.lexsort((np.arange(len(hi)), lo, hi))
        first = np.ones(len(hi), bool)
        first[order[1:]] = (hi[order[1:]] != hi[order[:-1]]) | (lo[order[1:]] != lo[order[:-1]])
        cut = ~first
        cut[first] = bloom.contains(hi[first], lo[first])
        bloom.add(hi[first], lo[first])
        docs.append(t.column("doc").to_numpy()[cut])
        units.append(t.column("unit").to_numpy()[cut])
    if not docs:
        return np.zeros(0, np.int64), np.zeros(0, np.int32)
    return np.concatenate(docs), np.concatenate(units)


# --------------------------------------------------------------------------- the removal pass


@dataclass
class ApplyLines(DocStage):
    """The removal pass over one input shard: cut its listed units; reject a document left too short.

    Counts per source under ``dedup_lines``: documents, units (of non-empty documents), units
    cut, bytes cut, documents changed, and empty documents (left alone).
    """

    cuts: list[str]
    shard: int
    unit: str
    min_remaining_chars: int
    only: str | None = None  # --only-sources, applied here: the rows keep their numbers
    _row: int = 0
    _loaded: tuple[np.ndarray, np.ndarray] | None = None

    def _load(self) -> tuple[np.ndarray, np.ndarray]:
        if self._loaded is None:
            paths = [as_path(p) for p in self.cuts]
            c = read_buckets(paths, [self.shard], ["doc", "unit"]) if paths else {"doc": np.zeros(0), "unit": np.zeros(0)}
            rows, unit = row_of(np.asarray(c["doc"], np.int64)), np.asarray(c["unit"], np.int64)
            order = np.lexsort((unit, rows))
            self._loaded = (rows[order], unit[order])
        return self._loaded

    def decide_batch(self, batch: Batch) -> Decisions:
        rows, units = self._load()
        n = batch.table.num_rows
        start = self._row
        self._row += n
        a, b = np.searchsorted(rows, start), np.searchsorted(rows, start + n)
        cut: dict[int, set[int]] = {}
        for r, u in zip(rows[a:b].tolist(), units[a:b].tolist()):
            cut.setdefault(r - start, set()).add(u)
        texts = batch.texts
        sources = batch.column("source")
        counters = Counters()
        match = source_matcher(self.only)
        reasons: list[str | None] = [None] * n
        new_texts = list(texts)
        for i, text in enumerate(texts):
            if not match(sources[i]):
                counters.add("passed_through")
                continue
            src = counters.level("dedup_lines", sources[i] or "")
            src["docs"] = src.get("docs", 0) + 1
            if not text:
                src["empty_docs"] = src.get("empty_docs", 0) + 1
                continue
            parts, seps = split_units(text, self.unit)
            src["units"] = src.get("units", 0) + len(parts)
            if i not in cut:
                continue
            new = join_kept(parts, seps, cut[i])
            src["units_cut"] = src.get("units_cut", 0) + len(cut[i])
            src["bytes_cut"] = src.get("bytes_cut", 0) + len(text.encode()) - len(new.encode())
            src["docs_changed"] = src.get("docs_changed", 0) + 1
            if len(new.strip()) < self.min_remaining_chars:
                reasons[i] = REASON
            else:
                new_texts[i] = new
        return Decisions(reasons, new_texts, counters=counters)


# --------------------------------------------------------------------------- the stage


@stage("dedup lines", section="deduplicate", order=30)
@dataclass
class LineDedup(Stage):
    """Cut repeated lines or paragraphs out of documents, across all inputs (boilerplate, shared footers, spam blocks).

    Units (lines, or paragraphs between blank lines) are compared after --normalize (as in
    dedup exact); units shorter than --min-chars are left alone. By default the first occurrence
    of a unit (best --priority source, then smallest document id) stays and later ones are cut;
    --max-doc-frequency N instead cuts a unit wherever it occurs in more than N documents;
    --approx uses a Bloom filter (Dolma's approach: first occurrence in input order, a unique
    unit cut with probability at most --fp-rate). A document left with fewer than
    --min-remaining-chars characters is rejected (lines:too_short).

    \b
    Example:
      curate dedup lines --in out/dedup_fuzzy --out out/dedup_lines --unit line --min-chars 20
    """

    name: ClassVar[str] = "dedup_lines"
    sections: ClassVar[dict[str, str]] = {"subdoc": "counters.dedup_lines"}
    kind: ClassVar[str] = "global"
    options: ClassVar[tuple[str, ...]] = MAP_OPTIONS
    option_help: ClassVar[dict[str, str]] = {**DEDUP_OPTION_HELP, "keep_rejected": "Write documents left too short to "
                                             "OUT/_rejected/ (reason lines:too_short, their text as it came in)."}  # fmt: skip
    unit: str = param("line", "What to compare: a line, or a paragraph (text between blank lines).", choices=UNITS)
    priority: list[str] = param([], PRIORITY_HELP.replace("a cluster keeps its document", "a repeated unit is kept in the document"),
                                metavar="SRC,...", multiple=True, split=True)  # fmt: skip
    normalize: list[str] = param(["lower", "whitespace"], "Normalisations before hashing a unit: any of lower, whitespace, punct "
                                 "(comma-separated; '' for none).", metavar="OPS", multiple=True, split=True)  # fmt: skip
    min_chars: int = param(10, "Units with fewer normalised characters are never compared (left alone).", min=1)
    max_doc_frequency: int | None = param(None, "Instead of keeping first occurrences: cut a unit wherever it occurs in more "
                                          "than N documents (Data-Juicer's, CCNet-like).", min=1, metavar="N")  # fmt: skip
    min_remaining_chars: int = param(50, "Reject a document that lost units and has fewer characters left (lines:too_short).", min=0)
    approx: bool = param(False, "Bloom filter instead of exact hashes (Dolma's paragraph dedup): first occurrence in input "
                         "order (--in order, then row), no --priority; smaller tasks.")  # fmt: skip
    fp_rate: float = param(0.001, "With --approx: the Bloom filters' false-positive rate (the chance a unique unit is cut).",
                           min=0.0, max=0.5, min_open=True, relevant=lambda s: s.approx)  # fmt: skip
    task_memory: str | None = param(None, TASK_MEMORY_HELP, metavar="SIZE", record=False)

    def __post_init__(self) -> None:
        check_priority_and_normalize(self)
        if self.unit not in UNITS:
            raise CurateError(f"--unit {self.unit!r}: choose line or paragraph")
        if self.approx and self.priority:
            raise CurateError("--approx keeps the first occurrence in input order: give the best --in first instead of --priority")
        if self.approx and self.max_doc_frequency is not None:
            raise CurateError("--approx and --max-doc-frequency: choose one (a Bloom filter does not count documents)")

    def summary(self, record: dict[str, Any]) -> list[str]:
        per = record.get("counters", {}).get("dedup_lines", {})
        units = sum(s.get("units", 0) for s in per.values())
        cut = sum(s.get("units_cut", 0) for s in per.values())
        nbytes = sum(s.get("bytes_cut", 0) for s in per.values())
        return [*super().summary(record), f"  {self.unit}s cut: {cut:,} of {units:,} ({nbytes:,} bytes)"]

    def run(self, ctx: Context) -> dict[str, Any]:
        """Hash every unit, decide per hash in bounded tasks, then the removal pass."""
        files = ctx.files
        work = ctx.work
        plan = Plan(work, budget_of(self.task_memory, ctx))
        budget = plan.budget
        t0 = time.perf_counter()
        chunk_rows = plan.get("chunk_rows", lambda: max(256, budget // 2 // DOC_BYTES))
        chunks = plan.get("chunks", lambda: plan_chunks(files, chunk_rows)[0])
        bound = text_bytes_upper_bound(files) // (self.min_chars + 1) + 1
        fine = plan.get("fine_parts", lambda: plan_partitions(bound, ROW_BYTES, budget, power_of_two=True))
        hashes = [str(work / "hash" / f"c-{k:06d}.arrow") for k in range(len(chunks))]
        jobs = [HashJob(k, s, a, b, str(files[s]), hashes[k], fine, self.unit, self.normalize, self.min_chars, self.priority,
                        ctx.common.only_sources)
                for k, (s, a, b) in enumerate(chunks)]  # fmt: skip
        ctx.map(hash_job, jobs, labels=[f"chunk-{k:06d}" for k in range(len(chunks))], desc="dedup lines: hashes", unit="chunk")
        t1 = time.perf_counter()
        per_row = BloomFilter.bytes_per_item(self.fp_rate) * 2 if self.approx else ROW_BYTES

        def tasks() -> list[list[int]]:
            counts = np.zeros(fine, np.int64)
            for h in hashes:
                counts += partition_counts(as_path(h))
            return group_parts(counts, per_row, budget)

        groups = plan.get("bucket_groups", tasks)
        outs = [str(work / "cut" / f"t-{g:05d}") for g in range(len(groups))]
        bjobs = [BucketJob(g, parts, hashes, outs[g], len(files), budget, self.max_doc_frequency, self.approx, self.fp_rate)
                 for g, parts in enumerate(groups)]  # fmt: skip
        ctx.map(bucket_job, bjobs, labels=[f"task-{g:05d}" for g in range(len(groups))], desc="dedup lines: decide", unit="task")
        t2 = time.perf_counter()

        def per_shard(i: int, _path: Any) -> ApplyLines:
            return ApplyLines(outs, i, self.unit, self.min_remaining_chars, only)

        def record(_merged: dict[str, Any]) -> dict[str, Any]:
            info = {k: v for k, v in plan.data.items() if k not in ("chunks", "bucket_groups")}
            info["decide_tasks"] = len(groups)
            return {"dedup_lines": {"plan": info, "phase_seconds": {"hash": round(t1 - t0, 3), "decide": round(t2 - t1, 3)}}}

        only = ctx.common.only_sources
        ctx.common = dataclasses.replace(ctx.common, only_sources=None)  # the removal pass applies it (row numbers)
        return ctx.map_pass(per_shard=per_shard, finish=record)
