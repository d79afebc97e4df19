"""Words and n-gram hashes, vectorised with numpy.

*Words* are the runs of Python ``re`` ``\\w`` characters (Unicode letters, digits and
``_``), each code point lowercased on its own (``str.lower`` of that one character, with
U+0130 ``İ`` -> ``i``), so a word keeps its length and every offset is a Python ``str``
index into the original text. This is MT-NLG's ``re.finditer(r"\\w+", text.lower())``
except for two corner cases where ``str.lower`` changes length or context (``İ`` and a
word-final ``Σ``), which would shift MT-NLG's offsets.

A text is turned into code points (``utf-32``), word characters are found by a table
lookup, and each word gets a 64-bit hash: a polynomial over its code points (mod 2**64)
put through the murmur3 finaliser. An n-gram's key is the same construction over its
words' hashes, seeded with the n-gram length, so a 10-word key never equals a 13-word
one. Everything is a handful of numpy passes per batch; no Python object per word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

_U64 = np.uint64
_Q = _U64(0x9E3779B97F4A7C15)  # base of the per-word polynomial (odd)
_P = _U64(0xC2B2AE3D27D4EB4F)  # base of the per-n-gram polynomial (odd)
_WORD_SEED = _U64(0x27D4EB2F165667C5)
_NGRAM_SEED = _U64(0x165667B19E3779F9)
_SEED_P = _U64((0x165667B19E3779F9 * 0xC2B2AE3D27D4EB4F) & 0xFFFFFFFFFFFFFFFF)  # _NGRAM_SEED * _P mod 2**64
_M1 = _U64(0xFF51AFD7ED558CCD)
_M2 = _U64(0xC4CEB9FE1A85EC53)
_S33 = _U64(33)

#: Code points joined per numpy pass (bounds memory: about 40 bytes per word character).
WINDOW = 1 << 20
#: Characters of documents joined into one group before tokenising.
GROUP_CHARS = 1 << 21

_WORD: np.ndarray | None = None
_LOWER: np.ndarray | None = None
_QPOW = np.ones(1, dtype=np.uint64)


def _tables() -> tuple[np.ndarray, np.ndarray]:
    """``WORD[cp]`` (is ``\\w``) and ``LOWER[cp]``, built once per process (~50 ms) from Python's own Unicode data."""
    global _WORD, _LOWER
    if _WORD is None or _LOWER is None:
        cps = np.arange(0x110000, dtype="<u4")
        cps = cps[(cps < 0xD800) | (cps >= 0xE000)]
        chars = cps.tobytes().decode("utf-32-le")
        word = np.zeros(0x110000, dtype=np.bool_)
        for m in re.finditer(r"\w+", chars):
            word[cps[m.start() : m.end()]] = True
        # One character per line so str.lower sees no context (no final sigma); İ -> i keeps lengths.
        low = "\n".join(chars.replace("\u0130", "I")).lower()[::2]
        low_cps = np.frombuffer(low.encode("utf-32-le"), dtype="<u4")
        if low_cps.size != cps.size:  # pragma: no cover - a Unicode version with new expansions
            raise RuntimeError("a lowercase mapping changed length; update curate.decontam.ngrams._tables")
        lower = np.arange(0x110000, dtype=np.uint32)
        lower[cps] = low_cps
        _WORD, _LOWER = word, lower
    return _WORD, _LOWER


def _powers(n: int) -> np.ndarray:
    """``Q**0 .. Q**(n-1)`` mod 2**64 (cached, grown on demand)."""
    global _QPOW
    if _QPOW.size < n:
        size = max(n, 2 * _QPOW.size, 64)
        p = np.full(size, _Q, dtype=np.uint64)
        p[0] = 1
        _QPOW = np.cumprod(p, dtype=np.uint64)
    return _QPOW


def fmix64(x: np.ndarray) -> np.ndarray:
    """murmur3's 64-bit finaliser, in place on a uint64 array (returns it)."""
    x ^= x >> _S33
    x *= _M1
    x ^= x >> _S33
    x *= _M2
    x ^= x >> _S33
    return x


@dataclass
class Words:
    """The words of a batch of documents: owner document, character span, 64-bit hash."""

    doc: np.ndarray  # int64, non-decreasing
    start: np.ndarray  # int64, offset in its document
    end: np.ndarray  # int64, exclusive
    hash: np.ndarray  # uint64

    def __len__(self) -> int:
        return int(self.doc.size)


def _window_words(cp: np.ndarray, base: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Starts, ends (offset by ``base``) and hashes of the words in a code point array."""
    word, lower = _tables()
    isw = word[cp]
    edges = np.diff(isw.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    if starts.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.uint64)
    lens = ends - starts
    chars = lower[cp[isw]].astype(np.uint64)
    first = np.cumsum(lens) - lens  # where each word starts among the word characters
    qp = _powers(int(lens.max()) + 1)
    exponent = np.repeat(first + lens - 1, lens)
    exponent -= np.arange(chars.size, dtype=np.int64)
    chars *= qp[exponent]
    del exponent
    h = np.add.reduceat(chars, first)
    h += qp[lens] * _WORD_SEED  # Horner's rule started from the seed: the length is part of the hash
    return starts + base, ends + base, fmix64(h)


def _split_points(isword: np.ndarray, window: int) -> list[int]:
    """Window boundaries at non-word characters, so that no word is cut."""
    points, pos, n = [0], 0, isword.size
    while n - pos > window:
        cut = pos + window
        non = np.flatnonzero(~isword[cut:])
        if non.size == 0:
            break
        cut += int(non[0])
        points.append(cut)
        pos = cut
    points.append(n)
    return points


def code_points(text: str) -> np.ndarray:
    """The code points of ``text`` (lone surrogates included) as uint32."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")


def text_words(cp: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Starts, ends and hashes of the words of one code point array, in windows of ``WINDOW``."""
    if cp.size <= WINDOW:
        return _window_words(cp, 0)
    word, _ = _tables()
    points = _split_points(word[cp], WINDOW)
    parts = [_window_words(cp[a:b], a) for a, b in zip(points[:-1], points[1:])]
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))  # type: ignore[return-value]


def batch_words(texts: list[str]) -> Words:
    """The words of many documents, grouped into joined strings of about ``GROUP_CHARS``."""
    docs, starts, ends, hashes = [], [], [], []
    i, n = 0, len(texts)
    while i < n:
        j, size = i, 0
        while j < n and (j == i or size + len(texts[j]) < GROUP_CHARS):
            size += len(texts[j]) + 1
            j += 1
        group = texts[i:j]
        offsets = np.zeros(len(group), dtype=np.int64)
        if len(group) > 1:
            np.cumsum([len(t) + 1 for t in group[:-1]], out=offsets[1:])
        s, e, h = text_words(code_points("\n".join(group)))  # "\n" is not a word character
        d = np.searchsorted(offsets, s, side="right") - 1
        docs.append(d + i)
        starts.append(s - offsets[d])
        ends.append(e - offsets[d])
        hashes.append(h)
        i = j
    if not docs:
        z = np.zeros(0, dtype=np.int64)
        return Words(z, z, z, np.zeros(0, dtype=np.uint64))
    return Words(np.concatenate(docs), np.concatenate(starts), np.concatenate(ends), np.concatenate(hashes))


def ngram_keys(words: Words, lengths: list[int]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """For each length k in ``lengths``: (index of the first word, key) of every k-gram inside one document."""
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    n = len(words)
    want = sorted(set(lengths))
    if not want or n == 0:
        return {k: (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint64)) for k in want}
    acc = words.hash + _SEED_P
    for k in range(1, want[-1] + 1):
        if k > 1:
            if n - k + 1 <= 0:
                acc = acc[:0]
            else:
                acc = acc[:-1] * _P
                acc += words.hash[k - 1 :]
        if k in want:
            m = max(n - k + 1, 0)
            first = np.flatnonzero(words.doc[:m] == words.doc[k - 1 : k - 1 + m])
            out[k] = (first, fmix64(acc[first]))  # fancy indexing copies: acc stays intact
    return out


def eval_keys(texts: list[str], n: int, min_n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keys of evaluation texts: every n-gram, and the whole text when it has ``min_n`` to ``n - 1`` words.

    Returns (text index per key, key, number of words per text); shorter texts give no key.
    """
    w = batch_words(texts)
    counts = np.bincount(w.doc, minlength=len(texts)) if len(w) else np.zeros(len(texts), dtype=np.int64)
    firsts = np.zeros(len(texts), dtype=np.int64)
    if len(texts) > 1:
        np.cumsum(counts[:-1], out=firsts[1:])
    short = np.flatnonzero((counts >= min_n) & (counts < n))
    lengths = sorted({int(c) for c in counts[short]})
    grams = ngram_keys(w, [n, *lengths])
    first, keys = grams[n]
    docs, out = [w.doc[first]], [keys]
    for k in lengths:
        first, keys = grams[k]
        own = short[counts[short] == k]  # texts of exactly k words: their k-gram starts at their first word
        pos = np.searchsorted(first, firsts[own])
        docs.append(own)
        out.append(keys[pos])
    return np.concatenate(docs), np.concatenate(out), counts
