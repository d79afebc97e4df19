"""``--extractor headline``: a page's <title> and <h1> headings only (an extractor is one function)."""

from __future__ import annotations

import html as htmllib
import re

from curate.registry import extractor

_HEADINGS = re.compile(r"<(title|h1)\b[^>]*>(.*?)</\1\s*>", re.I | re.S)
_TAGS = re.compile(r"<[^>]+>")


@extractor("headline", help="the page's <title> and <h1> headings (an example plugin)", order=90)
def headline(page: str) -> str:
    parts = [" ".join(htmllib.unescape(_TAGS.sub(" ", m.group(2))).split()) for m in _HEADINGS.finditer(page)]
    return "\n".join(p for p in dict.fromkeys(parts) if p)
