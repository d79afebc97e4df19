"""Unicode repair and text normalisation with ftfy (the ``clean`` stage).

ftfy fixes mojibake (``cafÃ©`` -> ``café``), HTML entities left in plain text, and
control characters. Pure-ASCII documents cannot hold mojibake and skip ftfy, which is
the bulk of English text and the main reason this stage is fast.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

import ftfy
import pyarrow as pa
import pyarrow.compute as pc

from curate.dataset import MapResult
from curate.schema import BASE_FIELDS, with_column

_TEXT_FIELD = BASE_FIELDS[1]
_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_TRAILING_WS = re.compile(r"[ \t]+\n")
_MANY_BLANK = re.compile(r"\n{4,}")
_SURROGATES = re.compile(r"[\ud800-\udfff]")


@dataclass
class CleanStage:
    """Repairs Unicode with ftfy and normalises line endings and blank lines."""

    normalization: str = "NFC"
    max_blank_lines: int = 2
    min_chars: int = 1
    name: str = field(default="clean", init=False)

    def params(self) -> dict[str, Any]:
        return {"normalization": self.normalization, "max_blank_lines": self.max_blank_lines, "min_chars": self.min_chars}

    def clean_text(self, text: str) -> tuple[str, bool]:
        """The cleaned text and whether ftfy changed it."""
        fixed = False
        if not text.isascii():
            text = _SURROGATES.sub("\ufffd", text)
            new = ftfy.fix_text(text, normalization=self.normalization or None, unescape_html=False)
            fixed = new != text
            text = new
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        text = _CTRL.sub("", text)
        text = _TRAILING_WS.sub("\n", text)
        text = _MANY_BLANK.sub("\n" * (self.max_blank_lines + 1), text)
        if self.normalization and not text.isascii() and not fixed:
            text = unicodedata.normalize(self.normalization, text)
        return text.strip(), fixed

    def __call__(self, table: pa.Table) -> MapResult:
        texts = table.column("text").to_pylist()
        out: list[str] = []
        keep: list[bool] = []
        fixed = changed = 0
        for t in texts:
            new, was_fixed = self.clean_text(t or "")
            fixed += was_fixed
            changed += new != t
            out.append(new)
            keep.append(len(new) >= self.min_chars)
        cleaned = with_column(table, _TEXT_FIELD, pa.array(out, type=pa.large_string()))
        mask = pa.array(keep)
        kept = cleaned.filter(mask)
        rejected = cleaned.filter(pc.invert(mask))
        rejected = rejected.append_column("reason", pa.array(["empty"] * rejected.num_rows, pa.string()))
        return MapResult(kept, rejected, {"ftfy_fixed": fixed, "changed": changed})
