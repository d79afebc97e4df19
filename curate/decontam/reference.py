"""The decontamination rule in plain Python: a set of n-gram strings, MT-NLG's scanning loop.

This is the readable specification and the baseline of ``benchmarks/decontam.py``: like
Megatron-LM's ``filter_ngrams.py`` it tests every word position against a Python ``set``
of space-joined lowercase words, then removes each match with its margins (as a union of
intervals rather than :mod:`curate.decontam.cut`'s sweep), so that its output must equal
the vectorised stage's. It holds every n-gram as a Python string (~150 bytes each).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

_WORD = re.compile(r"\w+")


def _lower(word: str) -> str:
    """Lowercase code point by code point (as :mod:`curate.decontam.ngrams`): no length change."""
    if word.isascii():
        return word.lower()
    return "".join("i" if c == "\u0130" else (low if len(low := c.lower()) == 1 else c) for c in word)


def words(text: str) -> list[tuple[str, int, int]]:
    """(lowercase word, start, end) for every ``\\w+`` run."""
    return [(_lower(m.group()), m.start(), m.end()) for m in _WORD.finditer(text)]


def build(eval_texts: Iterable[str], n: int = 13, min_n: int = 8) -> set[str]:
    """Every n-gram of each text, or the whole text when it has ``min_n`` to ``n - 1`` words."""
    grams: set[str] = set()
    for text in eval_texts:
        w = [t for t, _, _ in words(text)]
        if len(w) >= n:
            grams.update(" ".join(w[i : i + n]) for i in range(len(w) - n + 1))
        elif len(w) >= min_n:
            grams.add(" ".join(w))
    return grams


def lengths_of(grams: set[str]) -> list[int]:
    """The n-gram lengths present, longest first (the order matches are tried at one position)."""
    return sorted({g.count(" ") + 1 for g in grams}, reverse=True)


def doc_ngrams(text: str, grams: set[str], lengths: list[int]) -> set[str]:
    """Every key that occurs anywhere in ``text`` (the counting pass)."""
    tokens = [t for t, _, _ in words(text)]
    found = set()
    for i in range(len(tokens)):
        for k in lengths:
            if i + k <= len(tokens):
                seq = " ".join(tokens[i : i + k])
                if seq in grams:
                    found.add(seq)
    return found


def too_common(docs: Iterable[str], grams: set[str], freq_limit: int, lengths: list[int] | None = None) -> set[str]:
    """Keys found in more than ``freq_limit`` documents (none when the limit is 0)."""
    lengths = lengths if lengths is not None else lengths_of(grams)
    freq: Counter = Counter()
    for text in docs:
        freq.update(doc_ngrams(text, grams, lengths))
    return {g for g, c in freq.items() if freq_limit and c > freq_limit}


def decontaminate(
    text: str,
    grams: set[str],
    cut_chars: int = 200,
    min_piece_chars: int = 200,
    max_pieces: int = 10,
    ends: str = ".!?",
    lengths: list[int] | None = None,
) -> tuple[list[tuple[int, int]], list[tuple[int, int]], bool]:
    """One document: (kept pieces, short pieces, dropped whole) as offsets in ``text``.

    Every match's span, widened by ``cut_chars`` and walked out to sentence ends as
    filter_ngrams.split_text does, is removed; overlapping removals merge. A document
    without a match gives one kept piece, the whole text, whatever its length.
    """
    lengths = lengths if lengths is not None else lengths_of(grams)
    w = words(text)
    tokens = [t for t, _, _ in w]
    regions = []
    for i in range(len(tokens)):
        for k in lengths:
            if i + k <= len(tokens) and " ".join(tokens[i : i + k]) in grams:
                s, e = w[i][1], w[i + k - 1][2]
                pos = s - cut_chars  # walk left to a sentence end
                while pos >= 0 and text[pos] not in ends:
                    pos -= 1
                left = pos + 1
                pos = e + cut_chars  # walk right to a sentence end
                while pos < len(text) and text[pos] not in ends:
                    pos += 1
                regions.append((left, min(pos + 1, len(text))))
    if not regions:
        return [(0, len(text))], [], False
    pieces, seg = [], 0
    for a, b in sorted(regions):
        if a > seg:
            pieces.append((seg, a))
        seg = max(seg, b)
    if seg < len(text):
        pieces.append((seg, len(text)))
    kept = [p for p in pieces if p[1] - p[0] >= min_piece_chars]
    short = [p for p in pieces if p[1] - p[0] < min_piece_chars]
    return kept, short, len(kept) > max_pieces
