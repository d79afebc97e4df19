"""C4 rules (Raffel et al. 2020, "Exploring the Limits of Transfer Learning with a Unified
Text-to-Text Transformer", JMLR 21(140), section 2.2), in three presets.

``tfds`` (the default): the code that built C4, TensorFlow Datasets'
``tensorflow_datasets/text/c4_utils.py``, function ``clean_page`` and its constants
(``_MIN_WORDS_PER_LINE = 5``, ``_MIN_NUM_SENTENCES = 3``, ``_MAX_WORD_LENGTH = 1000``,
``_END_MARKS = (".", "?", "!", '"')``, ``_ELLIPSIS``, ``_POLICY_SUBSTRINGS``; the same in the
2020 and 2022 versions, tensorflow/datasets commits 0560e686 and 3e77995c). Line by line, each
line stripped: drop a line with a whitespace word over 1,000 characters; strip citation marks
(``[1]``, ``[edit]``, ``[citation needed]``); drop a line that does not end in ``. ? ! "`` or
ends in ``...``; drop a line of fewer than 5 whitespace words, counted after the citation marks
are removed; drop the whole page for "lorem ipsum"; drop a line mentioning "javascript"; drop
the page for a curly bracket; drop a cookie/terms-of-use line; then drop the page when its
kept lines hold fewer than 3 sentences. A kept page keeps only its kept lines, joined by
newlines (``remove_lines``). TFDS counts sentences with NLTK's Punkt English model, which
curate does not ship: ``sentences: punkt_like`` counts them with the same splitter as
``spacy`` but ends a sentence only at ``. ? !`` (Punkt's English sentence ends), an
approximation. Not implemented: the bad-words page filter (the paper's LDNOOBW list), C4's
page length limit and its cross-document line deduplication (see the dedup stages).

``datatrove``: datatrove 0.10.1's ``C4QualityFilter`` defaults
(``src/datatrove/pipeline/filters/c4_filters.py``), which follow the paper's list (as its
docstring quotes it) rather than the code: lines of at least 3 words counted before the citation marks are removed, pages of
at least 5 sentences, ``'`` also an end mark, sentences counted with spaCy's sentencizer
(``sentences: spacy``: a sentence ends at a token that is one of its 128 sentence-final marks
when a token that is not punctuation follows).

``fineweb``: ``datatrove`` with ``terminal_punct: false``, as FineWeb's production pipeline ran
it (datatrove ``examples/fineweb.py``: ``C4QualityFilter(filter_no_terminal_punct=False)``).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from curate.registry import rule_set
from curate.stages.filters.base import RuleSet, enabled
from curate.stages.filters.text import SPACY_SENTENCE_ENDS, Doc, words

CITATION = re.compile(r"\[\d*\]|\[edit\]|\[citation needed\]")
POLICY = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies")
PUNKT_ENDS = frozenset(".?!")  # NLTK Punkt's sentence ends for English
_PUNCT_CACHE: dict[str, bool] = {}


def _is_punct(token: str) -> bool:
    """spaCy's ``is_punct``: every character is Unicode punctuation (P*)."""
    r = _PUNCT_CACHE.get(token)
    if r is None:
        r = all(unicodedata.category(c)[0] == "P" for c in token)
        if len(_PUNCT_CACHE) < 100_000:
            _PUNCT_CACHE[token] = r
    return r


def count_sentences(line: str, ends: frozenset[str] = SPACY_SENTENCE_ENDS) -> int:
    """Sentences in one line, as spaCy's sentencizer splits it (with ``ends`` as its sentence-final marks)."""
    n = 0
    seen_end = False
    for tok in words(line):
        if n == 0:
            n = 1
        is_end = tok in ends
        if seen_end and not is_end and not _is_punct(tok):
            n += 1
            seen_end = False
        elif is_end:
            seen_end = True
    return n


def _c4(doc: Doc, th: dict[str, Any], counters: dict[str, int]) -> str | None:
    """C4's line and page rules (``clean_page``), in the preset's reading."""
    max_word = th["max_word_length"]
    min_words = th["min_words_per_line"]
    min_sentences = th["min_sentences"] if enabled(th["min_sentences"]) else 0
    end_marks = tuple(th["end_marks"])
    words_after = th["words_after_citations"]
    ends = PUNKT_ENDS if th["sentences"] == "punkt_like" else SPACY_SENTENCE_ENDS
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
            cleaned = CITATION.sub("", line)
            if words_after and cleaned != line:
                split = cleaned.split()
            line = cleaned
        if th["terminal_punct"] and (not line.endswith(end_marks) or line.endswith("...")):
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
            sentences += count_sentences(line, ends)
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


_TFDS = {
    "max_word_length": 1000,
    "remove_citations": True,
    "terminal_punct": True,
    "end_marks": [".", "?", "!", '"'],
    "min_words_per_line": 5,
    "words_after_citations": True,
    "lorem_ipsum": True,
    "javascript": True,
    "curly_bracket": True,
    "policy": True,
    "min_sentences": 3,
    "sentences": "punkt_like",
    "remove_lines": True,
}
_DATATROVE = {
    **_TFDS,
    "end_marks": [".", "?", "!", '"', "'"],
    "min_words_per_line": 3,
    "words_after_citations": False,
    "min_sentences": 5,
    "sentences": "spacy",
}

C4 = rule_set(
    RuleSet(
        name="c4",
        presets={"tfds": _TFDS, "datatrove": _DATATROVE, "fineweb": {**_DATATROVE, "terminal_punct": False}},
        published="tfds",
        check=_c4,
        reasons=("lorem_ipsum", "curly_bracket", "min_sentences"),
        references={
            "tfds": "TensorFlow Datasets, tensorflow_datasets/text/c4_utils.py (clean_page), the code that built C4 "
            "(Raffel et al. 2020, JMLR 21(140), section 2.2)",
            "datatrove": "datatrove 0.10.1, src/datatrove/pipeline/filters/c4_filters.py (C4QualityFilter defaults)",
            "fineweb": "datatrove examples/fineweb.py: C4QualityFilter(filter_no_terminal_punct=False)",
        },
        choices={"sentences": ("punkt_like", "spacy")},
        order=30,
        line_counters=True,
    )
)
