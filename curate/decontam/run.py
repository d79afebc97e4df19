"""The decontam stage's three phases over a dataset directory.

1. **index**: hash the evaluation sets into ``OUT/_work/index/`` (sorted uint64 keys,
   memory-mapped by every worker; on Ray put in the object store once instead, so that
   tasks on other machines need no shared filesystem).
2. **count**: one job per input shard finds every key in every document and records the
   (document id hash, key) pairs in ``OUT/_work/count/``; merged, they give each key's
   document frequency, the keys over ``--freq-limit`` (``ignored.npy``) and the documents
   to cut (``cut_docs.npy``).
3. **cut**: the runtime's map pass (resumable, per-shard stats, ``_rejected/``) with a
   stage that re-reads only the documents to cut and passes every other one through.

Each phase's files are written atomically and reused by a re-run with the same parameters.
"""

from __future__ import annotations

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
from curate.decontam.index import INDEX_JSON, Index, _sorted_unique, build_index
from curate.errors import CurateError
from curate.registry import stage
from curate.runtime import Context, Stage, param
from curate.storage import np_load, write_bytes_atomic, write_json_atomic
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


def _merge_counts(count_dir: Path, names: list[str], freq_limit: int) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Document frequency per key -> (ignored keys, id hashes of documents to cut, summary)."""
    docs_parts, key_parts = [], []
    examples: dict[str, str] = {}
    totals: dict[str, int] = {}
    for name in names:
        with np_load(count_dir / f"{name}.npz", mmap=False) as z:
            docs_parts.append(z["docs"])
            key_parts.append(z["keys"])
        rec = json.loads((count_dir / f"{name}.json").read_text())
        for k, v in rec["stats"].items():
            if k != "seconds":
                totals[k] = totals.get(k, 0) + v
        for k, v in rec["examples"].items():
            examples.setdefault(k, v)
    docs = np.concatenate(docs_parts) if docs_parts else np.zeros(0, np.uint64)
    keys = np.concatenate(key_parts) if key_parts else np.zeros(0, np.uint64)
    uniq = _sorted_unique(keys)
    freq = np.bincount(np.searchsorted(uniq, keys), minlength=uniq.size) if keys.size else np.zeros(0, np.int64)
    over = freq > freq_limit if freq_limit > 0 else np.zeros(uniq.size, dtype=np.bool_)
    ignored = uniq[over]
    active = ~np.isin(keys, ignored) if ignored.size else np.ones(keys.size, dtype=np.bool_)
    cut_docs = _sorted_unique(docs[active])
    top = np.argsort(-freq[over], kind="stable")[:20]
    summary = {
        **totals,
        "keys_matched": int(uniq.size),
        "keys_ignored": int(ignored.size),
        "docs_to_cut": int(cut_docs.size),
        "ignored_examples": [{"ngram": examples.get(f"{int(k):016x}", ""), "docs": int(f)} for k, f in zip(ignored[top], freq[over][top])],
    }
    return ignored, cut_docs, summary


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
        jobs = [
            _CountJob(f, index_dir, count_dir, n, fp, shared_index)
            for f, n in zip(files, names)
            if not _counted(count_dir / f"{n}.json", fp)
        ]
        if jobs:
            ctx.map(_count_shard, jobs, labels=[j.name for j in jobs], desc="decontam count", describe=_describe_count)
        ignored, cut_docs, counting = _merge_counts(count_dir, names, self.freq_limit)
        write_bytes_atomic(work / "ignored.npy", _npy_bytes(ignored))
        write_bytes_atomic(work / "cut_docs.npy", _npy_bytes(cut_docs))
        if ctx.on_ray:
            stage.shared = (shared_index, ctx.share((ignored, cut_docs)))
        log.info(
            "decontam: %s of %s documents hold evaluation n-grams; %s n-gram(s) ignored as too common (in more than %d documents)",
            f"{counting['docs_to_cut']:,}",
            f"{counting.get('docs', 0):,}",
            f"{counting['keys_ignored']:,}",
            self.freq_limit,
        )

        # Phase 3: cut (the runtime's resumable map pass).
        def finish(merged: dict[str, Any]) -> dict[str, Any]:
            return {"decontam": {"index": info, "counting": counting}}

        return ctx.map_pass(stage, finish=finish)


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
