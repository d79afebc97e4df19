"""Shingling and MinHash signatures in bulk, and the LSH band choice.

A batch of documents is normalised and split into words with Arrow kernels, each
*distinct* word of the batch is hashed once (xxh3), word n-gram shingles are combined
from word hashes with vectorised numpy arithmetic, and rensa (Rust) turns the flat
shingle-hash buffer into a MinHash signature matrix. No Python object is made per
shingle; per word only for the batch's vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import rensa
import xxhash

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: spreads polynomial combinations over all 64 bits."""
    x = x ^ (x >> np.uint64(30))
    x = x * _M2
    x = x ^ (x >> np.uint64(27))
    x = x * _M3
    return x ^ (x >> np.uint64(31))


def normalize_words(texts: pa.Array | pa.ChunkedArray) -> pa.ListArray:
    """Lowercase, punctuation to spaces, split on whitespace (Unicode letters and digits kept)."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    low = pc.utf8_lower(texts)
    words = pc.replace_substring_regex(low, r"[^\p{L}\p{N}\p{M}\s]+", " ")
    return pc.utf8_split_whitespace(words)


def word_hashes(words: pa.ListArray) -> tuple[np.ndarray, np.ndarray]:
    """(flat uint64 word hashes, int64 offsets per document) for a list array of words."""
    offsets = words.offsets.to_numpy().astype(np.int64)
    offsets = offsets - offsets[0]
    flat = words.flatten()
    nonempty = pc.greater(pc.binary_length(flat), 0).to_numpy(zero_copy_only=False)
    if not nonempty.all():  # the splitter leaves "" for empty text and trailing spaces
        doc_of = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        counts = np.bincount(doc_of[nonempty], minlength=len(offsets) - 1)
        offsets = np.zeros(len(offsets), np.int64)
        np.cumsum(counts, out=offsets[1:])
        flat = flat.filter(pa.array(nonempty))
    if len(flat) == 0:
        return np.zeros(0, np.uint64), offsets
    enc = pc.dictionary_encode(flat)
    vocab = enc.dictionary.cast(pa.large_binary()).to_pylist()
    vh = np.fromiter((xxhash.xxh3_64_intdigest(w) for w in vocab), dtype=np.uint64, count=len(vocab))
    return vh[enc.indices.to_numpy()], offsets


def shingle_hashes(wh: np.ndarray, offsets: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Hashes of every word n-gram inside each document, and per-document offsets into them.

    A document of fewer than ``n`` (but at least one) words is one shingle of all its words;
    a document with no words has no shingles.
    """
    ndocs = len(offsets) - 1
    counts = np.diff(offsets)
    if ndocs == 0:
        return np.zeros(0, np.uint64), np.zeros(1, np.int64)
    L = len(wh)
    if L >= n:
        h = wh[: L - n + 1].copy()
        for k in range(1, n):
            h *= _M1
            h += wh[k : L - n + 1 + k]
    else:
        h = np.zeros(0, np.uint64)
    # full n-grams start at offsets[d] .. offsets[d] + counts[d] - n
    full = np.maximum(counts - n + 1, 0)
    short = (counts > 0) & (counts < n)
    per_doc = np.where(short, 1, full)
    out_off = np.zeros(ndocs + 1, np.int64)
    np.cumsum(per_doc, out=out_off[1:])
    total = int(out_off[-1])
    if total == 0:
        return np.zeros(0, np.uint64), out_off
    # gather index of each full shingle: offsets[d] + j for j < full[d]
    doc_of = np.repeat(np.arange(ndocs), full)
    starts = np.repeat(offsets[:-1], full)
    within = np.arange(len(doc_of)) - np.repeat(np.cumsum(full) - full, full)
    full_hashes = h[starts + within] if len(doc_of) else np.zeros(0, np.uint64)
    out = np.empty(total, np.uint64)
    full_pos = np.repeat(out_off[:-1], full) + within
    out[full_pos] = full_hashes
    if short.any():
        m1, mask = int(_M1), (1 << 64) - 1
        for d in np.nonzero(short)[0]:
            acc = 0
            for w in wh[offsets[d] : offsets[d + 1]].tolist():
                acc = (acc * m1 + w) & mask
            out[out_off[d]] = acc
    return mix64(out), out_off


@dataclass(frozen=True)
class MinHasher:
    """Word n-gram MinHash: ``num_perm`` 32-bit minima per document (rensa's RMinHash)."""

    num_perm: int = 128
    ngram: int = 5
    seed: int = 42

    def shingles(self, texts: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
        wh, off = word_hashes(normalize_words(texts))
        return shingle_hashes(wh, off, self.ngram)

    def signatures(self, texts: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(signatures uint32[n, num_perm], shingle counts, shingle hashes, shingle offsets).

        Rows of documents with no shingles are all 0xFFFFFFFF and must not be banded.
        """
        sh, off = self.shingles(texts)
        n = len(off) - 1
        counts = np.diff(off)
        sig = np.full((n, self.num_perm), np.iinfo(np.uint32).max, np.uint32)
        nz = np.nonzero(counts)[0]
        if len(nz):
            # rensa needs non-empty rows: pass only documents that have shingles
            sub_off = np.zeros(len(nz) + 1, np.uint64)
            np.cumsum(counts[nz], out=sub_off[1:])
            flat = sh if len(nz) == n else np.concatenate([sh[off[d] : off[d + 1]] for d in nz])
            m = rensa.RMinHash.digest_matrix_from_flat_token_hashes(flat, sub_off, self.num_perm, self.seed)
            sig[nz] = np.asarray(m.to_rows(), dtype=np.uint32)
        return sig, counts, sh, off


def band_hashes(sig: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """uint64 hash of each band (``rows`` consecutive minima) of each signature: [n, bands]."""
    n = sig.shape[0]
    if bands * rows > sig.shape[1]:
        raise ValueError(f"{bands} bands x {rows} rows exceed {sig.shape[1]} permutations")
    s = sig[:, : bands * rows].astype(np.uint64).reshape(n, bands, rows)
    h = np.full((n, bands), np.uint64(bands), np.uint64)
    for r in range(rows):
        h = h * _M1 + s[:, :, r]
    h = mix64(h + np.arange(bands, dtype=np.uint64) * _M2)
    return h


def optimal_bands(
    threshold: float, num_perm: int, false_positive_weight: float = 0.5, false_negative_weight: float = 0.5
) -> tuple[int, int]:
    """(bands, rows) minimising weighted false positive and negative probability (datasketch's method)."""
    from datasketch.lsh import _optimal_param

    b, r = _optimal_param(threshold, num_perm, false_positive_weight, false_negative_weight)
    return int(b), int(r)


def estimated_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> np.ndarray:
    """Fraction of equal minima, row by row: the MinHash estimate of Jaccard similarity."""
    return (sig_a == sig_b).mean(axis=1)


def exact_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard similarity of two sorted unique uint64 shingle sets."""
    if len(a) == 0 and len(b) == 0:
        return 0.0
    inter = len(np.intersect1d(a, b, assume_unique=True))
    return inter / (len(a) + len(b) - inter)
