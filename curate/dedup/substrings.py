"""Exact-substring dedup (Lee et al. 2021, "Deduplicating Training Data Makes Language Models Better", arXiv:2107.06499).

The rule is theirs (google-research/deduplicate-text-datasets: ``self-similar`` then
``collect``): every span of at least ``--min-length`` tokens (50 GPT-2 tokens in the paper) that
occurs two or more times in the corpus is struck out of *every* document it occurs in, all
copies, the first too; overlapping struck spans merge; what is left of a document is joined as
it is ("Alice wanted to go to the store" may lose " to go to the "). Spans never cross two
documents. Equivalently: a token is removed when some window of ``--min-length`` tokens holding it
occurs at least twice.

Phases, each bounded by ``--task-memory``:

a. one task per chunk of an input shard: the chunk's documents as one sequence (GPT-2 tokens,
   or UTF-8 bytes with ``--sequence bytes``; a separator between documents), its suffix array
   and LCP array (pydivsufsort: divsufsort and Kasai), whose runs of LCP >= L are the chunk's
   distinct windows with their counts; each distinct window's 128-bit fingerprint (two
   polynomial hashes mod 2^64) and count are written range-partitioned by fingerprint;
b. one task per group of fingerprint partitions (the merge): a fingerprint whose counts over all
   chunks add up to two or more is repeated; it is written for every shard holding it;
c. the removal pass per input shard: each document's windows whose fingerprint is repeated are
   struck (token spans mapped to bytes; a character split by a token edge is dropped), and a
   document left shorter than ``--min-remaining-chars`` is rejected (``substrings:too_short``).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from curate.dataset import iter_tables
from curate.dedup.fuzzy import DEDUP_OPTION_HELP
from curate.dedup.lines import text_bytes_upper_bound
from curate.dedup.plan import shard_rows
from curate.dedup.signatures import plan_chunks
from curate.errors import CurateError
from curate.partitions import (
    TASK_MEMORY_HELP,
    Plan,
    bucket_done,
    budget_of,
    check_fits,
    group_parts,
    min_partitions,
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
from curate.schema import source_matcher
from curate.stats import Counters
from curate.storage import as_path

SEQUENCES = ("tokens", "bytes")
REASON = "substrings:too_short"
FP_SCHEMA = pa.schema([("hi", pa.uint64()), ("lo", pa.uint64()), ("count", pa.int64())])
FP_BYTES = 96  # one fingerprint row in a merge task, with its sort
SEQ_BYTES = 64  # what a chunk task holds per token: the sequence, suffix and LCP arrays, hashes and their temporaries
_BASES = (0x100000001B3, 0x9E3779B97F4A7C15 | 1)


@functools.lru_cache(maxsize=1)
def _gpt2() -> tuple[Any, np.ndarray]:
    from curate.tokenizer import load_tokenizer

    enc = load_tokenizer("gpt2").backend()
    lens = np.array([len(enc.decode_single_token_bytes(i)) for i in range(enc.n_vocab)], np.int64)
    return enc, lens


def sequence(text: str, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, byte_ends)``: the text's tokens (or bytes) and the UTF-8 end offset of each."""
    if kind == "bytes":
        b = np.frombuffer(text.encode(), np.uint8).astype(np.int32)
        return b, np.arange(1, len(b) + 1, dtype=np.int64)
    enc, lens = _gpt2()
    ids = np.asarray(enc.encode_ordinary(text), np.int32)
    return ids, np.cumsum(lens[ids])


def window_hashes(seq: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray]:
    """128-bit fingerprints of every window of ``length`` (two polynomial hashes mod 2^64, position-free)."""
    n = len(seq) - length + 1
    if n <= 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.uint64)
    out = []
    x = seq.astype(np.uint64) + np.uint64(1)
    for base in _BASES:
        inv = pow(base, -1, 1 << 64)
        with np.errstate(over="ignore"):
            up, down = np.ones(len(seq), np.uint64), np.ones(len(seq), np.uint64)  # base^i and base^-i
            up[1:] = np.cumprod(np.full(len(seq) - 1, base, np.uint64))
            down[1:] = np.cumprod(np.full(len(seq) - 1, inv, np.uint64))
            pre = np.zeros(len(seq) + 1, np.uint64)
            np.cumsum(x * down, out=pre[1:])
            out.append((pre[length : length + n] - pre[:n]) * up[:n])
    return out[0], out[1]


def struck(seq_hashes: tuple[np.ndarray, np.ndarray], keys: tuple[np.ndarray, np.ndarray], length: int, size: int) -> np.ndarray:
    """Which of ``size`` positions lie in a window whose fingerprint is in ``keys`` (his and los, sorted by hi then lo)."""
    hi, lo = seq_hashes
    khi, klo = keys
    cover = np.zeros(size + 1, np.int64)
    if len(hi) and len(khi):
        a, b = np.searchsorted(khi, hi, "left"), np.searchsorted(khi, hi, "right")
        hit = np.zeros(len(hi), bool)
        one = (b - a) == 1
        hit[one] = klo[a[one]] == lo[one]
        for i in np.flatnonzero((b - a) > 1).tolist():  # two fingerprints sharing their high half: rare
            hit[i] = bool((klo[a[i] : b[i]] == lo[i]).any())
        starts = np.flatnonzero(hit)
        if len(starts):
            np.add.at(cover, starts, 1)
            np.add.at(cover, starts + length, -1)
    return np.cumsum(cover[:size]) > 0


# --------------------------------------------------------------------------- phase a: suffix arrays per chunk


@dataclass
class ChunkJob:
    chunk: int
    shard: int
    start: int
    stop: int
    path: str
    out: str
    parts: int
    kind: str
    length: int
    only: str | None = None  # --only-sources: other documents are left out of the sequence


def chunk_job(job: ChunkJob) -> dict[str, Any]:
    """The chunk's distinct windows of ``length`` (suffix array runs) with their counts, partitioned by fingerprint."""
    from pydivsufsort import divsufsort, kasai

    out = as_path(job.out)
    if partitioned_done(out):
        return {"skipped": 1}
    sep = 50257 if job.kind == "tokens" else 256
    seqs, valid = [], []
    match = source_matcher(job.only)
    for table in iter_tables(as_path(job.path), ["text", "source"], rows=(job.start, job.stop)):
        for text, source in zip(table.column("text").to_pylist(), table.column("source").to_pylist()):
            s, _ = sequence(text or "", job.kind) if match(source) else (np.zeros(0, np.int32), None)
            v = np.zeros(len(s) + 1, bool)
            v[: max(0, len(s) - job.length + 1)] = True  # windows inside the document
            seqs.extend([s, np.array([sep], np.int32)])
            valid.append(v)
    arr = np.concatenate(seqs) if seqs else np.zeros(0, np.int32)
    ok = np.concatenate(valid) if valid else np.zeros(0, bool)
    hi = lo = np.zeros(0, np.uint64)
    count = np.zeros(0, np.int64)
    if ok.any():
        sa = np.asarray(divsufsort(arr), np.int64)
        lcp = np.asarray(kasai(arr, sa), np.int64)  # lcp[i]: common prefix of suffixes sa[i] and sa[i + 1]
        new = np.ones(len(sa), bool)
        new[1:] = lcp[:-1] < job.length
        group = np.cumsum(new) - 1
        first = sa[new]
        count = np.bincount(group).astype(np.int64)
        keep = ok[first]  # a run's windows are equal: all inside documents or none
        first, count = first[keep], count[keep]
        h1, h2 = window_hashes(arr, job.length)
        hi, lo = h1[first], h2[first]
    t = pa.table({"hi": pa.array(hi), "lo": pa.array(lo), "count": pa.array(count)}, schema=FP_SCHEMA)
    write_partitioned(out, t, range_partition(hi, job.parts), job.parts)
    return {"windows": int(len(hi)), "tokens": int(len(arr))}


# --------------------------------------------------------------------------- phase b: the merge


@dataclass
class MergeJob:
    task: int
    parts: list[int]
    inputs: list[str]
    shard_of_chunk: list[int]
    shards: int
    out: str
    budget: int


def merge_job(job: MergeJob) -> dict[str, Any]:
    """Fingerprints counted twice or more over all chunks, written once per shard that holds them."""
    out = as_path(job.out)
    if bucket_done(out):
        return {"skipped": 1}
    rows = int(sum(int(partition_counts(as_path(p))[q]) for p in job.inputs for q in job.parts))
    check_fits(rows, FP_BYTES, job.budget, f"dedup substrings: fingerprint partitions {job.parts[0]}-{job.parts[-1]}")
    his, los, cnts, shards = [], [], [], []
    for k, p in enumerate(job.inputs):
        t = read_partition([as_path(p)], job.parts, schema=FP_SCHEMA)
        his.append(t.column("hi").to_numpy())
        los.append(t.column("lo").to_numpy())
        cnts.append(t.column("count").to_numpy())
        shards.append(np.full(t.num_rows, job.shard_of_chunk[k], np.int64))
    hi, lo, cnt, shard = (np.concatenate(x) if x else np.zeros(0, np.int64) for x in (his, los, cnts, shards))
    order = np.lexsort((shard, lo, hi))
    hi, lo, cnt, shard = hi[order], lo[order], cnt[order], shard[order]
    n = len(hi)
    new = np.ones(n, bool)
    if n > 1:
        new[1:] = (hi[1:] != hi[:-1]) | (lo[1:] != lo[:-1])
    run = np.cumsum(new) - 1
    total = np.bincount(run, weights=cnt).astype(np.int64) if n else np.zeros(0, np.int64)
    rep = total[run] >= 2 if n else np.zeros(0, bool)
    first_in_shard = new.copy()
    if n > 1:
        first_in_shard[1:] |= shard[1:] != shard[:-1]
    pick = rep & first_in_shard
    write_buckets(out, {"hi": hi[pick].astype(np.uint64), "lo": lo[pick].astype(np.uint64)}, shard[pick], job.shards)
    return {"repeated": int((rep & new).sum())}


# --------------------------------------------------------------------------- phase c: the removal pass


@dataclass
class ApplySubstrings(DocStage):
    """The removal pass over one shard: strike every window whose fingerprint is repeated; counts per source."""

    repeated: list[str]
    shard: int
    seq: str
    length: int
    min_remaining_chars: int
    only: str | None = None  # --only-sources, applied here: the rows keep their numbers
    _keys: tuple[np.ndarray, np.ndarray] | None = None

    def _load(self) -> tuple[np.ndarray, np.ndarray]:
        """This shard's repeated fingerprints as two sorted arrays (16 bytes each, no Python object per fingerprint)."""
        if self._keys is None:
            paths = [as_path(p) for p in self.repeated]
            c = read_buckets(paths, [self.shard], ["hi", "lo"]) if paths else {"hi": np.zeros(0), "lo": np.zeros(0)}
            hi, lo = np.asarray(c["hi"], np.uint64), np.asarray(c["lo"], np.uint64)
            order = np.lexsort((lo, hi))
            self._keys = (hi[order], lo[order])
        return self._keys

    def decide_batch(self, batch: Batch) -> Decisions:
        keys = self._load()
        sources = batch.column("source")
        counters = Counters()
        match = source_matcher(self.only)
        reasons: list[str | None] = [None] * len(batch.texts)
        texts = list(batch.texts)
        for i, text in enumerate(batch.texts):
            if not match(sources[i]):
                counters.add("passed_through")
                continue
            src = counters.level("dedup_substrings", sources[i] or "")
            src["docs"] = src.get("docs", 0) + 1
            if not text:
                src["empty_docs"] = src.get("empty_docs", 0) + 1
                continue
            seq, ends = sequence(text, self.seq)
            src[self.seq] = src.get(self.seq, 0) + len(seq)
            gone = struck(window_hashes(seq, self.length), keys, self.length, len(seq))
            if not gone.any():
                continue
            raw = text.encode()
            starts = np.concatenate([[0], ends[:-1]])
            keep = np.ones(len(raw), bool)
            for a, b in zip(starts[gone].tolist(), ends[gone].tolist()):
                keep[a:b] = False
            new = np.frombuffer(raw, np.uint8)[keep].tobytes().decode("utf-8", "ignore")
            if self.seq != "bytes":  # bytes mode: bytes_cut below is the count
                src[f"{self.seq}_cut"] = src.get(f"{self.seq}_cut", 0) + int(gone.sum())
            src["bytes_cut"] = src.get("bytes_cut", 0) + len(raw) - len(new.encode())
            src["docs_changed"] = src.get("docs_changed", 0) + 1
            if len(new.strip()) < self.min_remaining_chars:
                reasons[i] = REASON
            else:
                texts[i] = new
        return Decisions(reasons, texts, counters=counters)


@stage("dedup substrings", section="deduplicate", order=40)
@dataclass
class SubstringDedup(Stage):
    """Strike every repeated span of at least --min-length tokens from all documents (Lee et al. 2021's ExactSubstr).

    A span of --min-length GPT-2 tokens (or bytes, --sequence bytes) or more that occurs twice
    or more anywhere in the inputs is cut out of every document holding it, all copies, as the
    paper's code does; found by a suffix array per chunk, merged across chunks by fingerprints.
    A document left with fewer than --min-remaining-chars characters is rejected
    (substrings:too_short).

    \b
    Example:
      curate dedup substrings --in out/dedup_lines --out out/dedup_substrings --min-length 50
    """

    name: ClassVar[str] = "dedup_substrings"
    sections: ClassVar[dict[str, str]] = {"subdoc": "counters.dedup_substrings"}
    kind: ClassVar[str] = "global"
    options: ClassVar[tuple[str, ...]] = MAP_OPTIONS
    option_help: ClassVar[dict[str, str]] = {**DEDUP_OPTION_HELP, "keep_rejected": "Write documents left too short to "
                                             "OUT/_rejected/ (reason substrings:too_short, their text as it came in)."}  # fmt: skip
    min_length: int = param(50, "Shortest repeated span struck, in --sequence units (the paper: 50 GPT-2 tokens).", min=2)
    sequence: str = param("tokens", "Compare GPT-2 tokens (the paper's setting) or UTF-8 bytes.", choices=SEQUENCES)
    min_remaining_chars: int = param(50, "Reject a document that lost text and has fewer characters left (substrings:too_short).",
                                     min=0)  # fmt: skip
    task_memory: str | None = param(None, TASK_MEMORY_HELP, metavar="SIZE", record=False)

    def __post_init__(self) -> None:
        if self.sequence not in SEQUENCES:
            raise CurateError(f"--sequence {self.sequence!r}: choose tokens or bytes")

    def summary(self, record: dict[str, Any]) -> list[str]:
        per = record.get("counters", {}).get("dedup_substrings", {})
        seen = sum(s.get(self.sequence, 0) for s in per.values())
        cut = sum(s.get(f"{self.sequence}_cut", 0) for s in per.values())
        nbytes = sum(s.get("bytes_cut", 0) for s in per.values())
        return [*super().summary(record), f"  {self.sequence} cut: {cut:,} of {seen:,} ({nbytes:,} bytes)"]

    def run(self, ctx: Context) -> dict[str, Any]:
        """Suffix arrays per chunk, the merge of their fingerprints, then the removal pass."""
        files = ctx.files
        work = ctx.work
        plan = Plan(work, budget_of(self.task_memory, ctx))
        budget = plan.budget
        t0 = time.perf_counter()
        text_bytes = text_bytes_upper_bound(files)
        rows = sum(shard_rows(files))
        per_doc = SEQ_BYTES * max(1, text_bytes // max(1, rows))
        chunk_rows = plan.get("chunk_rows", lambda: max(1, min(budget // 2 // per_doc, -(-rows // min_partitions()))))
        chunks = plan.get("chunks", lambda: plan_chunks(files, chunk_rows)[0])
        fine = plan.get("fine_parts", lambda: plan_partitions(text_bytes + 1, FP_BYTES, budget, power_of_two=True))
        fps = [str(work / "sa" / f"c-{k:06d}.arrow") for k in range(len(chunks))]
        jobs = [
            ChunkJob(k, s, a, b, str(files[s]), fps[k], fine, self.sequence, self.min_length, ctx.common.only_sources)
            for k, (s, a, b) in enumerate(chunks)
        ]
        ctx.map(chunk_job, jobs, labels=[f"chunk-{k:06d}" for k in range(len(chunks))], desc="dedup substrings: suffix arrays",
                unit="chunk")  # fmt: skip
        t1 = time.perf_counter()

        def tasks() -> list[list[int]]:
            counts = np.zeros(fine, np.int64)
            for f in fps:
                counts += partition_counts(as_path(f))
            return group_parts(counts, FP_BYTES, budget)

        groups = plan.get("merge_groups", tasks)
        outs = [str(work / "repeated" / f"t-{g:05d}") for g in range(len(groups))]
        shard_of_chunk = [int(s) for s, _a, _b in chunks]
        mjobs = [MergeJob(g, parts, fps, shard_of_chunk, len(files), outs[g], budget) for g, parts in enumerate(groups)]
        ctx.map(merge_job, mjobs, labels=[f"task-{g:05d}" for g in range(len(groups))], desc="dedup substrings: merge", unit="task")
        t2 = time.perf_counter()

        def per_shard(i: int, _path: Any) -> ApplySubstrings:
            return ApplySubstrings(outs, i, self.sequence, self.min_length, self.min_remaining_chars, only)

        def record(_merged: dict[str, Any]) -> dict[str, Any]:
            info = {k: v for k, v in plan.data.items() if k not in ("chunks", "merge_groups")}
            info["merge_tasks"] = len(groups)
            return {"dedup_substrings": {"plan": info, "phase_seconds": {"suffix_arrays": round(t1 - t0, 3), "merge": round(t2 - t1, 3)}}}

        only = ctx.common.only_sources
        ctx.common = dataclasses.replace(ctx.common, only_sources=None)  # the removal pass applies it (row numbers)
        return ctx.map_pass(per_shard=per_shard, finish=record)
