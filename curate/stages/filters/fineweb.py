"""FineWeb rules (Penedo et al. 2024, "The FineWeb Datasets", section 3.3).

Over the non-blank lines (split on ``\\n``, not stripped): too few lines ending in a
sentence-terminal mark (< 0.12), too many short lines (> 0.67 of lines of at most 30
characters), too many characters in duplicated lines (> 0.01 of the characters that are not
newlines: datatrove's default, with which FineWeb was built), and, as in datatrove's
``FineWebQualityFilter``, too many newlines per word (> 0.3: list-like pages).
"""

from __future__ import annotations

from typing import Any

from curate.stages.filters.base import RuleSet, enabled
from curate.stages.filters.text import TERMINAL_PUNCTUATION, Doc, duplicates


def _fineweb(doc: Doc, th: dict[str, Any], counters: dict[str, int]) -> str | None:
    lines = doc.nonblank_lines
    if not lines:
        return "line_punct_ratio"
    n = len(lines)
    limit = th["min_line_punct_ratio"]
    if enabled(limit):
        ratio = sum(1 for ln in lines if ln.endswith(TERMINAL_PUNCTUATION)) / n
        if ratio < limit and not (ratio == 0 and th["line_punct_exclude_zero"]):
            return "line_punct_ratio"
    limit = th["max_short_line_ratio"]
    if enabled(limit):
        short = th["short_line_length"]
        if sum(1 for ln in lines if len(ln) <= short) / n > limit:
            return "short_line_ratio"
    limit = th["max_char_dup_ratio"]
    if enabled(limit):
        chars = len(doc.text) - doc.text.count("\n")
        if chars and duplicates(lines)[1] / chars > limit:
            return "char_dup_ratio"
    limit = th["max_newline_word_ratio"]
    if enabled(limit):
        newlines = doc.text.count("\n")
        # every whitespace-separated chunk is at least one word: when that bound already
        # passes, the words need not be split (unless another rule set has split them)
        if "words" not in doc.__dict__ and newlines <= limit * len(doc.text.split()):
            return None
        n_words = len(doc.words)
        if n_words == 0 or newlines / n_words > limit:
            return "list_ratio"
    return None


FINEWEB = RuleSet(
    name="fineweb",
    defaults={
        "min_line_punct_ratio": 0.12,
        "line_punct_exclude_zero": False,
        "max_short_line_ratio": 0.67,
        "short_line_length": 30,
        "max_char_dup_ratio": 0.01,
        "max_newline_word_ratio": 0.3,
    },
    check=_fineweb,
    reasons=("line_punct_ratio", "short_line_ratio", "char_dup_ratio", "list_ratio"),
    reference="Penedo et al. 2024, The FineWeb Datasets: Decanting the Web for the Finest Text Data at Scale, section 3.3",
)
