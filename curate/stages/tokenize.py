"""Tokenize dataset directories into Megatron-LM indexed datasets (a sink stage).

Phase 1 cuts the input shards into *pieces* (runs of Parquet row groups of about
``CURATE_TOKENIZE_PIECE_MB`` uncompressed MB, fixed by the files alone) and tokenizes each
piece in a worker into its own ``.bin``/``.idx`` under a work directory, resumably: a
piece whose ``.json`` exists is done. Phase 2 concatenates the pieces' ``.bin`` bytes in
input order and rebases the pointers (no re-tokenizing), so the output does not depend
on the number of workers. The merged index is written in place as pieces are copied
(memory: one piece's index at a time). Tokenizers: see ``curate/tokenizer.py``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate import __version__, megatron
from curate.dataset import Inputs, check_columns, dataset_inputs, open_parquet, repair_utf8
from curate.errors import CurateError
from curate.registry import stage
from curate.runtime import Common, Context, Stage, param
from curate.schema import source_matcher
from curate.stats import merge_counts
from curate.storage import AnyPath, as_path, rmtree, write_json_atomic
from curate.targets import OutputDir, Target, read_json
from curate.tokenizer import HF_EOD_CANDIDATES, load_tokenizer

log = logging.getLogger("curate")

# --------------------------------------------------------------------------- pieces


PIECE_BYTES = int(float(os.environ.get("CURATE_TOKENIZE_PIECE_MB", "16")) * 1e6)
READ_ROWS = 1024
WORK_PARAMS = "_params.json"


SLUG_MAX = 100


def source_slug(source: str) -> str:
    """``pile/Wikipedia`` -> ``pile_Wikipedia``: a file name for a source that stays inside the output directory.

    Sources come from the data, so anything but letters, digits, ``.``, ``_`` and ``-`` becomes
    ``_``, leading dots, underscores and dashes go (no ``..``, hidden, ``_work``-like or option-like names), and a
    name longer than 100 characters is cut and ends with a hash of the whole source.
    """
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", source).lstrip("._-").rstrip("_") or "unknown"
    if len(slug) > SLUG_MAX:
        slug = f"{slug[: SLUG_MAX - 17]}-{hashlib.sha256(source.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"
    return slug


@dataclass
class Piece:
    """A run of row groups of one input shard, tokenized by one worker."""

    name: str
    path: str
    row_groups: list[int]
    rows: int
    size: int  # input file bytes, to notice a rewritten input on resume
    mtime_ns: int


@dataclass
class PieceJob:
    piece: Piece
    work: str
    tokenizer: str
    eod_token: str | None
    append_eod: bool
    per_source: bool
    sources: str | None
    dtype: str
    buckets: tuple[int, int] | None = None  # keep only documents whose quality_bucket is in [lo, hi] (a blend source's range)


def plan_pieces(files: list[Path], piece_bytes: int | None = None) -> list[Piece]:
    """Cut the shards into pieces of whole row groups, about ``piece_bytes`` each; fixed by the files alone."""

    piece_bytes = piece_bytes or PIECE_BYTES
    pieces = []
    for i, f in enumerate(files):
        md = open_parquet(f).metadata
        st = f.stat()
        group: list[int] = []
        size = rows = 0
        for rg in range(md.num_row_groups):
            group.append(rg)
            size += md.row_group(rg).total_byte_size
            rows += md.row_group(rg).num_rows
            if size >= piece_bytes:
                pieces.append(Piece(f"p{i:05d}-{group[0]:05d}", str(f), group, rows, st.st_size, st.st_mtime_ns))
                group, size, rows = [], 0, 0
        if group or md.num_row_groups == 0:
            pieces.append(Piece(f"p{i:05d}-{group[0] if group else 0:05d}", str(f), group, rows, st.st_size, st.st_mtime_ns))
    return pieces


def _empty_counts() -> dict[str, int]:
    return {"documents": 0, "tokens": 0, "bytes": 0}


def tokenize_piece(job: PieceJob) -> dict[str, Any]:
    """Tokenize one piece into ``WORK/<piece>.<key>.bin/.idx`` and write ``WORK/<piece>.json`` last."""

    t0 = time.perf_counter()
    tok = load_tokenizer(job.tokenizer, job.eod_token)
    dtype = np.dtype(job.dtype)
    eod = np.array([tok.eod], dtype=np.uint32) if job.append_eod else None
    piece, work = job.piece, as_path(job.work)
    match = source_matcher(job.sources) if job.sources else None
    writers: dict[str, megatron.IndexedDatasetWriter] = {}
    keys: dict[str, str] = {}
    per_source: dict[str, dict[str, int]] = {}
    skipped: dict[str, int] = {}
    repaired: dict[str, int] = {}

    def writer_for(source: str | None) -> megatron.IndexedDatasetWriter:
        key = source_slug(source) if source is not None else "all"
        if source is not None:
            keys[source] = key  # every source, so that two sources with one slug are caught at the merge
        if key not in writers:
            writers[key] = megatron.IndexedDatasetWriter(work / f"{piece.name}.{key}", dtype)
        return writers[key]

    def emit(source_key: str | None, arrays: list[np.ndarray]) -> None:
        if not arrays:
            return
        lengths = np.fromiter((len(a) for a in arrays), dtype=np.int64, count=len(arrays))
        if eod is not None:
            parts = [x for a in arrays for x in (a, eod)]
            lengths += 1
        else:
            parts = arrays
        flat = np.concatenate(parts).astype(dtype, copy=False)
        writer_for(source_key).add_documents(flat, lengths)

    try:
        pf = open_parquet(as_path(piece.path))
        cols = ["text", "source", "quality_bucket"] if job.buckets else ["text", "source"]
        check_columns(as_path(piece.path), pf.schema_arrow, cols)
        if not job.per_source:
            writer_for(None)
        batches = (
            pf.iter_batches(batch_size=READ_ROWS, row_groups=piece.row_groups, columns=cols, use_threads=False) if piece.row_groups else []
        )
        md = pf.metadata
        row = sum(md.row_group(i).num_rows for i in range(piece.row_groups[0])) if piece.row_groups else 0
        for batch in batches:
            batch, fixed = repair_utf8(pa.Table.from_batches([batch]))  # invalid UTF-8 from a foreign file: U+FFFD, counted
            if batch.column("source").null_count:
                at = row + int(pc.index(pc.is_null(batch.column("source")), True).as_py())
                raise CurateError(f"{piece.path}: row {at}: source is null (every document needs a source)")
            row += batch.num_rows
            merge_counts(repaired, fixed)
            src_col = pc.fill_null(batch.column("source").cast(pa.string()), "")
            sources = src_col.to_pylist()
            texts = [t or "" for t in batch.column("text").to_pylist()]  # a null text counts as empty
            nbytes = pc.binary_length(batch.column("text")).to_numpy(zero_copy_only=False)
            if job.buckets is not None:
                lo, hi = job.buckets
                b = batch.column("quality_bucket").to_pylist()
                keep = [i for i, k in enumerate(b) if k is not None and lo <= k <= hi]
                if len(keep) < len(sources):
                    skipped["other_bucket"] = skipped.get("other_bucket", 0) + len(sources) - len(keep)
                    sources, texts, nbytes = [sources[i] for i in keep], [texts[i] for i in keep], nbytes[keep]
            if match is not None:
                keep = [i for i, s in enumerate(sources) if match(s)]
                if len(keep) < len(sources):
                    skipped["other_source"] = skipped.get("other_source", 0) + len(sources) - len(keep)
                    sources = [sources[i] for i in keep]
                    texts = [texts[i] for i in keep]
                    nbytes = nbytes[keep]
            arrays = tok.encode(texts)
            groups: dict[str, list[np.ndarray]] = {}
            order: list[str | None] = []
            for s, a, b in zip(sources, arrays, nbytes):
                st = per_source.get(s)
                if st is None:
                    st = per_source[s] = _empty_counts()
                if len(a) == 0:
                    skipped["empty"] = skipped.get("empty", 0) + 1
                    st["skipped_empty"] = st.get("skipped_empty", 0) + 1
                    continue
                st["documents"] += 1
                st["tokens"] += len(a) + (1 if eod is not None else 0)
                st["bytes"] += int(b)
                key = s if job.per_source else "*"
                if key not in groups:
                    groups[key] = []
                    order.append(key)
                groups[key].append(a)
            for key in order:
                emit(key if job.per_source else None, groups[key])
        counts = {k: w.finish() for k, w in writers.items()}
    except BaseException:
        for w in writers.values():
            w.abort()
        raise
    docs = sum(c[0] for c in counts.values())
    tokens = sum(c[1] for c in counts.values())
    record = {
        "piece": piece.name,
        "input": piece.path,
        "row_groups": piece.row_groups,
        "input_size": piece.size,
        "input_mtime_ns": piece.mtime_ns,
        "outputs": keys if job.per_source else {"*": "all"},
        "documents": docs,
        "tokens": tokens,
        "bytes": sum(v["bytes"] for v in per_source.values()),
        "skipped": skipped,
        "invalid_utf8_repaired": repaired,
        "per_source": per_source,
        "seconds": round(time.perf_counter() - t0, 4),
    }
    write_json_atomic(work / f"{piece.name}.json", record)
    return record


def describe_piece(rec: dict[str, Any]) -> str:
    return f"{rec['documents']:,} docs, {rec['tokens']:,} tokens, {rec['seconds']:.1f} s"


# --------------------------------------------------------------------------- outputs


class NoDocuments(CurateError):
    """Nothing to tokenize: the inputs (or the documents of the selected sources) are empty."""


@dataclass
class Outputs:
    """Where a tokenize run writes: one prefix, or one prefix per source in a directory (local or an fsspec URL)."""

    out: AnyPath
    per_source: bool

    @property
    def marker(self) -> AnyPath:
        return self.out / "_SUCCESS" if self.per_source else as_path(f"{self.out}.stats.json")

    @property
    def work(self) -> AnyPath:
        return self.out / "_work" if self.per_source else as_path(f"{self.out}.work")

    def prefix(self, source: str | None) -> AnyPath:
        return self.out / source_slug(source) if (self.per_source and source is not None) else self.out


class PrefixTarget(Target):
    """One tokenized prefix: PREFIX.bin, PREFIX.idx, PREFIX.stats.json (the record, last) and PREFIX.work/ while it runs."""

    def __init__(self, prefix: str | os.PathLike) -> None:
        self.path = as_path(prefix)
        self.outs = Outputs(self.path, False)
        self.files = [as_path(f"{self.path}{s}") for s in (".bin", ".idx", ".stats.json")]
        self.params_file = self.outs.work / WORK_PARAMS
        self.record_file = self.outs.marker

    def locations(self) -> list[AnyPath]:
        return [self.path, *self.files, self.outs.work]

    def data_files(self) -> list[tuple[str, AnyPath]]:
        return [(f.name, f) for f in self.files[:2]]

    def exists(self) -> bool:
        if self.path.is_dir():
            raise CurateError(f"{self.path}: is a directory; --out is a prefix (OUT.bin, OUT.idx), or a directory with --per-source")
        return any(f.exists() for f in self.files) or self.outs.work.exists()

    def read_params(self) -> dict[str, Any] | None:
        rec = read_json(self.record_file)
        if rec is not None and isinstance(rec.get("params"), dict):
            return {"_stage": rec.get("stage"), **rec["params"]}
        return read_json(self.params_file)

    def write_record(self, record: dict[str, Any]) -> None:
        super().write_record(record)
        rmtree(self.outs.work, ignore_errors=True)

    def invalidate(self) -> None:
        if self.record_file.exists():
            rec = self.read_params()
            self.record_file.unlink()
            if rec is not None and not self.params_file.exists():
                self.write_params(rec)

    def create(self) -> None:
        self.outs.work.mkdir(parents=True, exist_ok=True)
        _clear_temporary(self.outs)

    def clear(self) -> None:
        super().clear()
        if self.outs.work.exists():
            rmtree(self.outs.work)


class SourcesTarget(OutputDir):
    """--per-source: a directory of prefixes, one per source, with _params.json and _SUCCESS."""

    def create(self) -> None:
        super().create()
        _clear_temporary(Outputs(self.path, True))


def _clear_temporary(outs: Outputs) -> None:
    """Temporary files of a run killed while merging (pieces' own are cleared by their re-run)."""
    if isinstance(outs.out, Path):
        found = outs.out.glob(".*.tmp.*") if outs.per_source else outs.out.parent.glob(f".{outs.out.name}.*.tmp.*")
        for stale in found:
            stale.unlink(missing_ok=True)


# --------------------------------------------------------------------------- the work


def _merge_stats(records: list[dict[str, Any]]) -> dict[str, Any]:
    total: dict[str, Any] = {"documents": 0, "tokens": 0, "bytes": 0, "skipped": {}, "per_source": {}, "cpu_seconds": 0.0}
    for r in records:
        merge_counts(total, {k: r[k] for k in ("documents", "tokens", "bytes", "skipped", "per_source", "invalid_utf8_repaired") if k in r})
        total["cpu_seconds"] += r["seconds"]
    total["cpu_seconds"] = round(total["cpu_seconds"], 3)
    return total


def tokenize_files(
    run_map: Callable[..., list[Any]],
    files: list[AnyPath],
    outs: Outputs,
    *,
    tokenizer: str = "gpt2",
    eod_token: str | None = None,
    append_eod: bool = True,
    sources: str | None = None,
    work_params: dict[str, Any] | None = None,
    buckets: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """Tokenize ``files`` into ``outs`` (pieces in its work directory, resumed, then merged); returns the record.

    With ``per_source`` each source's prefix gets its ``.stats.json``; the caller writes the
    top record (``outs.marker``). ``work_params`` identify the run: pieces of another run in
    the work directory are discarded. ``run_map`` is ``Context.map``.
    """
    t_start = time.monotonic()
    tok = load_tokenizer(tokenizer, eod_token)
    if append_eod and tok.eod is None:
        raise CurateError(
            f"{tokenizer}: no end-of-document token found (looked for {', '.join(HF_EOD_CANDIDATES)}); name one with --eod-token or use --no-append-eod"
        )
    dtype = megatron.dtype_for_vocab(tok.vocab_size)
    work = outs.work
    if work_params is not None:
        if work.exists() and read_json(work / WORK_PARAMS) not in (None, work_params):
            log.info("tokenize: %s holds pieces of another run; starting again", work)
            rmtree(work)
        work.mkdir(parents=True, exist_ok=True)
        write_json_atomic(work / WORK_PARAMS, work_params)
    work.mkdir(parents=True, exist_ok=True)
    for stale in work.glob(".*.tmp.*"):
        stale.unlink(missing_ok=True)
    pieces = plan_pieces(files)
    if sum(p.rows for p in pieces) == 0:
        raise NoDocuments(f"{', '.join(str(f) for f in files) or 'the inputs'}: no documents to tokenize")
    done: dict[str, dict[str, Any]] = {}
    pending = []
    for p in pieces:
        rec = read_json(work / f"{p.name}.json")
        if rec is not None and rec.get("input") == p.path and rec.get("input_size") == p.size and rec.get("input_mtime_ns") == p.mtime_ns:
            done[p.name] = rec
        else:
            pending.append(PieceJob(p, str(work), tokenizer, eod_token, append_eod, outs.per_source, sources, dtype.name, buckets))
    if done:
        log.info("tokenize: resuming, %d of %d piece(s) already done", len(done), len(pieces))
    results = run_map(tokenize_piece, pending, labels=[j.piece.name for j in pending], desc="tokenize", describe=describe_piece,
                      unit="piece")  # fmt: skip
    for job, rec in zip(pending, results):
        done[job.piece.name] = rec
    records = [done[p.name] for p in pieces]

    merged = _merge_stats(records)
    if merged["documents"] == 0:
        raise NoDocuments(f"no documents left to tokenize (skipped: {merged['skipped'] or 'none'})")
    base = {
        "stage": "tokenize",
        "curate_version": __version__,
        "tokenizer": tok.identity(),
        "dtype": dtype.name,
        "dtype_code": megatron.DTYPE_CODES[dtype],
        "append_eod": append_eod,
    }
    t_merge = time.monotonic()
    if not outs.per_source:
        megatron.merge([work / f"{r['piece']}.all" for r in records], outs.out, dtype)
        record = {**base, "prefix": str(outs.out), **merged}
    else:
        slugs: dict[str, str] = {}
        for r in records:
            for src, key in r["outputs"].items():
                if slugs.setdefault(key, src) != src:
                    raise CurateError(f"sources {slugs[key]!r} and {src!r} would both be written to {outs.prefix(src)}; rename one")
        prefixes = {}
        for src in sorted(set(slugs.values())):
            parts = [work / f"{r['piece']}.{r['outputs'][src]}" for r in records if src in r["outputs"]]
            prefix = outs.prefix(src)
            megatron.merge(parts, prefix, dtype)
            s = merged["per_source"][src]
            src_rec = {**base, "prefix": str(prefix), "source": src, **{k: s.get(k, 0) for k in ("documents", "tokens", "bytes")}}
            src_rec["skipped"] = {"empty": s["skipped_empty"]} if s.get("skipped_empty") else {}
            src_rec["per_source"] = {src: s}
            write_json_atomic(as_path(f"{prefix}.stats.json"), src_rec)
            prefixes[src] = str(prefix)
        record = {**base, "prefixes": prefixes, **merged}
    wall = time.monotonic() - t_start
    record["pieces"] = len(pieces)
    record["merge_seconds"] = round(time.monotonic() - t_merge, 3)
    record["mb_per_second"] = round(merged["bytes"] / 1e6 / wall, 3) if wall > 0 else None
    return record


@stage("tokenize", section="produce", order=10)
@dataclass
class TokenizeStage(Stage):
    """Tokenize documents into Megatron-LM indexed datasets (.bin/.idx, MMIDIDX v1).

    One sequence per document, in input order (the same bytes for any --workers); uint16
    tokens when the vocabulary fits, else int32. Shards are tokenized in parallel into
    pieces and merged without re-tokenizing; an interrupted run resumes its pieces.

    \b
    Examples:
      curate tokenize --in out/decontam --out out/tokenized/corpus
      curate tokenize --in out/decontam --out out/tokenized --per-source --workers 8
      curate tokenize --in out/clean --out out/tok/llama --tokenizer path/to/tokenizer.json
    """

    name: ClassVar[str] = "tokenize"
    sections: ClassVar[dict[str, str]] = {"tokens": "per_source"}
    kind: ClassVar[str] = "sink"
    options: ClassVar[tuple[str, ...]] = ("inputs", "out", "workers", "overwrite", "executor", "ray_address")
    option_help: ClassVar[dict[str, str]] = {
        "inputs": "Input dataset directory, Parquet file or glob (repeatable; read in this order).",
        "out": "Output prefix: PREFIX.bin, PREFIX.idx, PREFIX.stats.json (a directory with --per-source).",
    }
    checks_ids: ClassVar[bool] = False
    required_columns: ClassVar[tuple[str, ...]] = ("text", "source")
    tokenizer: str = param("gpt2", "gpt2 (GPT-2 BPE shipped with curate, offline), a Hugging Face tokenizer.json, or a tiktoken BPE file.",
                           metavar="gpt2|PATH")  # fmt: skip
    append_eod: bool = param(True, "End every document with the end-of-document token.", secondary="--no-append-eod")
    eod_token: str | None = param(
        None, "End-of-document token [default: <|endoftext|>, or the tokenizer's </s>-like token].", metavar="TOKEN", record=False
    )  # fmt: skip  (recorded in the tokenizer's identity)
    per_source: bool = param(False, "Write one prefix per source: OUT/<source>.bin/.idx (e.g. OUT/pile_Wikipedia), and OUT/_SUCCESS.")
    sources: str | None = param(None, "Tokenize only the documents of these sources (comma-separated globs); the others are left "
                                "out and counted as skipped.", metavar="GLOBS")  # fmt: skip

    def __post_init__(self) -> None:
        tok = load_tokenizer(self.tokenizer, self.eod_token)  # one-line errors before anything is written
        if self.append_eod and tok.eod is None:
            raise CurateError(
                f"{self.tokenizer}: no end-of-document token found (looked for {', '.join(HF_EOD_CANDIDATES)}); "
                "name one with --eod-token or use --no-append-eod"
            )
        self.identity = tok.identity()
        self.dtype = megatron.dtype_for_vocab(tok.vocab_size).name

    def derived_params(self) -> dict[str, Any]:
        return {"tokenizer": self.identity, "dtype": self.dtype}  # the tokenizer by content, its EOD token included

    def inputs(self, common: Common) -> Inputs:
        return dataset_inputs(common.inputs)

    def target(self, common: Common) -> Target:
        out = as_path(common.out)
        if self.per_source:
            if out.exists() and not out.is_dir():
                raise CurateError(f"{out}: exists and is not a directory (--per-source writes one prefix per source into a directory)")
            return SourcesTarget(out)
        return PrefixTarget(out)

    def run(self, ctx: Context) -> dict[str, Any]:
        outs = Outputs(ctx.out, self.per_source)
        record = tokenize_files(ctx.map, ctx.files, outs, tokenizer=self.tokenizer, eod_token=self.eod_token, append_eod=self.append_eod,
                                sources=self.sources)  # fmt: skip
        if self.per_source:
            rmtree(outs.work, ignore_errors=True)
        return record

    def summary(self, record: dict[str, Any]) -> list[str]:
        return summary_lines(record)


def summary_lines(record: dict[str, Any]) -> list[str]:
    """What ``curate tokenize`` prints."""
    skipped = record.get("skipped") or {}
    skip = f" ({', '.join(f'{v:,} {k}' for k, v in sorted(skipped.items()))} skipped)" if skipped else ""
    mb = record["bytes"] / 1e6
    lines = [
        f"tokenize: {record['documents']:,} docs{skip}, {mb:.1f} MB -> {record['tokens']:,} tokens ({record['dtype']}), "
        f"{record.get('wall_seconds', 0):.1f} s, {record.get('mb_per_second') or 0:.2f} MB/s"
    ]
    if "prefixes" in record:
        width = max(len(s) for s in record["prefixes"])
        for src, prefix in record["prefixes"].items():
            s = record["per_source"][src]
            lines.append(f"  {src:<{width}}  {s['documents']:>9,} docs  {s['tokens']:>12,} tokens  -> {prefix}.bin/.idx")
    else:
        lines.append(f"  output: {record['prefix']}.bin, {record['prefix']}.idx, {record['prefix']}.stats.json")
    return lines
