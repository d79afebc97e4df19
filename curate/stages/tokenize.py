"""Tokenize dataset directories into Megatron-LM indexed datasets (a global stage).

Phase 1 cuts the input shards into *pieces* (runs of Parquet row groups of about
``CURATE_TOKENIZE_PIECE_MB`` uncompressed MB, fixed by the files alone) and tokenizes each
piece in a worker into its own ``.bin``/``.idx`` under a work directory, resumably: a
piece whose ``.json`` exists is done. Phase 2 concatenates the pieces' ``.bin`` bytes in
input order and rebases the pointers (no re-tokenizing), so the output does not depend
on the number of workers. The merged index is written in place as pieces are copied
(memory: one piece's index at a time).

Tokenizers: ``gpt2`` (the GPT-2 BPE shipped in ``curate/resources``, encoded by tiktoken
offline), a Hugging Face ``tokenizer.json`` (with the ``tokenizers`` package), or a
tiktoken BPE file (``*.tiktoken``: base64 token and rank per line).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate import __version__, megatron
from curate.dataset import AnyPath, as_path, file_sha256
from curate.errors import CurateError

log = logging.getLogger("curate")

RESOURCES = Path(__file__).resolve().parents[1] / "resources"
GPT2_ENCODER_SHA256 = "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"
GPT2_VOCAB_SHA256 = "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"
ENDOFTEXT = "<|endoftext|>"

# The split patterns of OpenAI's encodings (tiktoken_ext.openai_public), chosen for a bare
# tiktoken BPE file by its number of ranks: such a file holds the ranks only.
R50K_PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
CL100K_PAT = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
#: number of ranks -> (encoding it is, split pattern, special tokens)
KNOWN_TIKTOKEN_FILES: dict[int, tuple[str, str, dict[str, int]]] = {
    50256: ("r50k_base", R50K_PAT, {ENDOFTEXT: 50256}),
    50280: ("p50k_base", R50K_PAT, {ENDOFTEXT: 50256}),
    100256: ("cl100k_base", CL100K_PAT, {ENDOFTEXT: 100257, "<|endofprompt|>": 100276}),
    199998: ("o200k_base", O200K_PAT, {ENDOFTEXT: 199999, "<|endofprompt|>": 200018}),
}
HF_EOD_CANDIDATES = (ENDOFTEXT, "<|end_of_text|>", "</s>", "<eos>", "<|eos|>", "[SEP]")


def _data_gym_byte_map() -> dict[str, int]:
    """GPT-2's printable stand-ins for bytes (the ``bytes_to_unicode`` table), inverted."""
    printable = [b for b in range(256) if chr(b).isprintable() and chr(b) != " "]
    out = {chr(b): b for b in printable}
    n = 0
    for b in range(256):
        if b not in out.values():
            out[chr(256 + n)] = b
            n += 1
    return out


def gpt2_mergeable_ranks(encoder_json: Path, vocab_bpe: Path) -> dict[bytes, int]:
    """GPT-2's BPE ranks for tiktoken from ``encoder.json`` + ``vocab.bpe``.

    For the published files (checked by sha256) the ranks are read from ``encoder.json``
    alone (0.25 s instead of 0.75 s per worker; tiktoken's own loader asserts that the two
    agree, and tests/test_tokenize.py checks that they do); other files go through
    ``tiktoken.load.data_gym_to_mergeable_bpe_ranks``, which checks them.
    """
    if file_sha256(encoder_json) == GPT2_ENCODER_SHA256 and file_sha256(vocab_bpe) == GPT2_VOCAB_SHA256:
        byte_of = _data_gym_byte_map()
        encoder = json.loads(encoder_json.read_text(encoding="utf-8"))
        return {bytes(byte_of[c] for c in token): rank for token, rank in encoder.items() if token not in (ENDOFTEXT, "<|startoftext|>")}
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    return data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), str(encoder_json))


@dataclass
class Tokenizer:
    """A loaded tokenizer: encodes texts to token-id arrays, decodes ids back to text."""

    kind: str  # "tiktoken" or "hf"
    name: str
    source: str  # what --tokenizer said
    sha256: str
    vocab_size: int  # largest token id + 1, special tokens included
    eod: int | None
    eod_token: str | None
    impl: Any = field(repr=False)
    loader: Any = field(default=None, repr=False)  # builds ``impl`` on first use (gpt2: 0.4 s saved where only the identity is needed)

    def backend(self) -> Any:
        """The tiktoken Encoding or tokenizers.Tokenizer doing the work."""
        if self.impl is None:
            self.impl = self.loader()
        return self.impl

    def identity(self) -> dict[str, Any]:
        """What identifies this tokenizer in stats files (two corpora blend only if these agree)."""
        return {
            "kind": self.kind,
            "name": self.name,
            "source": self.source,
            "sha256": self.sha256,
            "vocab_size": self.vocab_size,
            "eod": self.eod,
            "eod_token": self.eod_token,
        }

    def encode(self, texts: list[str]) -> list[np.ndarray]:
        """Token ids of each text; special-token strings in the text are encoded as plain text."""
        if self.kind == "tiktoken":
            enc = self.backend()
            out = []
            for t in texts:
                try:
                    out.append(enc.encode_to_numpy(t, disallowed_special=()))
                except UnicodeEncodeError:  # lone surrogates (never from Arrow, but from Python callers)
                    out.append(enc.encode_to_numpy(t.encode("utf-16", "surrogatepass").decode("utf-16", "replace"), disallowed_special=()))
            return out
        encs = self.backend().encode_batch(texts, add_special_tokens=False)
        return [np.asarray(e.ids, dtype=np.uint32) for e in encs]

    def decode(self, ids: Any) -> str:
        ids = [int(i) for i in ids]
        if self.kind == "tiktoken":
            return self.backend().decode(ids)
        return self.backend().decode(ids, skip_special_tokens=False)


def _gpt2(source: str) -> Tokenizer:
    import tiktoken

    enc_json, vocab = RESOURCES / "encoder.json", RESOURCES / "vocab.bpe"
    for f in (enc_json, vocab):
        if not f.is_file():
            raise CurateError(f"{f}: the GPT-2 BPE file is missing from the curate package; reinstall curate")

    def build() -> Any:
        ranks = gpt2_mergeable_ranks(enc_json, vocab)
        return tiktoken.Encoding("gpt2", pat_str=R50K_PAT, mergeable_ranks=ranks, special_tokens={ENDOFTEXT: 50256}, explicit_n_vocab=50257)

    sha = hashlib.sha256((GPT2_ENCODER_SHA256 + GPT2_VOCAB_SHA256).encode()).hexdigest()
    return Tokenizer("tiktoken", "gpt2", source, sha, 50257, 50256, ENDOFTEXT, None, build)


def _hf(path: Path, source: str, eod_token: str | None) -> Tokenizer:
    try:
        from tokenizers import Tokenizer as HFTokenizer
    except ImportError as exc:  # pragma: no cover - a pinned dependency
        raise CurateError(f"{path}: reading a Hugging Face tokenizer.json needs the `tokenizers` package") from exc
    try:
        tok = HFTokenizer.from_file(str(path))
    except Exception as exc:  # noqa: BLE001 - the Rust error is one line
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CurateError(f"{path}: not a Hugging Face tokenizer.json ({msg})") from exc
    if hasattr(tok, "encode_special_tokens"):
        tok.encode_special_tokens = True  # "<|endoftext|>" inside a document is text, not a boundary
    vocab = tok.get_vocab(with_added_tokens=True)
    vocab_size = max(vocab.values(), default=-1) + 1
    if eod_token is not None:
        if eod_token not in vocab:
            raise CurateError(f"{path}: the end-of-document token {eod_token!r} is not in its vocabulary")
        eod_name = eod_token
    else:
        eod_name = next((t for t in HF_EOD_CANDIDATES if t in vocab), None)
    eod = vocab[eod_name] if eod_name is not None else None
    return Tokenizer("hf", path.name, source, file_sha256(path), vocab_size, eod, eod_name, tok)


def _tiktoken_file(path: Path, source: str, eod_token: str | None) -> Tokenizer:
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    sha = file_sha256(path)
    try:
        ranks = load_tiktoken_bpe(str(path), expected_hash=sha)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CurateError(
            f"{path}: not a tokenizer (expected a Hugging Face tokenizer.json or a tiktoken BPE file of 'base64-token rank' lines)"
        ) from exc
    if len(ranks) < 256 or any(bytes([b]) not in ranks for b in range(256)):
        raise CurateError(f"{path}: not a tiktoken BPE file (it must rank all 256 single bytes; has {len(ranks)} entries)")
    max_rank = max(ranks.values())
    known = KNOWN_TIKTOKEN_FILES.get(len(ranks))
    if known is not None and all(v not in ranks.values() for v in known[2].values()):
        name, pat, specials = known
    else:
        name, pat, specials = path.name, CL100K_PAT, {ENDOFTEXT: max_rank + 1}
        log.info("tokenize: %s is not one of OpenAI's encodings; splitting with the cl100k pattern, %s = %d", path, ENDOFTEXT, max_rank + 1)
    try:
        enc = tiktoken.Encoding(name, pat_str=pat, mergeable_ranks=ranks, special_tokens=specials)
    except BaseException as exc:  # tiktoken's Rust core panics on inconsistent ranks
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise CurateError(f"{path}: tiktoken cannot build an encoding from it ({type(exc).__name__}: {exc})") from exc
    if eod_token is not None and eod_token not in specials:
        raise CurateError(f"{path}: the end-of-document token {eod_token!r} is not among its special tokens ({', '.join(specials)})")
    eod_name = eod_token or ENDOFTEXT
    return Tokenizer("tiktoken", name, source, sha, enc.n_vocab, specials[eod_name], eod_name, enc)


@functools.lru_cache(maxsize=4)
def load_tokenizer(spec: str = "gpt2", eod_token: str | None = None) -> Tokenizer:
    """``gpt2``, a Hugging Face ``tokenizer.json`` (or a directory holding one), or a tiktoken BPE file."""
    if spec == "gpt2":
        if eod_token not in (None, ENDOFTEXT):
            raise CurateError(f"gpt2: the end-of-document token is {ENDOFTEXT}, not {eod_token!r}")
        return _gpt2(spec)
    path = Path(spec)
    if path.is_dir():
        if not (path / "tokenizer.json").is_file():
            raise CurateError(f"{path}: a directory without tokenizer.json; give a tokenizer.json or tiktoken BPE file")
        path = path / "tokenizer.json"
    if not path.exists():
        raise CurateError(f"{spec}: no such tokenizer file (use gpt2, a tokenizer.json or a tiktoken BPE file)")
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096).lstrip()
    except OSError as exc:
        raise CurateError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if not head:
        raise CurateError(f"{path}: empty file, not a tokenizer")
    if head.startswith(b"{"):
        return _hf(path, spec, eod_token)
    return _tiktoken_file(path, spec, eod_token)


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
    only_sources: str | None
    dtype: str


def plan_pieces(files: list[Path], piece_bytes: int | None = None) -> list[Piece]:
    """Cut the shards into pieces of whole row groups, about ``piece_bytes`` each; fixed by the files alone."""
    from curate.dataset import open_parquet

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
    from curate.dataset import check_columns, merge_counts, open_parquet, write_json_atomic
    from curate.schema import source_matcher
    from curate.stages.textcol import repair_utf8

    t0 = time.perf_counter()
    tok = load_tokenizer(job.tokenizer, job.eod_token)
    dtype = np.dtype(job.dtype)
    eod = np.array([tok.eod], dtype=np.uint32) if job.append_eod else None
    piece, work = job.piece, as_path(job.work)
    match = source_matcher(job.only_sources) if job.only_sources else None
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
        check_columns(as_path(piece.path), pf.schema_arrow, ["text", "source"])
        if not job.per_source:
            writer_for(None)
        batches = (
            pf.iter_batches(batch_size=READ_ROWS, row_groups=piece.row_groups, columns=["text", "source"], use_threads=False)
            if piece.row_groups
            else []
        )
        for batch in batches:
            batch, fixed = repair_utf8(pa.Table.from_batches([batch]))  # invalid UTF-8 from a foreign file: U+FFFD, counted
            merge_counts(repaired, fixed)
            src_col = pc.fill_null(batch.column("source").cast(pa.string()), "")
            sources = src_col.to_pylist()
            texts = [t or "" for t in batch.column("text").to_pylist()]  # a null text counts as empty
            nbytes = pc.binary_length(batch.column("text")).to_numpy(zero_copy_only=False)
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


# --------------------------------------------------------------------------- the stage


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


def _merge_stats(records: list[dict[str, Any]]) -> dict[str, Any]:
    from curate.dataset import merge_counts

    total: dict[str, Any] = {"documents": 0, "tokens": 0, "bytes": 0, "skipped": {}, "per_source": {}, "cpu_seconds": 0.0}
    for r in records:
        merge_counts(total, {k: r[k] for k in ("documents", "tokens", "bytes", "skipped", "per_source", "invalid_utf8_repaired") if k in r})
        total["cpu_seconds"] += r["seconds"]
    total["cpu_seconds"] = round(total["cpu_seconds"], 3)
    return total


def tokenize(
    inputs: list[str],
    out: str | os.PathLike,
    *,
    tokenizer: str = "gpt2",
    eod_token: str | None = None,
    append_eod: bool = True,
    per_source: bool = False,
    only_sources: str | None = None,
    executor: Any = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Tokenize ``inputs`` into ``OUT.bin``/``OUT.idx`` (or ``OUT/<source>.*`` with ``per_source``).

    Returns the stats record, also written to ``OUT.stats.json`` (``OUT/_SUCCESS`` and one
    ``OUT/<source>.stats.json`` each with ``per_source``), which is written last.
    """
    from curate.dataset import resolve_inputs, rmtree, write_json_atomic
    from curate.executor import LocalExecutor

    started = time.monotonic()
    tok = load_tokenizer(tokenizer, eod_token)
    if append_eod and tok.eod is None:
        raise CurateError(
            f"{tokenizer}: no end-of-document token found (looked for {', '.join(HF_EOD_CANDIDATES)}); name one with --eod-token or use --no-append-eod"
        )
    dtype = megatron.dtype_for_vocab(tok.vocab_size)
    files = resolve_inputs(inputs)
    outs = Outputs(as_path(out), per_source)
    params = {
        "inputs": [str(i) for i in inputs],
        "tokenizer": tok.identity(),
        "append_eod": append_eod,
        "per_source": per_source,
        "only_sources": only_sources,
        "dtype": dtype.name,
    }
    params = json.loads(json.dumps(params, sort_keys=True))
    if outs.per_source and outs.out.exists() and not outs.out.is_dir():
        raise CurateError(f"{outs.out}: exists and is not a directory (--per-source writes one prefix per source into a directory)")
    if not outs.per_source and outs.out.is_dir():
        raise CurateError(f"{outs.out}: is a directory; --out is a prefix (OUT.bin, OUT.idx), or a directory with --per-source")
    old = _read_json(outs.marker)
    if old is not None:
        if overwrite:
            _remove_outputs(outs, old)
        elif old.get("params") == params:
            log.info("tokenize: %s is complete; nothing to do (use --overwrite to redo)", outs.marker)
            if outs.work.exists():  # a run killed after its marker, before removing its pieces
                rmtree(outs.work, ignore_errors=True)
            return old
        else:
            changed = sorted(k for k in set(old.get("params", {})) | set(params) if old.get("params", {}).get(k) != params.get(k))
            raise CurateError(
                f"{outs.marker}: written with other parameters (changed: {', '.join(changed)}); use --overwrite to start again"
            )
    work = outs.work
    if overwrite and work.exists():
        rmtree(work)
    if work.exists() and _read_json(work / WORK_PARAMS) != params:
        log.info("tokenize: %s holds pieces of another run; starting again", work)
        rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    for stale in work.glob(".*.tmp.*"):
        stale.unlink(missing_ok=True)
    if isinstance(outs.out, Path):  # the merged outputs' temporary files, left by a run killed while merging
        found = outs.out.glob(".*.tmp.*") if per_source else outs.out.parent.glob(f".{outs.out.name}.*.tmp.*")
        for stale in found:
            stale.unlink(missing_ok=True)
    write_json_atomic(work / WORK_PARAMS, params)

    pieces = plan_pieces(files)
    if sum(p.rows for p in pieces) == 0:
        rmtree(work, ignore_errors=True)
        raise CurateError(f"{', '.join(inputs)}: no documents to tokenize")
    done: dict[str, dict[str, Any]] = {}
    pending = []
    for p in pieces:
        rec = _read_json(work / f"{p.name}.json")
        if rec is not None and rec.get("input") == p.path and rec.get("input_size") == p.size and rec.get("input_mtime_ns") == p.mtime_ns:
            done[p.name] = rec
        else:
            pending.append(PieceJob(p, str(work), tokenizer, eod_token, append_eod, per_source, only_sources, dtype.name))
    if done:
        log.info("tokenize: resuming, %d of %d piece(s) already done", len(done), len(pieces))
    executor = executor or LocalExecutor(1)
    results = executor.map(
        tokenize_piece, pending, labels=[j.piece.name for j in pending], desc="tokenize", describe=describe_piece, unit="piece"
    )
    for job, rec in zip(pending, results):
        done[job.piece.name] = rec
    records = [done[p.name] for p in pieces]

    merged = _merge_stats(records)
    if merged["documents"] == 0:
        raise CurateError(f"{', '.join(inputs)}: no documents left to tokenize (skipped: {merged['skipped'] or 'none'})")
    base = {
        "stage": "tokenize",
        "curate_version": __version__,
        "params": params,
        "tokenizer": tok.identity(),
        "dtype": dtype.name,
        "dtype_code": megatron.DTYPE_CODES[dtype],
        "append_eod": append_eod,
    }
    t_merge = time.monotonic()
    if not per_source:
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
    wall = time.monotonic() - started
    record["pieces"] = len(pieces)
    record["merge_seconds"] = round(time.monotonic() - t_merge, 3)
    record["wall_seconds"] = round(wall, 3)
    record["mb_per_second"] = round(merged["bytes"] / 1e6 / wall, 3) if wall > 0 else None
    write_json_atomic(outs.marker, record)
    rmtree(work, ignore_errors=True)
    return record


def _read_json(path: AnyPath) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _remove_outputs(outs: Outputs, old: dict[str, Any]) -> None:
    prefixes = list(old.get("prefixes", {}).values()) or [str(outs.out)]
    for p in prefixes:
        for suffix in (".bin", ".idx", ".stats.json"):
            as_path(f"{p}{suffix}").unlink(missing_ok=True)
    outs.marker.unlink(missing_ok=True)


def summary_lines(record: dict[str, Any]) -> list[str]:
    """What ``curate tokenize`` prints."""
    skipped = record.get("skipped") or {}
    skip = f" ({', '.join(f'{v:,} {k}' for k, v in sorted(skipped.items()))} skipped)" if skipped else ""
    mb = record["bytes"] / 1e6
    lines = [
        f"tokenize: {record['documents']:,} docs{skip}, {mb:.1f} MB -> {record['tokens']:,} tokens ({record['dtype']}), "
        f"{record['wall_seconds']:.1f} s, {record.get('mb_per_second') or 0:.2f} MB/s"
    ]
    if "prefixes" in record:
        width = max(len(s) for s in record["prefixes"])
        for src, prefix in record["prefixes"].items():
            s = record["per_source"][src]
            lines.append(f"  {src:<{width}}  {s['documents']:>9,} docs  {s['tokens']:>12,} tokens  -> {prefix}.bin/.idx")
    else:
        lines.append(f"  output: {record['prefix']}.bin, {record['prefix']}.idx, {record['prefix']}.stats.json")
    return lines
