"""The decontam stage's three phases over a dataset directory.

1. **index**: hash the evaluation sets into ``OUT/_work/index/`` (sorted uint64 keys,
   memory-mapped by every worker; on Ray put in the object store once instead, so that
   tasks on other machines need no shared filesystem).
2. **count**: one job per input shard finds every key in every document and records the
   shard's (document id hash, key) pairs in ``OUT/_work/count/``, and each key's number of
   documents in the shard, bucketed by key (``count/freq/``); one *merge* job per bucket of
   keys sums them into each key's document frequency and writes the keys over
   ``--freq-limit`` (``merge/``, gathered into ``ignored.npy``: at most the index's keys).
   No process holds the pairs of the corpus: a key's frequency is summed per bucket, and
   the documents to cut are found per shard from its own pairs.
3. **cut**: the runtime's map pass (resumable, per-shard stats, ``_rejected/``) with a
   stage that re-reads only its shard's documents to cut and passes every other one through.

Each phase's files are written atomically and reused by a re-run with the same parameters.
"""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from curate.dataset import iter_tables
from curate.decontam.cut import SENTENCE_ENDS, DecontamStage, find_matches, id_hashes
from curate.decontam.evalsets import fingerprint, load_eval_set, parse_specs
from curate.decontam.index import INDEX_JSON, Index, build_index
from curate.errors import CurateError
from curate.partitions import (
    TASK_MEMORY_HELP,
    Plan,
    bucket_counts,
    budget_of,
    check_fits,
    hash_partition,
    plan_partitions,
    read_buckets,
    write_buckets,
)
from curate.registry import stage
from curate.runtime import Context, Stage, param
from curate.storage import as_path, np_load, save_npy_atomic, write_bytes_atomic, write_json_atomic
from curate.targets import shard_name

log = logging.getLogger("curate")
WORK = "_work"
EXAMPLE_CHARS = 160


def _npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


@dataclass
class _CountJob:
    input: Path
    index: Path
    out: Path
    name: str
    fingerprint: str
    shared_index: Any = None  # a handle from Executor.share (Ray): the index without reading work files
    key_parts: int = 1  # buckets of keys for the merge


def _count_shard(job: _CountJob) -> dict[str, Any]:
    """Phase 2 for one shard: unique (id hash, key) pairs, an example text per key, counters."""
    t0 = time.perf_counter()
    index = job.shared_index.get() if job.shared_index is not None else Index.open(job.index)
    docs_parts, key_parts = [], []
    examples: dict[str, str] = {}
    stats = {"docs": 0, "chars": 0, "docs_no_words": 0, "docs_matched": 0, "matches": 0}
    for table in iter_tables(job.input, columns=["id", "text"]):
        if table.num_rows == 0:
            continue
        texts = [t or "" for t in table.column("text").to_pylist()]
        stats["docs"] += len(texts)
        stats["chars"] += sum(map(len, texts))
        m = find_matches(texts, index)
        stats["docs_no_words"] += int(np.count_nonzero(m.words == 0))
        if not len(m):
            continue
        stats["matches"] += len(m)
        hit_docs = np.unique(m.doc)
        stats["docs_matched"] += int(hit_docs.size)
        ids = table.column("id").take(hit_docs).to_pylist()
        idh = np.zeros(len(texts), dtype=np.uint64)
        idh[hit_docs] = id_hashes(ids)
        pairs = np.unique(np.stack([idh[m.doc], m.key], axis=1), axis=0) if len(m) > 1 else np.stack([idh[m.doc], m.key], axis=1)
        docs_parts.append(pairs[:, 0])
        key_parts.append(pairs[:, 1])
        for d, s, e, k in zip(m.doc.tolist(), m.start.tolist(), m.end.tolist(), m.key.tolist()):
            examples.setdefault(f"{k:016x}", texts[d][s:e][:EXAMPLE_CHARS])
    docs = np.concatenate(docs_parts) if docs_parts else np.zeros(0, np.uint64)
    keys = np.concatenate(key_parts) if key_parts else np.zeros(0, np.uint64)
    buf = io.BytesIO()
    np.savez(buf, docs=docs, keys=keys)
    write_bytes_atomic(job.out / f"{job.name}.npz", buf.getvalue())
    if len(keys):  # the pairs are unique per (document, key): a key's count here is its documents in this shard
        uk, n = np.unique(keys, return_counts=True)
    else:
        uk, n = np.zeros(0, np.uint64), np.zeros(0, np.int64)
    write_buckets(job.out / "freq" / job.name, {"key": uk, "n": n.astype(np.int64)}, hash_partition(uk, job.key_parts), job.key_parts)
    stats["seconds"] = round(time.perf_counter() - t0, 3)
    record = {"input": str(job.input), "index": job.fingerprint, "stats": stats, "examples": examples}
    write_json_atomic(job.out / f"{job.name}.json", record)  # last: marks the shard counted
    return stats


def _counted(marker: Path, fp: str) -> bool:
    try:
        return json.loads(marker.read_text()).get("index") == fp
    except (OSError, ValueError):
        return False


def _describe_count(stats: dict[str, Any]) -> str:
    return f"{stats['docs']:,} docs, {stats['docs_matched']:,} with matches, {stats['seconds']:.1f} s"


MERGE_BYTES = 64  # one (key, count) row in a merge job, with its sort


@dataclass
class _MergeJob:
    part: int
    inputs: list[str]
    out: str
    freq_limit: int
    budget: int


def _merge_job(job: _MergeJob) -> dict[str, Any]:
    """One bucket of keys: each key's document frequency over every shard; the keys over the limit, the most frequent first."""
    marker = as_path(job.out + ".json")
    if marker.exists():
        return json.loads(marker.read_text())
    paths = [as_path(p) for p in job.inputs]
    rows = int(sum(bucket_counts(p)[job.part] for p in paths))
    check_fits(rows, MERGE_BYTES, job.budget, f"decontam: n-gram counts of key bucket {job.part}")
    c = read_buckets(paths, [job.part], ["key", "n"])
    keys, n = c["key"].astype(np.uint64), c["n"].astype(np.int64)
    uniq, inv = np.unique(keys, return_inverse=True) if len(keys) else (np.zeros(0, np.uint64), np.zeros(0, np.int64))
    freq = np.bincount(inv, weights=n, minlength=len(uniq)).astype(np.int64) if len(keys) else np.zeros(0, np.int64)
    over = freq > job.freq_limit if job.freq_limit > 0 else np.zeros(len(uniq), bool)
    save_npy_atomic(as_path(job.out + ".npy"), uniq[over])
    top = np.argsort(-freq[over], kind="stable")[:20]
    stats = {"keys_matched": int(len(uniq)), "keys_ignored": int(over.sum()),
             "top": [[f"{int(k):016x}", int(f)] for k, f in zip(uniq[over][top], freq[over][top])]}  # fmt: skip
    write_json_atomic(marker, stats)
    return stats


def _gather(count_dir: Any, names: list[str], merged: list[dict[str, Any]], merge_out: list[str]) -> tuple[np.ndarray, dict[str, Any]]:
    """The ignored keys of every bucket (sorted; at most the index's keys) and the counting summary."""
    ignored = (
        np.unique(np.concatenate([np.asarray(np_load(as_path(m + ".npy"), mmap=False)) for m in merge_out]))
        if merge_out
        else np.zeros(0, np.uint64)
    )
    totals: dict[str, int] = {}
    examples: dict[str, str] = {}
    wanted = {k for r in merged for k, _ in r["top"]}
    for name in names:
        rec = json.loads((count_dir / f"{name}.json").read_text())
        for k, v in rec["stats"].items():
            if k != "seconds":
                totals[k] = totals.get(k, 0) + v
        for k in wanted:
            if k in rec["examples"]:
                examples.setdefault(k, rec["examples"][k])
    top = sorted(((f, k) for r in merged for k, f in r["top"]), key=lambda fk: (-fk[0], fk[1]))[:20]
    summary = {**totals, "keys_matched": sum(r["keys_matched"] for r in merged), "keys_ignored": int(ignored.size),
               "ignored_examples": [{"ngram": examples.get(k, ""), "docs": f} for f, k in top]}  # fmt: skip
    return ignored.astype(np.uint64), summary


def check_options(
    ngram: int, min_ngram: int, cut_chars: int, min_piece_chars: int, max_pieces: int, freq_limit: int, sentence_ends: str
) -> None:
    """One-line errors for option values that make no sense."""
    if ngram < 1:
        raise CurateError(f"--ngram must be at least 1, got {ngram}")
    if not 1 <= min_ngram <= ngram:
        raise CurateError(f"--min-ngram must be between 1 and --ngram ({ngram}), got {min_ngram}")
    for opt, v in (("--cut-chars", cut_chars), ("--min-piece-chars", min_piece_chars), ("--freq-limit", freq_limit)):
        if v < 0:
            raise CurateError(f"{opt} must be at least 0, got {v}")
    if max_pieces < 1:
        raise CurateError(f"--max-pieces must be at least 1, got {max_pieces}")
    if not sentence_ends or re.search(r"\w", sentence_ends):
        raise CurateError(f"--sentence-ends must be punctuation or spaces, not word characters (got {sentence_ends!r})")


@stage("decontam", section="decontaminate", order=10)
@dataclass
class Decontam(Stage):
    """Cut evaluation-set 13-grams out of the training documents (MT-NLG decontamination).

    Every 13-gram of lowercase words of an evaluation text (or the whole text, for texts
    of 8 to 12 words) is a key. Each match in a training document is removed with 200
    characters on each side, extended to the nearest sentence end (. ! ?), and the
    document is split there: pieces get ids <id>-<k> and meta.decontam_parent; pieces
    under 200 characters are dropped (reason decontam_short_piece), a document left in
    more than 10 pieces is dropped whole (decontam_too_many_pieces). N-grams found in more
    than --freq-limit training documents are ignored (a first counting pass). Untouched
    documents keep their id. Work files (the index, counts) are under OUT/_work/.

    \b
    Example:
      curate decontam --in out/dedup --out out/decontam \\
          --eval sample_data/eval/lambada_like.jsonl \\
          --eval sample_data/eval/qa_like.jsonl --eval-field qa_like=question,answer
    """

    name: ClassVar[str] = "decontam"
    sections: ClassVar[dict[str, str]] = {"decontam": "counters.decontam_per_eval_set", "decontam_index": "decontam"}
    kind: ClassVar[str] = "global"
    evals: list[str] = param([], "Evaluation set (repeatable): a .jsonl/.json/.parquet/.txt file (.gz/.zst too), a directory of them "
                             "(one set per file), or a hub dataset NAME[:CONFIG] loaded with `datasets` ('hub:' forces the hub).",
                             flag="--eval", metavar="PATH|NAME", multiple=True, required=True)  # fmt: skip
    eval_fields: list[str] = param([], "Fields joined with a space into an item's text (repeatable or comma-separated; dotted for "
                                   "nested); SET=FIELDS for one set only.  [default: text]", flag="--eval-field",
                                   metavar="[SET=]FIELD,...", multiple=True)  # fmt: skip
    eval_splits: list[str] = param([], "Hub splits to read (comma-separated; SET=SPLITS for one set).  [default: test]",
                                   flag="--eval-split", metavar="[SET=]SPLIT,...", multiple=True)  # fmt: skip
    ngram: int = param(13, "Words per n-gram key.", min=1)
    min_ngram: int = param(8, "Evaluation texts of min-ngram to ngram-1 words are used whole as keys; shorter ones are ignored.", min=1)
    cut_chars: int = param(200, "Characters removed on each side of a match, then extended to the nearest sentence end.", min=0)
    min_piece_chars: int = param(200, "Pieces shorter than this are dropped.", min=0)
    max_pieces: int = param(10, "A document left in more pieces is dropped whole.", min=1)
    freq_limit: int = param(10, "N-grams found in more training documents than this are ignored as too common (0: no limit).", min=0)
    task_memory: str | None = param(None, TASK_MEMORY_HELP, metavar="SIZE", record=False)
    sentence_ends: str = param(SENTENCE_ENDS, "Characters that end a sentence (MT-NLG: .!?).")

    def __post_init__(self) -> None:
        check_options(self.ngram, self.min_ngram, self.cut_chars, self.min_piece_chars, self.max_pieces, self.freq_limit,
                      self.sentence_ends)  # fmt: skip
        self.specs = parse_specs(list(self.evals), list(self.eval_fields), list(self.eval_splits))
        self.sets = [load_eval_set(s) for s in self.specs]
        self.eval_fingerprint = fingerprint(self.sets)

    def derived_params(self) -> dict[str, Any]:
        return {"eval_fingerprint": self.eval_fingerprint}

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "sets"}

    def summary(self, record: dict[str, Any]) -> list[str]:
        return [*super().summary(record), *contamination_lines(record)]

    def run(self, ctx: Context) -> dict[str, Any]:
        """Index the evaluation sets, count matches per shard, then cut (the map pass)."""
        t0 = time.perf_counter()
        files = ctx.files
        work = ctx.work
        fp = self.eval_fingerprint
        sets = self.sets
        stage = DecontamStage(
            evals=list(self.evals),
            eval_fields=list(self.eval_fields),
            eval_splits=list(self.eval_splits),
            eval_fingerprint=fp,
            ngram=self.ngram,
            min_ngram=self.min_ngram,
            cut_chars=self.cut_chars,
            min_piece_chars=self.min_piece_chars,
            max_pieces=self.max_pieces,
            freq_limit=self.freq_limit,
            sentence_ends=self.sentence_ends,
            work=str(work),
        )

        # Phase 1: the index (reused when the evaluation sets and n-gram sizes are unchanged).
        index_dir = work / "index"
        info_file = index_dir / INDEX_JSON
        old = json.loads(info_file.read_text()) if info_file.exists() else {}
        if old.get("fingerprint") == fp and old.get("n") == self.ngram and old.get("min_n") == self.min_ngram:
            index = Index.load(index_dir)
            log.info("decontam: reusing the index in %s", index_dir)
        else:
            index = build_index([(s.spec.name, s.texts) for s in sets], self.ngram, self.min_ngram, fp)
            index.save(index_dir)
        # Ray: the index goes through the object store once (tasks on other machines need no shared filesystem).
        shared_index = ctx.share(index) if ctx.on_ray else None
        info = dict(index.info)
        info["seconds"] = round(time.perf_counter() - t0, 3)
        log.info(
            "decontam: index of %s keys from %d evaluation set(s), %.1f MB (%.1f bytes per n-gram)",
            f"{info['entries']:,}",
            len(sets),
            info["bytes"] / 1e6,
            info["bytes_per_ngram"],
        )
        del index

        # Phase 2: document frequency of every key (one job per shard; counted shards are kept).
        count_dir = work / "count"
        names = [shard_name(i) for i in range(len(files))]
        plan = Plan(work, budget_of(self.task_memory, ctx))
        # a key's (shard, count) rows: at most every index key in every shard; planned on a share of that
        key_parts = plan.get("key_parts", lambda: plan_partitions(int(info["entries"]) * min(len(files), 64), MERGE_BYTES, plan.budget))
        jobs = [
            _CountJob(f, index_dir, count_dir, n, fp, shared_index, key_parts)
            for f, n in zip(files, names)
            if not _counted(count_dir / f"{n}.json", fp)
        ]
        if jobs:
            ctx.map(_count_shard, jobs, labels=[j.name for j in jobs], desc="decontam count", describe=_describe_count)
        freq_files = [str(count_dir / "freq" / n) for n in names]
        merge_out = [str(work / "merge" / f"part-{k:05d}") for k in range(key_parts)]
        mjobs = [_MergeJob(k, freq_files, merge_out[k], self.freq_limit, plan.budget) for k in range(key_parts)]
        merged = ctx.map(_merge_job, mjobs, labels=[f"keys-{k:05d}" for k in range(key_parts)], desc="decontam merge", unit="bucket")
        ignored, counting = _gather(count_dir, names, merged, merge_out)
        write_bytes_atomic(work / "ignored.npy", _npy_bytes(ignored))
        if ctx.on_ray:
            stage.shared = (shared_index, ctx.share(ignored))
        log.info("decontam: %s n-gram(s) ignored as too common (in more than %d documents)", f"{counting['keys_ignored']:,}",
                 self.freq_limit)  # fmt: skip

        # Phase 3: cut (the runtime's resumable map pass), each shard with its own documents to cut.
        def finish(merged_stats: dict[str, Any]) -> dict[str, Any]:
            counting["docs_to_cut"] = int((merged_stats.get("counters") or {}).get("decontam_docs_to_cut", 0))
            return {"decontam": {"index": info, "counting": counting}}

        def per_shard(i: int, _path: Any) -> DecontamStage:
            return dataclasses.replace(stage, counts=str(count_dir / f"{names[i]}.npz"))

        return ctx.map_pass(per_shard=per_shard, finish=finish)


def contamination_lines(record: dict[str, Any]) -> list[str]:
    """Human lines for the CLI: the index and the counters per evaluation set."""
    lines = []
    d = record.get("decontam", {})
    idx = d.get("index", {})
    if idx:
        lines.append(
            f"  index: {idx.get('entries', 0):,} keys from {len(idx.get('sets', []))} evaluation set(s), "
            f"{idx.get('bytes', 0) / 1e6:.1f} MB ({idx.get('bytes_per_ngram', 0)} bytes per n-gram)"
        )
    cnt = d.get("counting", {})
    if cnt.get("keys_ignored"):
        lines.append(f"  ignored as too common: {cnt['keys_ignored']:,} n-gram(s)")
    per = record.get("counters", {}).get("decontam_per_eval_set", {})
    for name in idx.get("sets", sorted(per)):
        c = per.get(name, {})
        lines.append(
            f"  {name}: {c.get('docs_contaminated', 0):,} docs contaminated, {c.get('pieces_kept', 0):,} pieces kept, "
            f"{c.get('pieces_dropped', 0):,} dropped, {c.get('docs_dropped', 0):,} docs dropped, {c.get('chars_removed', 0):,} chars removed"
        )
    return lines
