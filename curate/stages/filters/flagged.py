"""Flagged words: drop a page by the share of its words that are on a word list (opt-in).

Two published readings, as presets:

``data_juicer`` (the default): Data-Juicer's ``flagged_words_filter`` (``data_juicer/ops/filter/
flagged_words_filter.py``, defaults ``max_ratio=0.045``, ``tokenization=False``). Words are the
text split on spaces, tabs and newlines, lower-cased, with the characters that are not letters
stripped from both ends (Data-Juicer strips punctuation, digits, whitespace and emoji; a word left
empty is not counted); a page is dropped when the flagged words are more than ``max_ratio`` of
its words. A list line with a space (a phrase) never equals one word, so it counts as in
Data-Juicer: never.

``c4``: C4's bad-words rule (TFDS ``c4_utils.get_badwords_filter_fn``, with the LDNOOBW list): a
page is dropped when any entry of the list, a word or a phrase, occurs in the lower-cased text
flanked by characters that are not word characters (or the text's ends). ``max_ratio: 0`` with
``match: phrases``; a higher ``max_ratio`` with phrases compares the words of the matches (a
phrase counts its words) with the page's whitespace words.

The list is a file the user gives (``words_file``; UTF-8, one word or phrase per line, ``#``
comments); curate ships none. It is read once per process and a changed file makes an output
stale (its sha256 is recorded). The rejection reason is ``flagged_words:ratio``.
"""

from __future__ import annotations

import functools
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curate.errors import CurateError
from curate.registry import rule_set
from curate.stages.filters.base import RuleSet
from curate.stages.filters.text import Doc

_WS = re.compile(r"[ \t\n]+")


def _strip_non_letters(word: str) -> str:
    """A word without the characters that are not letters (or combining marks) at its ends."""
    i, j = 0, len(word)
    while i < j and not (word[i].isalpha() or _is_mark(word[i])):
        i += 1
    while j > i and not (word[j - 1].isalpha() or _is_mark(word[j - 1])):
        j -= 1
    return word[i:j]


def _is_mark(ch: str) -> bool:
    return unicodedata.category(ch).startswith("M")


def dj_words(text: str) -> list[str]:
    """Data-Juicer's words of a text (no tokenizer): split on space, tab, newline; lower-cased; edges stripped; empties dropped."""
    out = []
    for w in _WS.split(text.lower()):
        if w:
            s = w if w[0].isalpha() and w[-1].isalpha() else _strip_non_letters(w)
            if s:
                out.append(s)
    return out


@dataclass(frozen=True)
class WordList:
    """A flagged-word list as it is matched: single words (a set) and every entry as one pattern."""

    path: str
    words: frozenset[str]
    entries: tuple[str, ...]

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        alts = "|".join(re.escape(e) for e in sorted(self.entries, key=lambda e: (-len(e), e)))
        return re.compile(rf"(?<!\w)(?:{alts})(?!\w)")


@functools.lru_cache(maxsize=8)
def _load(path: str, size: int, mtime_ns: int) -> WordList:
    entries: list[str] = []
    try:
        with open(path, encoding="utf-8", errors="strict") as f:
            for n, raw in enumerate(f, 1):
                line = raw.strip()
                if not line or line.startswith("#"):
                    continue
                entry = " ".join(line.lower().split())
                if not any(ch.isalnum() for ch in entry):
                    shown = line if len(line) <= 80 else line[:77] + "..."
                    raise CurateError(f"{path}:{n}: not a word or phrase: {shown!r} (one entry per line, '#' starts a comment)")
                entries.append(entry)
    except UnicodeDecodeError as exc:
        raise CurateError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except IsADirectoryError:
        raise CurateError(f"{path}: is a directory, not a word list file") from None
    except FileNotFoundError:
        raise CurateError(f"{path}: no such word list file (thresholds.flagged_words.words_file)") from None
    except OSError as exc:
        raise CurateError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not entries:
        raise CurateError(f"{path}: the flagged-word list is empty")
    single = frozenset(e for e in entries if " " not in e)
    return WordList(path, single, tuple(dict.fromkeys(entries)))


def load_word_list(path: str | None) -> WordList:
    """The list at ``path``, read once per process (again when the file changed)."""
    if not path:
        raise CurateError("flagged_words needs its word list: thresholds: {flagged_words: {words_file: FILE}} in the filter config")
    p = str(Path(path).expanduser())
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise CurateError(f"{p}: no such word list file (thresholds.flagged_words.words_file)") from None
    except OSError as exc:
        raise CurateError(f"{p}: cannot read: {exc.strerror or exc}") from None
    return _load(p, st.st_size, st.st_mtime_ns)


_IN_USE: dict[str | None, WordList] = {}  # per process: the list of each path, read once (the stage checked it before any work)


def _flagged(doc: Doc, th: dict[str, Any], counters: dict[str, int]) -> str | None:
    wl = _IN_USE.get(th["words_file"])
    if wl is None:
        wl = _IN_USE[th["words_file"]] = load_word_list(th["words_file"])
    limit = th["max_ratio"]
    if limit is None or limit is False:
        return None
    if th["match"] == "phrases":
        lower = doc.text.lower()
        if not limit:
            return "ratio" if wl.pattern.search(lower) else None
        hits = sum(m.group().count(" ") + 1 for m in wl.pattern.finditer(lower))
        total = len(doc.text.split())
    else:
        words = dj_words(doc.text)
        total = len(words)
        hits = sum(1 for w in words if w in wl.words)
    return "ratio" if total and hits / total > limit else None


FLAGGED_WORDS = rule_set(
    RuleSet(
        name="flagged_words",
        presets={
            "data_juicer": {"words_file": None, "max_ratio": 0.045, "match": "words"},
            "c4": {"words_file": None, "max_ratio": 0, "match": "phrases"},
        },
        published="data_juicer",
        check=_flagged,
        reasons=("ratio",),
        references={
            "data_juicer": "Data-Juicer flagged_words_filter (data_juicer/ops/filter/flagged_words_filter.py): max_ratio 0.045, "
            "words split on whitespace, lower-cased, non-letters stripped from their ends",
            "c4": "C4's bad-words page filter (TFDS c4_utils.get_badwords_filter_fn): any list entry flanked by non-word characters",
        },
        choices={"match": ("words", "phrases")},
        order=50,
        opt_in=True,
        file_options=("words_file",),
    )
)
