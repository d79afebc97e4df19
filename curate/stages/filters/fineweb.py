"""FineWeb rules (Penedo et al. 2024, "The FineWeb Datasets: Decanting the Web for the Finest
Text Data at Scale", arXiv:2406.17557, section 3.3), as the code that built FineWeb defines
them: datatrove 0.10.1's ``FineWebQualityFilter`` (``src/datatrove/pipeline/filters/
fineweb_quality_filter.py``) with its defaults; one preset, ``datatrove``.

Over the non-blank lines (split on ``\\n``, not stripped): too few lines ending in one of
datatrove's sentence-terminal marks (< 0.12; :data:`~curate.stages.filters.text.DATATROVE_TERMINAL`),
too many short lines (> 0.67 of lines of at most 30 characters), too many characters in
duplicated lines (> 0.01 of the characters that are not newlines: the code's default, with
which FineWeb was built), and too many newlines per word (> 0.3: list-like pages; words are
spaCy tokens as datatrove splits them).
"""

from __future__ import annotations

from typing import Any

from curate.registry import rule_set
from curate.stages.filters.base import RuleSet, enabled
from curate.stages.filters.text import DATATROVE_TERMINAL, Doc, duplicates


def _fineweb(doc: Doc, th: dict[str, Any], counters: dict[str, int]) -> str | None:
    """FineWeb's quality filter: line punctuation, short lines, duplicated-line characters, newlines per word."""
    lines = doc.nonblank_lines
    if not lines:
        return "line_punct_ratio"
    n = len(lines)
    limit = th["min_line_punct_ratio"]
    if enabled(limit):
        ratio = sum(1 for ln in lines if ln.endswith(DATATROVE_TERMINAL)) / n
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


FINEWEB = rule_set(
    RuleSet(
        name="fineweb",
        presets={
            "datatrove": {
                "min_line_punct_ratio": 0.12,
                "line_punct_exclude_zero": False,
                "max_short_line_ratio": 0.67,
                "short_line_length": 30,
                "max_char_dup_ratio": 0.01,
                "max_newline_word_ratio": 0.3,
            }
        },
        published="datatrove",
        check=_fineweb,
        reasons=("line_punct_ratio", "short_line_ratio", "char_dup_ratio", "list_ratio"),
        references={
            "datatrove": "datatrove 0.10.1, src/datatrove/pipeline/filters/fineweb_quality_filter.py (FineWebQualityFilter "
            "defaults), the code that built FineWeb (Penedo et al. 2024, arXiv:2406.17557, section 3.3)"
        },
        order=40,
    )
)
