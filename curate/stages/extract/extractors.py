"""The built-in HTML-to-text extractors ``resiliparse``, ``trafilatura`` and ``justext``, and the lookup by name.

Each is ``fn(html: str) -> str`` registered with :func:`curate.registry.extractor`: its
``help`` is its part of ``--extractor``'s help and its ``order`` its place among the choices.
``fast`` (the default) is in :mod:`curate.stages.extract.fast`. No pyarrow and no runtime
here: the helper process (:mod:`curate.stages.extract.sandbox`) imports this module.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from curate import registry
from curate.errors import CurateError
from curate.registry import extractor

#: Characters lxml refuses ("All strings must be XML compatible"): C0 controls, surrogates, U+FFFE/U+FFFF.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(html: str) -> str:
    """``html`` without the characters lxml-based extractors raise on (they carry no text anyway)."""
    return _XML_INVALID.sub("", html) if _XML_INVALID.search(html) else html


@extractor("resiliparse", help="resiliparse's main content; the fastest", order=10)
def extract_resiliparse(html: str) -> str:
    """Main content with resiliparse (no alt texts, no form fields)."""
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(html, main_content=True, alt_texts=False, form_fields=False, noscript=False)


@extractor("trafilatura", help="trafilatura's defaults, comments left out", order=20)
def extract_trafilatura(html: str) -> str:
    """Main content with trafilatura's defaults (no comments), as plain text."""
    import trafilatura

    logging.getLogger("trafilatura").setLevel(logging.ERROR)
    return trafilatura.extract(xml_safe(html), include_comments=False, include_tables=True, deduplicate=False) or ""


@extractor("justext", help="jusText with the English stoplist: MT-NLG's", order=30)
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


def extractor_function(name: str) -> Callable[[str], str]:
    """The extractor registered as ``name``: a built-in one, or one an installed package registers (entry point ``curate.extractors``)."""
    if name not in registry.extractors:
        raise CurateError(f"unknown extractor {name!r}; choose one of: {', '.join(registry.extractor_names())}")
    return registry.extractors.get(name).obj
