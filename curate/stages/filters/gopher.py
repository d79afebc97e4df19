"""Gopher quality and repetition rules (Rae et al. 2021, "Scaling Language Models", appendix A, table A1).

Definitions and defaults follow the paper as implemented by datatrove's ``GopherQualityFilter``
and ``GopherRepetitionFilter``, so that keep/drop decisions agree: words are the tokens of
:func:`~curate.stages.filters.text.words`; "symbol" tokens (no letter, digit or mark) are
left out of the word count and the mean word length but not out of the ratios' denominators;
stop words are matched case-sensitively.
"""

from __future__ import annotations

from typing import Any

from curate.stages.filters.base import RuleSet, enabled
from curate.stages.filters.text import Doc, duplicates, line_runs, paragraphs

STOP_WORDS = ("the", "be", "to", "of", "and", "that", "have", "with")


def _quality(doc: Doc, th: dict[str, Any], counters: dict[str, int]) -> str | None:
    words = doc.words
    n_words = len(words)
    symbol_chars, n_symbol = doc.symbol_stats
    n_real = n_words - n_symbol
    if enabled(th["min_words"]) and n_real < th["min_words"]:
        return "word_count"
    if enabled(th["max_words"]) and n_real > th["max_words"]:
        return "word_count"
    if n_real:
        mean = (doc.total_word_chars - symbol_chars) / n_real
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
    if enabled(limit) and n_words and doc.alpha_words / n_words < limit:
        return "alpha_words"
    need = th["min_stop_words"]
    if enabled(need) and need > 0:
        stop = th["stop_words"]
        if len(frozenset(stop).intersection(words)) < need:
            return "stop_words"
    return None


GOPHER_QUALITY = RuleSet(
    name="gopher_quality",
    defaults={
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
    },
    check=_quality,
    reasons=("word_count", "mean_word_length", "symbol_word_ratio", "bullet_lines", "ellipsis_lines", "alpha_words", "stop_words"),
    reference="Rae et al. 2021, Scaling Language Models: Methods, Analysis & Insights from Training Gopher, appendix A.1.1",
)

TOP_NGRAMS = {2: 0.20, 3: 0.18, 4: 0.16}
DUP_NGRAMS = {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}


def _repetition(doc: Doc, th: dict[str, Any], counters: dict[str, int]) -> str | None:
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
    for n in TOP_NGRAMS:
        limit = th[f"top_{n}gram_frac"]
        if enabled(limit) and doc.top_ngram_chars(n) / n_chars > limit:
            return f"top_{n}gram_frac"
    for n in DUP_NGRAMS:
        limit = th[f"dup_{n}gram_frac"]
        if enabled(limit) and doc.duplicate_ngram_chars(n) / n_chars > limit:
            return f"dup_{n}gram_frac"
    return None


GOPHER_REPETITION = RuleSet(
    name="gopher_repetition",
    defaults={
        "dup_para_frac": 0.30,
        "dup_para_char_frac": 0.20,
        "dup_line_frac": 0.30,
        "dup_line_char_frac": 0.20,
        **{f"top_{n}gram_frac": v for n, v in TOP_NGRAMS.items()},
        **{f"dup_{n}gram_frac": v for n, v in DUP_NGRAMS.items()},
    },
    check=_repetition,
    reasons=(
        "dup_para_frac",
        "dup_para_char_frac",
        "dup_line_frac",
        "dup_line_char_frac",
        *(f"top_{n}gram_frac" for n in TOP_NGRAMS),
        *(f"dup_{n}gram_frac" for n in DUP_NGRAMS),
    ),
    reference="Rae et al. 2021, appendix A.1.1, table A1",
)
