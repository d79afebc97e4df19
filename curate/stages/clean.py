"""Unicode repair and text normalisation with ftfy (the ``clean`` stage).

ftfy fixes mojibake (``cafÃ©`` -> ``café``), Latin ligatures, full-width characters and
control characters, but runs at about 0.6 MB/s because it scans clean text several times.
Mojibake of UTF-8 read as Latin-1 or Windows-1252 always contains a lead character
(U+00C2-U+00F4) followed by a continuation-like one; ``_MOJIBAKE`` finds that pair at
regex speed. Only documents with such a pair go through ``ftfy.fix_text``; the others get
ftfy's cheap fixes (ligatures, width) only when they hold such characters, and NFC.

Width. Full-width (and half-width) forms are folded as ftfy folds them (``ＡＢＣ１２３`` ->
``ABC123``, half-width katakana -> katakana) with one exception: full-width punctuation and
the ideographic space (``，；！：？（）``, U+3000) are kept next to CJK text. They are not
compatibility variants there but the punctuation of Chinese and Japanese typesetting; ftfy
(like NFKC) would turn ``你好，世界！`` into ``你好,世界!``, a form CJK text does not use.
Whether a run of such punctuation belongs to CJK text is told by its neighbours (the
nearest character before and after it, past spaces and quotes), not by the document: a
bilingual page, or an English article quoting a Chinese sentence, keeps each part's own
punctuation, and ``ｆｕｌｌ ｗｉｄｔｈ！`` in English text is still folded to ``full width!``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import ClassVar

import ftfy
import ftfy.fixes
from ftfy.chardata import WIDTH_MAP

from curate.registry import stage
from curate.runtime import Batch, Counters, Decisions, DocStage, param

_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufeff]")  # as ftfy's remove_control_chars, plus the BOM
_TRAILING_WS = re.compile(r"[ \t]+\n")
_MANY_BLANK = re.compile(r"\n{4,}")
_SURROGATES = re.compile(r"[\ud800-\udfff]")
_MOJIBAKE = re.compile(
    "[\u00c2-\u00f4][\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc"
    "\u2013\u2014\u2018-\u201e\u2020-\u2022\u2026\u2030\u2039\u203a\u20ac\u2122]"
    "|[\u0080-\u009f]"  # C1 controls: bytes decoded as Latin-1
    "|[ÐÑ][\u0080-\u00bf]"  # UTF-8 Cyrillic read as Latin-1
    "|\ufffd"
)
_CHEAP_FIXES = re.compile("[\ufb00-\ufb06\uff01-\uff5e\u3000]")

# full-width punctuation and symbols (not letters or digits) and the ideographic space: kept next to CJK text
_FW_PUNCT = "\u3000\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff60\uffe0-\uffe6"
_FW_PUNCT_RUN = re.compile(f"[{_FW_PUNCT}]+")
_FW_PUNCT_CHARS = re.compile(f"[{_FW_PUNCT}]")
_WIDTH_ALWAYS = {k: v for k, v in WIDTH_MAP.items() if not _FW_PUNCT_CHARS.fullmatch(chr(k))}  # letters, digits, half-width forms
# Han, kana, Hangul, bopomofo, CJK symbols and punctuation (、。「」), CJK compatibility and half-width kana/Hangul
_CJK = re.compile("[\u2e80-\u2fdf\u3001-\u303f\u3040-\u31ff\u3200-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff"
                  "\ufe30-\ufe4f\uff61-\uffdc\U00020000-\U0003ffff]")  # fmt: skip
_SKIP_AROUND = " \t\r\n\u00a0\"'\u2018\u2019\u201c\u201d"


def _punct_run(m: re.Match) -> str:
    """A run of full-width punctuation, kept when the text next to it is CJK, else folded as ftfy folds it."""
    s, i, j = m.string, m.start() - 1, m.end()
    while i >= 0 and i > m.start() - 16 and s[i] in _SKIP_AROUND:
        i -= 1
    while j < len(s) and j < m.end() + 16 and s[j] in _SKIP_AROUND:
        j += 1
    if (i >= 0 and _CJK.match(s[i])) or (j < len(s) and _CJK.match(s[j])):
        return m.group(0)
    return m.group(0).translate(WIDTH_MAP)


def fix_width(text: str) -> str:
    """ftfy's ``fix_character_width``, except that full-width punctuation next to CJK text keeps its width (module docstring)."""
    if _CJK.search(text):
        text = _FW_PUNCT_RUN.sub(_punct_run, text)
        return text.translate(_WIDTH_ALWAYS)
    return text.translate(WIDTH_MAP)


@stage("clean", section="clean", order=10)
@dataclass
class CleanStage(DocStage):
    """Repair Unicode (ftfy: mojibake, entities, control characters) and normalise whitespace.

    Documents that are empty after cleaning are rejected with reason `empty`.

    \b
    Example:
      curate clean --in out/pile --out out/clean
    """

    name: ClassVar[str] = "clean"
    normalization: str = param("NFC", "Unicode normalisation form applied after repair.", choices=("NFC", "NFKC", "none"))
    max_blank_lines: int = param(2, "Collapse longer runs of blank lines to this many.", min=0)
    min_chars: int = param(1, "Documents shorter than this after cleaning are rejected (empty).", min=1)

    def __post_init__(self) -> None:
        self._form = "" if self.normalization in ("none", "") else self.normalization

    def clean_text(self, text: str) -> tuple[str, bool]:
        """The cleaned text and whether ftfy changed it."""
        fixed = used_ftfy = False
        if not text.isascii():
            text = _SURROGATES.sub("\ufffd", text)
            if _MOJIBAKE.search(text):
                used_ftfy = True
                new = ftfy.fix_text(
                    text, normalization=self._form or None, unescape_html=False, uncurl_quotes=False, fix_character_width=False
                )
                folded = fix_width(new)
                if folded != new and self._form:  # fix_text normalised before the width fix
                    folded = unicodedata.normalize(self._form, folded)
                new = folded
            elif _CHEAP_FIXES.search(text):
                new = fix_width(ftfy.fixes.fix_latin_ligatures(text))
            else:
                new = text
            fixed = new != text
            text = new
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        text = _CTRL.sub("", text)
        text = _TRAILING_WS.sub("\n", text)
        text = _MANY_BLANK.sub("\n" * (self.max_blank_lines + 1), text)
        if self._form and not text.isascii() and not used_ftfy:  # fix_text normalised already
            text = unicodedata.normalize(self._form, text)
        return text.strip(), fixed

    def decide_batch(self, batch: Batch) -> Decisions:
        out: list[str] = []
        reasons: list[str | None] = []
        fixed = changed = 0
        for t in batch.texts:
            new, was_fixed = self.clean_text(t)
            fixed += was_fixed
            changed += new != t
            out.append(new)
            reasons.append(None if len(new) >= self.min_chars else "empty")
        return Decisions(reasons, out, counters=Counters(ftfy_fixed=fixed, changed=changed))
