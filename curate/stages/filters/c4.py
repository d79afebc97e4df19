"""C4 rules (Raffel et al. 2020, section 2.2; TensorFlow Datasets ``c4_utils.clean_page``).

Line by line: drop lines with a word over 1,000 characters, strip Wikipedia-style citation
marks, drop lines that do not end in terminal punctuation (``. ? ! " '``, not ``...``), lines
of fewer than 3 words, lines mentioning "javascript" and cookie/terms-of-use lines; drop the
whole page for "lorem ipsum" or a curly bracket in a line that survived so far, and for fewer
than 5 sentences in the kept lines. Kept pages keep only their kept lines (``remove_lines``),
as in C4. Sentences are counted per kept line the way datatrove does (spaCy's sentencizer:
a sentence ends at a token that is a sentence-terminal mark, when a non-punctuation token
follows); the per-line count is needed only while the total is below the minimum.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from curate.stages.filters.base import RuleSet, enabled
from curate.stages.filters.text import TERMINAL_PUNCTUATION, Doc, words

CITATION = re.compile(r"\[\d*\]|\[edit\]|\[citation needed\]")
END_MARKS = (".", "?", "!", '"', "'")
POLICY = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies")
_STERM = frozenset(TERMINAL_PUNCTUATION)
_PUNCT_CACHE: dict[str, bool] = {}


def _is_punct(token: str) -> bool:
    """spaCy's ``is_punct``: every character is Unicode punctuation (P*)."""
    r = _PUNCT_CACHE.get(token)
    if r is None:
        r = all(unicodedata.category(c)[0] == "P" for c in token)
        if len(_PUNCT_CACHE) < 100_000:
            _PUNCT_CACHE[token] = r
    return r


def count_sentences(line: str) -> int:
    """Sentences in one line, as spaCy's sentencizer splits it."""
    n = 0
    seen_end = False
    for tok in words(line):
        if n == 0:
            n = 1
        is_end = tok in _STERM
        if seen_end and not is_end and not _is_punct(tok):
            n += 1
            seen_end = False
        elif is_end:
            seen_end = True
    return n


def _c4(doc: Doc, th: dict[str, Any], counters: dict[str, int]) -> str | None:
    max_word = th["max_word_length"]
    min_words = th["min_words_per_line"]
    min_sentences = th["min_sentences"] if enabled(th["min_sentences"]) else 0
    kept: list[str] = []
    sentences = 0
    changed = False
    for raw in doc.lines:
        line = raw.strip()
        if not line:
            changed = True
            continue
        split = line.split()
        if enabled(max_word) and any(len(w) > max_word for w in split):
            counters["line_max_word_length"] = counters.get("line_max_word_length", 0) + 1
            changed = True
            continue
        if th["remove_citations"] and "[" in line:
            line = CITATION.sub("", line)
        if th["terminal_punct"] and (not line.endswith(END_MARKS) or line.endswith("...")):
            counters["line_terminal_punct"] = counters.get("line_terminal_punct", 0) + 1
            changed = True
            continue
        if enabled(min_words) and len(split) < min_words:
            counters["line_min_words"] = counters.get("line_min_words", 0) + 1
            changed = True
            continue
        lower = line.lower()
        if th["lorem_ipsum"] and "lorem ipsum" in lower:
            return "lorem_ipsum"
        if th["javascript"] and "javascript" in lower:
            counters["line_javascript"] = counters.get("line_javascript", 0) + 1
            changed = True
            continue
        if th["curly_bracket"] and "{" in line:
            return "curly_bracket"
        if th["policy"] and any(p in lower for p in POLICY):
            counters["line_policy"] = counters.get("line_policy", 0) + 1
            changed = True
            continue
        if sentences < min_sentences:
            sentences += count_sentences(line)
        kept.append(line)
        changed = changed or line != raw
    if sentences < min_sentences:
        return "min_sentences"
    if th["remove_lines"] and changed:
        new = "\n".join(kept).strip()
        if new != doc.text:
            counters["docs_changed"] = counters.get("docs_changed", 0) + 1
            doc.replace_text(new)
    return None


C4 = RuleSet(
    name="c4",
    defaults={
        "max_word_length": 1000,
        "remove_citations": True,
        "terminal_punct": True,
        "min_words_per_line": 3,
        "lorem_ipsum": True,
        "javascript": True,
        "curly_bracket": True,
        "policy": True,
        "min_sentences": 5,
        "remove_lines": True,
    },
    check=_c4,
    reasons=("lorem_ipsum", "curly_bracket", "min_sentences"),
    reference="Raffel et al. 2020, Exploring the Limits of Transfer Learning (T5), section 2.2 (C4)",
)
