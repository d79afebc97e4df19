"""Tokenizers: GPT-2 BPE shipped with curate (offline), a Hugging Face ``tokenizer.json``, or a tiktoken BPE file.

Used by the tokenize and blend stages and by ``curate inspect``; not a stage itself.
``gpt2`` is encoded by tiktoken from the shipped ``encoder.json`` + ``vocab.bpe`` (checked by
sha256): ``tiktoken.get_encoding("gpt2")`` would download and fails offline.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from curate.errors import CurateError
from curate.storage import file_sha256

log = logging.getLogger("curate")

RESOURCES = Path(__file__).resolve().parent / "resources"
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
