"""The built-in HTML-to-text extractors ``resiliparse``, ``trafilatura`` and ``justext``, and the lookup by name.

Each is ``fn(html: str) -> str`` registered with :func:`curate.registry.extractor`: its
``help`` is its part of ``--extractor``'s help and its ``order`` its place among the choices.
``fast`` (the default) is in :mod:`curate.stages.extract.fast`. No pyarrow and no runtime
here: the helper process (:mod:`curate.stages.extract.sandbox`) imports this module.
"""

from __future__ import annotations

import functools
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


#: The options of resiliparse's published main-content figures (the web content extraction
#: benchmark of Bevendorff et al., SIGIR 2023: ``extract_resiliparse`` in chatnoir-eu's
#: web-content-extraction-benchmark), minus the comments, which ``--comments`` sets.
#: resiliparse's own defaults keep comment sections (``comments=True``) and list bullets.
RESILIPARSE_OPTIONS = {"preserve_formatting": True, "main_content": True, "list_bullets": False, "links": False,
                       "alt_texts": False, "form_fields": False, "noscript": False}  # fmt: skip


@extractor("resiliparse", help="resiliparse's main content; the fastest", order=10, comments=True)
def extract_resiliparse(html: str, comments: bool = False) -> str:
    """Main content with resiliparse, with the options of its published figures (:data:`RESILIPARSE_OPTIONS`)."""
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(html, comments=comments, **RESILIPARSE_OPTIONS)


@extractor("trafilatura", help="trafilatura's defaults", order=20, comments=True)
def extract_trafilatura(html: str, comments: bool = False) -> str:
    """Main content with trafilatura's defaults, as plain text (comments only with ``comments``)."""
    import trafilatura

    logging.getLogger("trafilatura").setLevel(logging.ERROR)
    return trafilatura.extract(xml_safe(html), include_comments=comments, include_tables=True, deduplicate=False) or ""


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


def extractor_function(name: str, comments: bool = False) -> Callable[[str], str]:
    """The extractor registered as ``name``: a built-in one, or one an installed package registers (entry point ``curate.extractors``).

    ``comments``: keep comment sections, for an extractor registered with ``comments=True``
    (see :func:`keeps_comments`); the others are returned as they are.
    """
    if name not in registry.extractors:
        raise CurateError(f"unknown extractor {name!r}; choose one of: {', '.join(registry.extractor_names())}")
    fn = registry.extractors.get(name).obj
    return functools.partial(fn, comments=True) if comments and keeps_comments(name) else fn


def keeps_comments(name: str) -> bool:
    """Whether the extractor ``name`` can keep comment sections (registered with ``comments=True``)."""
    return bool(registry.extractors.get(name).meta.get("comments"))
