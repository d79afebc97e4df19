"""Gopher quality and repetition rules (Rae et al. 2021, "Scaling Language Models: Methods,
Analysis & Insights from Training Gopher", arXiv:2112.11446, appendix A.1.1 and table A1).

Two presets of each rule set:

``paper`` (the default)
    the paper's wording. Its quality rules are stated over *words* ("between 50 and 100,000
    words", "mean word length", "80% of words in a document contain at least one alphabetic
    character"), read as whitespace-separated words (``words: whitespace``): a comma or a
    period is not a word. Stop words are found in those words with the punctuation around
    them stripped ("the," holds "the"). The repetition rules compare word n-grams as n-grams
    (``dup_ngrams: words``).
``datatrove``
    datatrove 0.10.1's ``GopherQualityFilter`` and ``GopherRepetitionFilter``
    (``src/datatrove/pipeline/filters/gopher_quality_filter.py``, ``gopher_repetition_filter.py``),
    with which FineWeb was filtered, decision for decision: words are spaCy tokens
    (``words: tokens``, :func:`~curate.stages.filters.text.words`), so each punctuation mark
    is a word of the alphabetic-words ratio; tokens made only of datatrove's punctuation list
    (:data:`~curate.stages.filters.text.DATATROVE_PUNCTUATION`: not arrows, bullets, emoji or
    the degree sign) are left out of the word count and the mean word length; stop words are
    matched among the tokens; and duplicated 5- to 10-grams are compared as their words
    concatenated without a separator (``dup_ngrams: joined``: ``ab c`` equals ``a bc``).

Both: stop words are matched case-sensitively (the paper lists them in lower case); the
symbol-to-word ratios count ``#`` and ``...``/``…`` in the text per word; the top 2- to 4-gram
fractions count the n-gram with its words joined by spaces, the duplicate n-gram fractions
the words' characters only (as datatrove does; the paper says neither).
"""

from __future__ import annotations

import re
from typing import Any

from curate.registry import rule_set
from curate.stages.filters.base import RuleSet, enabled
from curate.stages.filters.text import Doc, duplicates, line_runs, paragraphs

STOP_WORDS = ("the", "be", "to", "of", "and", "that", "have", "with")
_EDGES = re.compile(r"^[\W_]+|[\W_]+$")  # punctuation around a whitespace word

PAPER = "Rae et al. 2021, Scaling Language Models: Methods, Analysis & Insights from Training Gopher (arXiv:2112.11446)"
DATATROVE = "datatrove 0.10.1, src/datatrove/pipeline/filters/"


def _quality(doc: Doc, th: dict[str, Any], counters: dict[str, int]) -> str | None:
    """Gopher's quality filter (appendix A.1.1): length, mean word length, symbol-to-word ratio,
    bullet and ellipsis lines, alphabetic words, stop words."""
    spaces = th["words"] == "whitespace"
    if spaces:
        n_words, real_chars, _ = doc.spaces_stats
        n_real = n_words
    else:
        n_words = len(doc.words)
        symbol_chars, n_symbol = doc.symbol_stats
        n_real = n_words - n_symbol
        real_chars = doc.total_word_chars - symbol_chars
    if enabled(th["min_words"]) and n_real < th["min_words"]:
        return "word_count"
    if enabled(th["max_words"]) and n_real > th["max_words"]:
        return "word_count"
    if n_real:
        mean = real_chars / n_real
        if enabled(th["min_mean_word_length"]) and mean < th["min_mean_word_length"]:
            return "mean_word_length"
        if enabled(th["max_mean_word_length"]) and mean > th["max_mean_word_length"]:
            return "mean_word_length"
    text = doc.text
    limit = th["max_symbol_word_ratio"]
    if enabled(limit) and n_words:
        if text.count("#") / n_words > limit:
            return "symbol_word_ratio"
        if (text.count("...") + text.count("…")) / n_words > limit:
            return "symbol_word_ratio"
    lines = doc.lines
    if lines:
        limit = th["max_bullet_lines_ratio"]
        if enabled(limit) and sum(1 for ln in lines if ln.lstrip().startswith(("•", "-"))) / len(lines) > limit:
            return "bullet_lines"
        limit = th["max_ellipsis_lines_ratio"]
        if enabled(limit) and sum(1 for ln in lines if ln.rstrip().endswith(("...", "…"))) / len(lines) > limit:
            return "ellipsis_lines"
    limit = th["min_alpha_words_ratio"]
    if enabled(limit) and n_words:
        n_alpha = doc.spaces_stats[2] if spaces else doc.alpha_words
        if n_alpha / n_words < limit:
            return "alpha_words"
    need = th["min_stop_words"]
    if enabled(need) and need > 0:
        stop = frozenset(th["stop_words"])
        words = doc.spaces_words if spaces else doc.words
        found = stop.intersection(words)
        if len(found) < need and spaces:
            found = stop.intersection({_EDGES.sub("", w) for w in words})
        if len(found) < need:
            return "stop_words"
    return None


_QUALITY = {
    "min_words": 50,
    "max_words": 100_000,
    "min_mean_word_length": 3,
    "max_mean_word_length": 10,
    "max_symbol_word_ratio": 0.1,
    "max_bullet_lines_ratio": 0.9,
    "max_ellipsis_lines_ratio": 0.3,
    "min_alpha_words_ratio": 0.8,
    "min_stop_words": 2,
    "stop_words": list(STOP_WORDS),
}

GOPHER_QUALITY = rule_set(
    RuleSet(
        name="gopher_quality",
        presets={"paper": {**_QUALITY, "words": "whitespace"}, "datatrove": {**_QUALITY, "words": "tokens"}},
        published="paper",
        check=_quality,
        reasons=("word_count", "mean_word_length", "symbol_word_ratio", "bullet_lines", "ellipsis_lines", "alpha_words", "stop_words"),
        references={
            "paper": f"{PAPER}, appendix A.1.1 (quality filters); words read as whitespace-separated words",
            "datatrove": f"{DATATROVE}gopher_quality_filter.py (GopherQualityFilter defaults)",
        },
        choices={"words": ("whitespace", "tokens")},
        order=20,
    )
)

TOP_NGRAMS = {2: 0.20, 3: 0.18, 4: 0.16}
DUP_NGRAMS = {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}
_TOPS, _DUPS = range(min(TOP_NGRAMS), max(TOP_NGRAMS) + 1), range(min(DUP_NGRAMS), max(DUP_NGRAMS) + 1)
_NGRAM_RULES = [f"top_{n}gram_frac" for n in _TOPS] + [f"dup_{n}gram_frac" for n in _DUPS]


def _repetition(doc: Doc, th: dict[str, Any], counters: dict[str, int]) -> str | None:
    """Gopher's repetition filter (table A1): duplicate paragraphs and lines (their number and
    characters), the most frequent 2- to 4-gram's characters, characters in duplicate 5- to 10-grams."""
    text = doc.text
    n_chars = len(text)
    if not n_chars:
        return "dup_para_frac"
    paras = paragraphs(text)
    n_dup, dup_chars = duplicates(paras)
    if enabled(th["dup_para_frac"]) and n_dup / len(paras) > th["dup_para_frac"]:
        return "dup_para_frac"
    if enabled(th["dup_para_char_frac"]) and dup_chars / n_chars > th["dup_para_char_frac"]:
        return "dup_para_char_frac"
    lines = line_runs(text)
    n_dup, dup_chars = duplicates(lines)
    if enabled(th["dup_line_frac"]) and n_dup / len(lines) > th["dup_line_frac"]:
        return "dup_line_frac"
    if enabled(th["dup_line_char_frac"]) and dup_chars / n_chars > th["dup_line_char_frac"]:
        return "dup_line_char_frac"
    stats = doc.repetition(_TOPS, _DUPS, joined=th["dup_ngrams"] == "joined")
    for name, chars in zip(_NGRAM_RULES, stats):
        limit = th[name]
        if enabled(limit) and chars / n_chars > limit:
            return name
    return None


_REPETITION = {
    "dup_para_frac": 0.30,
    "dup_para_char_frac": 0.20,
    "dup_line_frac": 0.30,
    "dup_line_char_frac": 0.20,
    **{f"top_{n}gram_frac": v for n, v in TOP_NGRAMS.items()},
    **{f"dup_{n}gram_frac": v for n, v in DUP_NGRAMS.items()},
}

GOPHER_REPETITION = rule_set(
    RuleSet(
        name="gopher_repetition",
        presets={"paper": {**_REPETITION, "dup_ngrams": "words"}, "datatrove": {**_REPETITION, "dup_ngrams": "joined"}},
        published="paper",
        check=_repetition,
        reasons=(
            "dup_para_frac",
            "dup_para_char_frac",
            "dup_line_frac",
            "dup_line_char_frac",
            *(f"top_{n}gram_frac" for n in TOP_NGRAMS),
            *(f"dup_{n}gram_frac" for n in DUP_NGRAMS),
        ),
        references={
            "paper": f"{PAPER}, appendix A.1.1 and table A1 (repetition thresholds); n-grams of spaCy tokens",
            "datatrove": f"{DATATROVE}gopher_repetition_filter.py (GopherRepetitionFilter defaults)",
        },
        choices={"dup_ngrams": ("words", "joined")},
        order=10,
    )
)
