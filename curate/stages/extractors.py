"""The three HTML-to-text extractors, and the helper-process loop that runs one of them.

Kept apart from ``extract.py`` (no pyarrow, no curate.dataset) so that the helper process
``python -m curate.stages.extractors --serve NAME`` starts quickly.
"""

from __future__ import annotations

import logging
import os
import re
import struct
import sys

from curate.errors import CurateError

EXTRACTORS = ("resiliparse", "trafilatura", "justext")
#: Characters lxml refuses ("All strings must be XML compatible"): C0 controls, surrogates, U+FFFE/U+FFFF.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(html: str) -> str:
    """``html`` without the characters lxml-based extractors raise on (they carry no text anyway)."""
    return _XML_INVALID.sub("", html) if _XML_INVALID.search(html) else html


def extract_resiliparse(html: str) -> str:
    """Main content with resiliparse (no alt texts, no form fields)."""
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(html, main_content=True, alt_texts=False, form_fields=False, noscript=False)


def extract_trafilatura(html: str) -> str:
    """Main content with trafilatura's defaults (no comments), as plain text."""
    import trafilatura

    logging.getLogger("trafilatura").setLevel(logging.ERROR)
    return trafilatura.extract(xml_safe(html), include_comments=False, include_tables=True, deduplicate=False) or ""


def extract_justext(html: str) -> str:
    """Non-boilerplate paragraphs with jusText's English stoplist (as in the MT-NLG recipe)."""
    import justext

    html = xml_safe(html)
    if not html.strip():
        return ""  # lxml raises "Document is empty" on it
    paragraphs = justext.justext(html, _justext_stoplist())
    return "\n\n".join(p.text for p in paragraphs if not p.is_boilerplate)


_STOPLIST: frozenset[str] | None = None


def _justext_stoplist() -> frozenset[str]:
    global _STOPLIST
    if _STOPLIST is None:
        import justext

        _STOPLIST = justext.get_stoplist("English")
    return _STOPLIST


def extractor_function(name: str):
    """The extraction function called ``name``."""
    try:
        return {"resiliparse": extract_resiliparse, "trafilatura": extract_trafilatura, "justext": extract_justext}[name]
    except KeyError:
        raise CurateError(f"unknown extractor {name!r}; choose one of: {', '.join(EXTRACTORS)}") from None


def serve(extractor: str) -> int:
    """The helper's loop (``python -m curate.stages.extract --serve NAME``)."""
    fn = extractor_function(extractor)
    inp = os.fdopen(os.dup(0), "rb", buffering=0)
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # stray prints of a library go to stderr, never into the protocol
    while True:
        head = inp.read(8)
        if len(head) < 8:
            return 0
        (n,) = struct.unpack("<Q", head)
        data = b""
        while len(data) < n:
            more = inp.read(n - len(data))
            if not more:
                return 0
            data += more
        try:
            result, status = fn(data.decode("utf-8", "surrogatepass")).encode("utf-8", "surrogatepass"), b"0"
        except Exception as exc:  # noqa: BLE001 - reported to the parent, counted there
            result, status = f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")[:2000], b"1"
        out.write(status + struct.pack("<Q", len(result)) + result)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        sys.exit(serve(sys.argv[2]))
    sys.exit("usage: python -m curate.stages.extractors --serve EXTRACTOR")
