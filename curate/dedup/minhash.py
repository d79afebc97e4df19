"""Shingling and MinHash signatures in bulk, exact Jaccard of shingle sets, and the LSH band choice.

Words (runs of letters, digits and marks, lowercased: the words of :func:`normalize_text`)
are found and hashed on the UTF-8 bytes of a whole batch, word n-gram shingles are combined
from word hashes, and one-permutation MinHash in rounds (:func:`oph_signatures`) turns the
flat shingle-hash buffer into a signature matrix. No Python object is made per word or per
shingle. The hot loops run in a small compiled kernel (``_shingles.c``) when setup.py could
build it; the numpy functions here are its reference (tests hold both equal) and its
fallback, with the same hashes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

try:  # the compiled twin of word_hashes + shingle_hashes + oph_signatures (setup.py builds it; optional)
    from curate.dedup import _shingles as _native

    SHINGLING = "compiled"
except ImportError:  # no C compiler at install time: the numpy code below, same hashes
    _native = None
    SHINGLING = "numpy (the compiled kernel is not built: no C compiler at install?)"
if os.environ.get("CURATE_SHINGLING") == "numpy":  # to measure or rule out the kernel
    _native = None
    SHINGLING = "numpy (CURATE_SHINGLING=numpy)"

_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: spreads polynomial combinations over all 64 bits (a new array)."""
    return _mix64_inplace(np.array(x, np.uint64))


def _mix64_inplace(x: np.ndarray) -> np.ndarray:
    """:func:`mix64` in place: no temporaries the size of ``x`` (which it overwrites)."""
    x ^= x >> np.uint64(30)
    x *= _M2
    x ^= x >> np.uint64(27)
    x *= _M3
    x ^= x >> np.uint64(31)
    return x


_WORD_PATTERN = r"[\p{L}\p{N}\p{M}]"  # letters, digits and marks make words; every other character separates


def normalize_text(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Lowercase; every run of characters that are not letters, digits, marks or ASCII whitespace becomes a space.

    The reference for :func:`word_hashes`, which finds the same words on the bytes without it.
    """
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    return pc.replace_substring_regex(pc.utf8_lower(texts), r"[^\p{L}\p{N}\p{M}\s]+", " ")


_NOT_A_CODE_POINT = 0x110000
# is-word of each code point, filled in as code points are met: -1 unknown, 0 no, 1 yes (per process)
_CP_CLASS = np.full(_NOT_A_CODE_POINT + 1, -1, np.int8)
_CP_CLASS[_NOT_A_CODE_POINT] = 0
_CP_CLASS[0xD800:0xE000] = 0  # surrogates are not characters


def _classify(cps: np.ndarray) -> None:
    """Fill in ``_CP_CLASS`` for these code points with Arrow's own regex engine.

    Taking the classes from RE2 (the engine of :func:`normalize_text`) rather than Python's
    ``unicodedata`` keeps both on one Unicode version: the words are exactly the regex's.
    """
    cps = np.unique(cps)
    chars = pa.array([chr(c) for c in cps.tolist()], pa.string())
    _CP_CLASS[cps] = pc.match_substring_regex(chars, f"^{_WORD_PATTERN}$").to_numpy(zero_copy_only=False)


def _continuation(b: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The 6 payload bits of the bytes at ``idx`` (0 past the end of ``b``), as uint32."""
    inside = idx < len(b)
    return np.where(inside, b[np.where(inside, idx, 0)], 0).astype(np.uint32) & 0x3F


def _is_word_byte(b: np.ndarray) -> np.ndarray:
    """Whether each byte of UTF-8 text belongs to a word character (every byte of a character gets its class).

    ASCII bytes are classified with vectorised arithmetic (letters and digits); only the
    non-ASCII bytes (few, in most text) are decoded (:func:`_non_ascii_is_word`).
    """
    x = b | np.uint8(0x20)  # A-Z -> a-z
    x -= np.uint8(ord("a"))
    isw = x < 26
    np.subtract(b, np.uint8(ord("0")), out=x)
    isw |= x < 10
    hi = np.flatnonzero(b >= 0x80)
    if len(hi):
        isw[hi] = _non_ascii_is_word(b, hi)
    return isw


def _non_ascii_is_word(b: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Whether each byte of UTF-8 text ``b`` at ``hi`` (the positions of all bytes >= 0x80, in order) is in a word.

    The bytes are decoded to code points, vectorised, and looked up in a per-process table of
    the code points met so far. Malformed UTF-8 never fails: a byte that is not part of a
    well-formed character separates words.
    """
    hb = b[hi].astype(np.uint32)
    lead = (hb & 0xC0) != 0x80
    lp = hi[lead]
    if len(lp) == 0:
        return np.zeros(len(hi), bool)
    c0 = hb[lead]
    c1, c2, c3 = (_continuation(b, lp + k) for k in (1, 2, 3))
    cp = np.select(
        [c0 < 0xE0, c0 < 0xF0, c0 < 0xF8],
        [((c0 & 0x1F) << 6) | c1, ((c0 & 0x0F) << 12) | (c1 << 6) | c2, ((c0 & 0x07) << 18) | (c1 << 12) | (c2 << 6) | c3],
        _NOT_A_CODE_POINT,
    )
    cp = np.minimum(cp, _NOT_A_CODE_POINT)
    cls = _CP_CLASS[cp]
    unknown = cls < 0
    if unknown.any():
        _classify(cp[unknown])
        cls = _CP_CLASS[cp]
    width = np.select([c0 < 0xE0, c0 < 0xF0], [2, 3], 4)
    word = cls.astype(bool)
    char_of = np.maximum(np.cumsum(lead) - 1, 0)  # the character (lead byte) each non-ASCII byte belongs to
    inside = (hi - lp[char_of]) < width[char_of]  # else a continuation byte with no lead before it
    return word[char_of] & inside & (hi >= lp[0])


def ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """int64 ``arange(s, s + n)`` for each ``(s, n)``, concatenated, in one vectorised pass."""
    lengths = np.asarray(lengths, np.int64)
    before = np.cumsum(lengths) - lengths  # where each range begins in the output
    return np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(np.asarray(starts, np.int64) - before, lengths)


_MASKS = np.array([0] + [(1 << (8 * k)) - 1 for k in range(1, 8)] + [(1 << 64) - 1], dtype=np.uint64)
_WORD_CHUNKS = 8  # words are hashed on their first 64 bytes, their last 8 and their length


def word_hashes(texts: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(uint64 hash of every word, int64 word offsets per document) of lowercased texts.

    Words are the runs of letters, digits and marks (the words of :func:`normalize_text`),
    found and hashed on the UTF-8 bytes with numpy, without a Python object per word: word
    boundaries are the changes of "is a word byte"; a word's hash mixes its length with its
    bytes read 8 at a time through an unaligned uint64 view (all bytes of words up to 64 bytes;
    for longer words the first 64 and the last 8).
    """
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    norm = pc.utf8_lower(texts)
    n = len(norm)
    if norm.null_count:
        norm = pc.fill_null(norm, "")
    # a space after every document: no word can run from one document into the next
    norm = pc.binary_join_element_wise(norm, pa.scalar(" ", norm.type), pa.scalar("", norm.type)).cast(pa.large_binary())
    bufs = norm.buffers()
    offs = np.frombuffer(bufs[1], dtype=np.int64, count=n + 1, offset=norm.offset * 8)
    base = int(offs[0])
    size = int(offs[-1]) - base
    offs = offs - base
    padded = np.zeros(size + 8, np.uint8)  # 8 spare bytes: the uint64 view may read past the end
    padded[:size] = np.frombuffer(bufs[2], dtype=np.uint8, count=size, offset=base)
    isw = _is_word_byte(padded[:size])
    change = np.empty(size, bool)
    if size:
        change[0] = isw[0]
        np.not_equal(isw[1:], isw[:-1], out=change[1:])
    edges = np.flatnonzero(change)
    starts, ends = edges[0::2], edges[1::2]  # every document ends with a space: edges pair up
    if len(starts) == 0:
        return np.zeros(0, np.uint64), np.zeros(n + 1, np.int64)
    lens = (ends - starts).astype(np.uint64)
    win = np.ndarray(shape=(size,), dtype="<u8", buffer=padded.data, strides=(1,))
    h = win[starts]
    h &= _MASKS[np.minimum(lens, 8)]
    h ^= lens * _M1
    _mix64_inplace(h)
    longer = np.flatnonzero(lens > 8)
    for k in range(1, _WORD_CHUNKS):
        if len(longer) == 0:
            break
        rest = lens[longer] - np.uint64(8 * k)
        h[longer] = mix64(h[longer] * _M1 + (win[starts[longer] + 8 * k] & _MASKS[np.minimum(rest, 8)]))
        longer = longer[rest > 8]
    if len(longer):
        h[longer] = mix64(h[longer] * _M1 + win[ends[longer] - 8])
    return h, np.searchsorted(starts, offs)


def _native_shingles(texts: pa.Array | pa.ChunkedArray, ngram: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`word_hashes` + :func:`shingle_hashes` in the compiled kernel, on Arrow's own buffers.

    Only documents with non-ASCII characters are lowercased by Arrow (ASCII letters are
    lowercased by the kernel as it reads them, which gives the same bytes), and only their
    non-ASCII bytes are classified with numpy; a batch of ASCII text is read without a copy.
    """
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if texts.null_count:
        texts = pc.fill_null(texts, "")
    ascii_ = pc.string_is_ascii(texts)
    all_ascii = len(texts) == 0 or pc.all(ascii_).as_py()
    if not all_ascii:
        other = pc.invert(ascii_)
        texts = pc.replace_with_mask(texts, other, pc.utf8_lower(pc.filter(texts, other)))
    data = texts.cast(pa.large_binary())
    n = len(data)
    bufs = data.buffers()
    offs = np.frombuffer(bufs[1], dtype=np.int64, count=n + 1, offset=data.offset * 8)
    size = int(offs[-1])
    b = np.frombuffer(bufs[2], dtype=np.uint8, count=size) if size else np.zeros(0, np.uint8)
    if all_ascii:
        hi_word = np.zeros(0, np.uint8)
    else:
        lo = int(offs[0])
        hi = np.flatnonzero(b[lo:] >= 0x80) + lo
        hi_word = _non_ascii_is_word(b, hi).view(np.uint8)
    out = np.empty((size - int(offs[0])) // 2 + n + 1, np.uint64)  # a word is followed by a separator or its document's end
    out_off = np.empty(n + 1, np.int64)
    total = _native.shingle_hashes(b, offs, hi_word, ngram, out, out_off)
    return out[:total], out_off


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
    if not short.any():
        # the common case: n-gram k of the batch belongs to the output unless it crosses a document end
        valid = np.ones(len(h), bool)
        for k in range(1, n):
            last = offsets[1:] - k  # n-grams starting in a document's last n - 1 words run past its end
            valid[last[(last >= offsets[:-1]) & (last < len(h))]] = False
        return _mix64_inplace(h[valid]), out_off
    # full shingle j < full[d] of document d is n-gram offsets[d] + j, output out_off[d] + j
    out = np.empty(total, np.uint64)
    out[ranges(out_off[:-1], full)] = h[ranges(offsets[:-1], full)]
    if short.any():
        m1, mask = int(_M1), (1 << 64) - 1
        for d in np.nonzero(short)[0]:
            acc = 0
            for w in wh[offsets[d] : offsets[d + 1]].tolist():
                acc = (acc * m1 + w) & mask
            out[out_off[d]] = acc
    return mix64(out), out_off


EMPTY = np.uint32(0xFFFFFFFF)  # the value of a bin no shingle fell into (and of every bin of a document without shingles)
ROUNDS = 4  # hashing rounds before densification (fast similarity sketching)
_PROBES_PER_BIN = 4  # densification probes per bin before the rotation fallback
_PROBES: dict[tuple[int, int], np.ndarray] = {}  # (num_perm, seed) -> probe table [probes, num_perm] (per process)


def _probe_table(num_perm: int, seed: int) -> np.ndarray:
    """The fixed sequence of bins each empty bin borrows from (the same for every document)."""
    key = (num_perm, seed)
    if key not in _PROBES:
        rng = np.random.default_rng([seed & (2**64 - 1), num_perm, 0x0D5E])
        _PROBES[key] = rng.integers(0, num_perm, size=(_PROBES_PER_BIN * num_perm, num_perm), dtype=np.int64)
    return _PROBES[key]


def oph_signatures(sh: np.ndarray, off: np.ndarray, num_perm: int, seed: int, rounds: int = ROUNDS) -> np.ndarray:
    """MinHash signatures uint32[n, num_perm] from flat shingle hashes, in a few passes over them.

    One-permutation hashing, filled in by rounds (Dahlgaard, Knudsen and Thorup's fast
    similarity sketching, FOCS 2017): in round ``r`` each shingle hash (64 well-mixed bits)
    is multiplied by an odd constant drawn from ``seed`` and ``r``; the product's high half
    picks one of ``num_perm`` bins and its low half, prefixed by ``r``, is the value; each
    bin keeps its minimum (``np.minimum.at``). A later round's values exceed every earlier
    round's, so a round only fills bins the earlier ones left empty, and only documents with
    empty bins take another round. One round leaves ``exp(-shingles / num_perm)`` of the bins
    empty; short documents need more rounds to reach the accuracy of ``num_perm`` independent
    permutations (measured against rensa's classic MinHash: equal spread of the estimate and
    of the LSH candidate rate from 45 shingles on with 4 rounds; a single round is 1.5x
    noisier at 45). Bins still empty after ``rounds`` borrow the value of the first
    non-empty bin in a fixed pseudo-random probe sequence (Shrivastava's optimal
    densification, ICML 2017), or failing that of the next non-empty bin to the right.
    Every document follows the same hashes and sequences, so equal bins estimate Jaccard
    similarity. Rows of documents without shingles stay all ``EMPTY``.
    """
    n = len(off) - 1
    counts = np.diff(off)
    sig = np.full((n, num_perm), EMPTY, np.uint32)
    if len(sh) == 0:
        return sig
    mults = mix64(np.arange(rounds, dtype=np.uint64) + np.uint64((seed * 0x10001) & (2**64 - 1))) | np.uint64(1)
    if _native is not None:
        _native.oph_signatures(
            np.ascontiguousarray(sh, np.uint64), np.ascontiguousarray(off, np.int64), num_perm,
            mults, _probe_table(num_perm, seed), sig,
        )  # fmt: skip
        return sig
    flat = sig.reshape(-1)
    base = np.repeat(np.arange(0, n * num_perm, num_perm, dtype=np.uint64), counts)
    cur, cur_counts = sh, counts
    for r, mult in enumerate(mults):
        h = cur * mult
        if r == 0:
            vals = h.astype(np.uint32)  # the low half, less 8 bits for the round
            vals >>= np.uint32(8)
        h >>= np.uint64(32)
        h *= np.uint64(num_perm)
        h >>= np.uint64(32)  # the bin: high half scaled to [0, num_perm)
        h += base
        key = h.view(np.int64)
        if r:
            # only bins left empty by earlier rounds can change, and a later round's value
            # exceeds every earlier round's
            idx = np.flatnonzero(flat[key] == EMPTY)
            key = key[idx]
            vals = (cur[idx] * mult).astype(np.uint32)
            vals >>= np.uint32(8)
            vals |= np.uint32(r << 24)
        np.minimum.at(flat, key, vals)
        if r + 1 == rounds:
            break
        incomplete = (sig == EMPTY).any(axis=1) & (counts > 0)
        if not incomplete.any():
            break
        if incomplete.mean() < 0.5:  # fewer shingles to hash in the next round
            m = np.repeat(incomplete, cur_counts)
            cur, base, cur_counts = cur[m], base[m], np.where(incomplete, cur_counts, 0)
    empty = sig == EMPTY
    empty[counts == 0] = False
    rows, bins = np.nonzero(empty)
    if len(rows) == 0:
        return sig
    orig = flat.copy()  # probes read the bins' own values, never a borrowed one
    base = rows * num_perm
    for probe in _probe_table(num_perm, seed):
        v = orig[base + probe[bins]]
        hit = v != EMPTY
        flat[base[hit] + bins[hit]] = v[hit]
        miss = ~hit
        rows, bins, base = rows[miss], bins[miss], base[miss]
        if len(rows) == 0:
            return sig
    # rotation: the next non-empty bin to the right, wrapping around
    own_rows, which = np.unique(rows, return_inverse=True)
    own = orig.reshape(n, num_perm)[own_rows]
    filled = np.tile(own != EMPTY, 2)
    pos = np.where(filled, np.arange(2 * num_perm), 2 * num_perm)
    nxt = np.minimum.accumulate(pos[:, ::-1], axis=1)[:, ::-1]  # first filled position at or after each
    flat[base + bins] = own[which, nxt[which, bins] % num_perm]
    return sig


@dataclass(frozen=True)
class MinHasher:
    """Word n-gram MinHash: ``num_perm`` 32-bit minima per document (:func:`oph_signatures`)."""

    num_perm: int = 128
    ngram: int = 5
    seed: int = 42

    def shingles(self, texts: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
        """(uint64 hash of every word n-gram, int64 offsets per document): the compiled kernel if built."""
        if _native is None or self.ngram > 64:
            wh, off = word_hashes(texts)
            return shingle_hashes(wh, off, self.ngram)
        return _native_shingles(texts, self.ngram)

    def signatures(self, texts: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(signatures uint32[n, num_perm], shingle counts, shingle hashes, shingle offsets).

        Rows of documents with no shingles are all ``EMPTY`` and must not be banded.
        """
        sh, off = self.shingles(texts)
        return oph_signatures(sh, off, self.num_perm, self.seed), np.diff(off), sh, off


def unique_per_doc(sh: np.ndarray, off: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique 32-bit shingle hashes of each document (for exact Jaccard), and their offsets.

    The document's index goes into the high 32 bits of a 64-bit key so one ``np.sort`` of the
    whole batch orders by document, then hash (4x faster than ``np.lexsort``). 32 bits halve
    what is stored; a false match within a pair of 1,000-shingle documents is ~2e-4 likely and
    moves that pair's Jaccard by 0.001.
    """
    n = len(off) - 1
    if len(sh) == 0:
        return np.zeros(0, np.uint32), np.zeros(n + 1, np.int64)
    doc = np.repeat(np.arange(n, dtype=np.uint64), np.diff(off))
    keys = np.sort((doc << np.uint64(32)) | (sh & np.uint64(0xFFFFFFFF)))
    keep = np.ones(len(keys), bool)
    keep[1:] = keys[1:] != keys[:-1]
    keys = keys[keep]
    out_off = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount((keys >> np.uint64(32)).astype(np.int64), minlength=n), out=out_off[1:])
    return keys.astype(np.uint32), out_off


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
    """(bands, rows) minimising weighted false positive and negative probability (datasketch's method).

    The same search as ``datasketch.lsh._optimal_param`` (every b, r with b * r <= num_perm; the
    first minimum in b-major order), without importing datasketch (and scipy.integrate: 1.4 s
    per process). The integrands are polynomials of degree b * r <= num_perm, so Gauss-Legendre
    quadrature with num_perm / 2 + 1 nodes integrates them exactly.
    """
    pairs = np.array([(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm // b + 1)], dtype=np.float64)
    nodes, weights = np.polynomial.legendre.leggauss(num_perm // 2 + 1)

    def integral(lo: float, hi: float, false_negative: bool) -> np.ndarray:
        s = (hi - lo) / 2 * nodes + (hi + lo) / 2  # the nodes mapped onto [lo, hi]
        p = 1 - (1 - s[None, :] ** pairs[:, 1:2]) ** pairs[:, 0:1]  # P(candidate | Jaccard s)
        return ((1 - p) if false_negative else p) @ weights * (hi - lo) / 2

    error = integral(0.0, threshold, False) * false_positive_weight + integral(threshold, 1.0, True) * false_negative_weight
    b, r = pairs[int(np.argmin(error))]
    return int(b), int(r)


def estimated_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> np.ndarray:
    """Fraction of equal minima, row by row: the MinHash estimate of Jaccard similarity."""
    return (sig_a == sig_b).mean(axis=1)


def exact_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard similarity of two sorted unique shingle-hash sets."""
    if len(a) == 0 or len(b) == 0:
        return 0.0
    if len(a) > len(b):
        a, b = b, a
    idx = np.searchsorted(b, a)
    idx[idx == len(b)] = 0
    inter = int(np.count_nonzero(b[idx] == a))
    return inter / (len(a) + len(b) - inter)


_SET_BLOCK = 4_000_000  # shingles made into sorted sets at once by the numpy fallback of pair_jaccards


def pair_jaccards(shingles: np.ndarray, offsets: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float32 exact Jaccard of the shingle sets of documents ``a[i]`` and ``b[i]``.

    Document ``k``'s shingles are ``shingles[offsets[k]:offsets[k + 1]]`` (32-bit hashes in
    any order, repeats allowed). The compiled kernel puts each pair through one hash table;
    numpy makes sorted sets (:func:`unique_per_doc`) and merges each pair (:func:`exact_jaccard`).
    """
    out = np.empty(len(a), np.float32)
    if _native is not None:
        _native.pair_jaccard(
            np.ascontiguousarray(shingles, np.uint32), np.ascontiguousarray(offsets, np.int64),
            np.ascontiguousarray(a, np.int64), np.ascontiguousarray(b, np.int64), out,
        )  # fmt: skip
        return out
    parts, counts, start, n = [], [], 0, len(offsets) - 1
    while start < n:  # sets of a few million shingles at a time: the sort keys take 8 bytes each
        end = max(start + 1, int(np.searchsorted(offsets, offsets[start] + _SET_BLOCK, side="right")) - 1)
        u, u_off = unique_per_doc(shingles[offsets[start] : offsets[end]], offsets[start : end + 1] - offsets[start])
        parts.append(u)
        counts.append(np.diff(u_off))
        start = end
    sets = np.concatenate(parts) if parts else np.zeros(0, np.uint32)
    set_off = np.zeros(n + 1, np.int64)
    if counts:
        np.cumsum(np.concatenate(counts), out=set_off[1:])
    for i, (x, y) in enumerate(zip(a.tolist(), b.tolist())):
        out[i] = exact_jaccard(sets[set_off[x] : set_off[x + 1]], sets[set_off[y] : set_off[y + 1]])
    return out
