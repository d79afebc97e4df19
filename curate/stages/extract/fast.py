"""The ``fast`` extractor (the default): resiliparse's main content, a line-level boilerplate pass, a densest-block fallback.

Self-contained: the furniture rules, the pass (:func:`boilerplate_pass`) and the extractor
(:func:`extract_fast`, issue 17) and the fallback (:func:`densest_text`) are all here, on
resiliparse alone. How it compares: docs/benchmarks/extract_quality.md.
"""

from __future__ import annotations

import re

from curate.registry import extractor

#: Whole lines that are page furniture, never article text: matched case-insensitively against
#: the whole line (its end punctuation trimmed). Each is a short fixed phrase, so a sentence of
#: article text cannot match.
_FURNITURE = re.compile(
    r"(?:advertisements?|advertising|ads?|sponsored(?: content| links?| stories)?|paid (?:content|post)|promoted(?: content| stories)?"
    r"|(?:story )?continues? below(?: this)? (?:ad|advertisement)|continue reading(?: the)?(?: main)? story"
    r"|(?:advertisement\W+)?scroll to continue(?: with content| reading)?"
    r"|skip to (?:main )?(?:content|navigation)|jump to (?:content|navigation|recipe)|back to top|go to top|top of page"
    r"|menu|main menu|search|search for|toggle navigation|close|more|home|subscribe|sign in|sign up|log ?in|log ?out|register"
    r"|reply|like|follow|load more(?: comments)?|show more(?: comments)?|view (?:all )?comments|next|previous|print|email|e-mail"
    r"|(?:\d+|no|one) (?:comments?|responses?|replies)(?: to .{1,200})?|comments?(?: \(\d+\))?|responses?(?: \(\d+\))?"
    r"|leave a (?:reply|comment)|post a comment|add (?:a |new )?comment|write a comment|join the (?:discussion|conversation)"
    r"|reader comments|add your comment|what are your thoughts|cancel reply|your email address will not be published.{0,80}"
    r"|subscribe to: post comments \(atom\)|newer post|older post|newer post older post home|post comments \(atom\)"
    r"|(?:read|click) more|read (?:the )?(?:full|whole|original) (?:story|article|report)|continue reading|click here .{1,80}"
    r"|(?:photo(?:graph)?|image|picture|illustration|video|credit|photo credit|foto)s?(?: by)? ?: .{1,100}|getty images|ap photo.{0,80}"
    r"|(?:image|photo|slide) \d+ (?:of|/) \d+|\d+ (?:of|/) \d+ (?:photos|images)|listen to (?:this|the) (?:article|story)|listen|loading\W*"
    r"|\d+ (?:seconds?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?) ago|follow us on .{1,60}|please enable javascript.{0,80}"
    r"|subscribe (?:now )?to (?:continue|keep) reading.{0,80}|this (?:article|story|content) is (?:for|only available to) (?:subscribers|members).{0,80}"
    r"|printer-friendly version.{0,40}|e-mail this (?:story|article)|(?:was )?this (?:page|article) (?:was )?helpful|edit (?:this|on) (?:page|github)"
    r"|\d+ min(?:ute)?s? read|\d+(?:\.\d+)?[km]? (?:followers|claps|likes|shares|views)"
    r"|.{0,80}all rights reserved.{0,80}|(?:copyright )?© ?.{0,100}|copyright \d{4}.{0,80}|(?:proudly )?powered by \w+.{0,60}"
    r"|(?:tags?|labels?|categories|category|topics?|filed under|posted in|tagged(?: with)?) ?: ?.{1,150}|(?:filed under|posted in|tagged(?: with)?) \S.{0,60}"
    r")",
    re.I,
)
#: A byline: "By Jane Doe", "Posted by Jane Doe at 10:32 AM", "Written by J. Doe | June 5".
_BYLINE = re.compile(
    r"(?:(?i:by|written by|posted by|words by|story by|reporting by|submitted by|posted on|published(?: on)?|updated(?: on)?|last updated(?: on)?)\s+)+"
    r"(?:[A-Z0-9][\w.,:'’-]*)(?:\s+(?:[A-Z0-9][\w.,:'’-]*|(?i:and|at|on|in|de|van|von|der|[ap]m|min|mins|minutes?|read|ago|hours?)|[|·•,-]))*\.?"
)
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
#: A date alone on a line (``June 5, 2019``, ``5 June 2019``, ``2019-06-05``), with a time or a day name.
_DATE_LINE = re.compile(
    rf"(?:(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*,? )?(?:{_MONTH} \d{{1,2}},? \d{{4}}|\d{{1,2}} {_MONTH},? \d{{4}}|\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}/\d{{1,2}}/\d{{2,4}})"
    r"(?:,? (?:at )?\d{1,2}[:.]\d{2}(?: ?[ap]\.?m\.?)?(?: [A-Z]{2,4})?)?",
    re.I,
)
_SOCIAL_STRONG = frozenset(
    "share shares sharing tweet facebook twitter linkedin whatsapp reddit pinterest telegram messenger flipboard tumblr mastodon bluesky blogthis".split()
)
_SOCIAL = _SOCIAL_STRONG | frozenset("this article story post page on via to x email e mail print copy link pin it save".split())
#: A cookie notice speaks to the reader about the site's cookies ("we use cookies", "you agree to
#: the storing of cookies", "cookie settings"); a sentence about cookies does not.
_COOKIE = re.compile(
    r"\b(?:we|our partners|this (?:web)?site|the site)\b[^.]{0,80}\b(?:use|uses|using|store|set|place)\b[^.]{0,60}\bcookies\b"
    r"|\b(?:accept|consent to|agree to|allow)\b[^.]{0,60}\bcookies\b|\bcookie (?:settings|policy|preferences|consent|notice)\b",
    re.I,
)
_NEWSLETTER = re.compile(r"\b(?:newsletter|inbox|subscribe|sign up)\b.*\b(?:email|inbox|newsletter|subscribe|unsubscribe)\b", re.I)
#: Headings after which a page has no more article text (comment threads, teaser blocks):
#: from the second half of the text on, the rest is dropped (comment headings: unless comments are kept).
_COMMENT_HEAD = re.compile(
    r"(?:(?:\d+|no|one) (?:comments?|responses?|replies)(?: to .{1,200})?|comments?(?: \(\d+\))?|responses?(?: \(\d+\))?"
    r"|leave a (?:reply|comment)|post a comment|add (?:a |new )?comment|reader comments|join the (?:discussion|conversation))",
    re.I,
)
_END_HEAD = re.compile(
    r"(?:related (?:posts|stories|articles|content)|you (?:may|might) (?:also )?(?:like|enjoy|be interested in)"
    r"|more (?:from|stories from|stories like this|articles from|posts from)\b.{1,60}|recommended (?:for you|from .{1,60}|stories|articles)"
    r"|read next|what to read next|most (?:read|popular|viewed|shared|commented)|trending (?:now|stories)|editor'?s picks)",
    re.I,
)
#: Headings of a block of teasers or page furniture: the short lines after one are dropped.
_TEASER_HEAD = re.compile(
    r"(?:related(?: links| news| reading| coverage)?|more (?:stories|news|articles|posts|on this|like this)|recommended(?: reading)?|read more"
    r"|up next|popular(?: posts| stories| now| this week| articles)?|trending|latest(?: news| posts| stories| articles| headlines)?"
    r"|other (?:headlines|stories|news)|top stories|written by .{1,60}|about the author|media contacts?|press contacts?|downloads"
    r"|share(?: this)?(?: article| story| post| page)?|discussion)",
    re.I,
)
_TAG = re.compile(r"<[^>]*>")
#: A link's text: an ``<a>`` with a target, up to its ``</a>`` and never past another ``<a``
#: (resiliparse leaves an empty anchor, ``<a href="">``, unclosed: an index term's anchor made a
#: whole paragraph link text).
_LINK = re.compile(r'<a\b(?![^>]*href="")[^>]*>((?:[^<]|<(?!/?a\b))*)</a>')
_PRE = re.compile(r"<pre>(.*?)</pre>", re.S)
_OPEN = re.compile(r"<(h[1-6]|p|li)\b")
_CLOSE = re.compile(r"</(?:h[1-6]|p|li)>")
_KINDS = {"p": "p", "li": "li"}  # any other opening tag of _OPEN is a heading
_WORD = re.compile(r"\w+")
_TRIM = " \t.:;!?|·•-–—>»›*#"


def _fast_lines(marked: str) -> list[tuple[str, str, float, str]]:
    """Resiliparse's ``minimal_html`` output as (kind, text, link share, separator before it)
    per line. kind: ``pre`` (preformatted), ``h`` (heading), ``p`` (paragraph), ``li`` (list
    item, given a bullet) or ``loose`` (any other text, e.g. of a ``div``)."""
    from html import unescape

    pres: list[str] = []

    def stash(m: re.Match) -> str:
        pres.append(m.group(1))
        return f"\n\x00{len(pres) - 1}\x00\n"

    out: list[tuple[str, str, float, str]] = []
    open_kind = None
    for line in _PRE.sub(stash, marked).split("\n"):
        s = line.strip()
        if not s:
            continue
        if s[0] == "\x00" and s[-1] == "\x00" and s[1:-1].isdigit():
            out.append(("pre", unescape(_TAG.sub("", pres[int(s[1:-1])])), 0.0, "\n\n"))
            open_kind = None
            continue
        cont = open_kind is not None
        kind = open_kind
        opens = list(_OPEN.finditer(s)) if "<" in s else []
        if opens and (not cont or opens[0].start() == 0):
            kind, cont = _KINDS.get(opens[0].group(1), "h"), False
        # Open past this line: an element whose opening tag comes after the line's last closing
        # tag. Not "the line ends in a closing tag": ``<h2>Title</h2><br>`` (old table layouts,
        # text in <br>-separated runs) kept the heading open over the whole article (issue 26).
        closes = [c.start() for c in _CLOSE.finditer(s)] if "</" in s else []
        if closes:
            last = opens[-1] if opens and opens[-1].start() > closes[-1] else None
            open_kind = _KINDS.get(last.group(1), "h") if last else None
        else:
            open_kind = kind
        text = unescape(_TAG.sub("", s) if "<" in s else s).strip()
        if not text:
            continue
        linked = sum(len(_TAG.sub("", x)) for x in _LINK.findall(s)) / len(text) if "<a" in s else 0.0
        kind = kind or "loose"
        if kind == "li" and not cont:
            text = "• " + text  # also in an <ol>: a number would be a token the page does not show as text
        prev = out[-1][0] if out else None
        sep = "\n" if cont or (kind == prev and kind in ("li", "loose")) else "\n\n"
        out.append((kind, text, linked, sep))
    return out


def _is_furniture(text: str) -> bool:
    """Whether a line is page furniture: a fixed phrase (``_FURNITURE``), a byline, a date, a
    row of share buttons, a cookie notice or a newsletter box."""
    t = text.strip(_TRIM)
    n = len(t)
    if not n:
        return True
    if n <= 300 and _FURNITURE.fullmatch(t):
        return True
    if n <= 100 and (_BYLINE.fullmatch(t) or _DATE_LINE.fullmatch(t)):
        return True
    low = t.lower()
    if n <= 120:
        words = _WORD.findall(low)
        if len(words) <= 14 and all(w in _SOCIAL for w in words) and any(w in _SOCIAL_STRONG for w in words):
            return True
    if n <= 500 and "cookie" in low and _COOKIE.search(t):
        return True
    return n <= 280 and ("newsletter" in low or "inbox" in low or "subscribe" in low or "sign up" in low) and bool(_NEWSLETTER.search(t))


def boilerplate_pass(lines: list[tuple[str, str, float, str]], comments: bool = False) -> str:
    """The article text of ``_fast_lines`` output. Dropped: lines of furniture (see
    ``_is_furniture``); lines that are mostly link text (but for list items and headings within
    the article's running text); short loose lines before the first
    heading or line of running text and after the last one (site names, kickers, dates,
    utility links); the short lines after a teaser heading ("Related", "Popular", ...); and
    everything after a comment or teaser heading that comes in the second half of the text;
    headings left with nothing after them. ``comments``: a comment heading does not end the article."""
    words = [len(t.split()) for _, t, *_ in lines]  # (once: the rules below read it up to four times a line)
    long = [i for i, (k, _, lk, _) in enumerate(lines) if k != "h" and lk < 0.3 and words[i] >= 10]
    first, last = (next(i for i, (k, *_) in enumerate(lines) if k == "h" or i == long[0]), long[-1]) if long else (0, -1)
    # a list item or heading between the article's first and last lines of running text is part of
    # it, links or not (a list of films, of fixed bugs; a section title that links to its page);
    # elsewhere a line that is mostly link text is a menu
    linked_ok = [first < i < last and x[0] in ("li", "h") for i, x in enumerate(lines)]
    if long:
        keep = [first <= i <= last or x[0] != "loose" or words[i] > 8 for i, x in enumerate(lines)]
        lines = [x for x, k in zip(lines, keep) if k]
        linked_ok = [x for x, k in zip(linked_ok, keep) if k]
        words = [x for x, k in zip(words, keep) if k]
    total = sum(n for (k, *_), n in zip(lines, words) if k != "pre") or 1
    kept: list[tuple[str, str, str]] = []  # (separator, text, kind)
    seen = 0
    skipping = False
    for (kind, text, linked, sep), link_list, n in zip(lines, linked_ok, words):
        if kind == "pre":
            if not skipping:
                kept.append((sep, text, kind))
            continue
        seen += n
        if (kind == "h" or (n <= 12 and kind == "loose")) and linked < 0.6:
            head = text.strip(_TRIM)
            if comments and _COMMENT_HEAD.fullmatch(head):
                skipping = False  # the comments, kept: what comes after their heading
                continue
            if _END_HEAD.fullmatch(head) or (not comments and _COMMENT_HEAD.fullmatch(head)):
                if seen > 0.5 * total and not comments:
                    break  # the article is over: comments and teasers from here on
                skipping = True
                continue
            if _TEASER_HEAD.fullmatch(head):
                skipping = True
                continue
        if skipping:
            if (n >= 45 or kind == "h") and linked < 0.3:
                skipping = False
            else:
                continue
        if (linked >= 0.6 and not link_list) or _is_furniture(text):
            continue
        kept.append((sep, text, kind))
    if any(kind != "h" for *_, kind in kept):
        while kept[-1][2] == "h":
            kept.pop()  # a heading whose section was all furniture ("Stay informed", "Follow us")
    return kept[0][1] + "".join(sep + text for sep, text, _ in kept[1:]) if kept else ""


#: A result shorter than this sends the page to the fallback (resiliparse's main-content mode
#: finds nothing on about 1% of real pages that have an article)...
_FAST_MIN_CHARS = 250
#: ... and so does one with less than this share of the text of the page's <p> elements
#: (resiliparse dropped the article, e.g. for a class name it takes for furniture).
#: (0.3 before issue 26: on the readability pages' tune half the two pages between 0.2 and 0.3,
#: Wikipedia's and the New York Times' with long reference and caption paragraphs, sent to
#: trafilatura for nothing, its text never 1.5 times longer; a dropped article has ~0.)
_FAST_MIN_P_SHARE = 0.2
_P_OPEN = re.compile(r"<p\b[^>]*>", re.I)
_P_CLOSE = re.compile(r"</p\s*>", re.I)


def _p_chars(html: str) -> int:
    """Characters of text in the page's closed ``<p>`` elements (linear: no regex that could
    scan to the end of the page once per unclosed ``<p>``)."""
    total = 0
    for chunk in _P_OPEN.split(html)[1:]:
        end = _P_CLOSE.search(chunk)
        if end:
            total += len(_TAG.sub("", chunk[: end.start()]))
    return total


#: Elements whose class names them as page furniture in the usual CMS vocabularies. Only
#: block containers are tested (never ``body``, ``main`` or ``article``, whose classes name the
#: page type); a type selector keeps lexbor's matching cheap (``:is()``/``:not()`` cost 4x).
_SKIP_CSS = [
    f'{tag}[class*="{word}"]'
    for word in (
        "related",
        "recommend",
        "popular",
        "trending",
        "share",
        "social",
        "newsletter",
        "cookie",
        "consent",
        "advert",
        "sponsor",
        "promo",
        "author-bio",
        "about-author",
        "author-box",
    )
    for tag in ("div", "section", "aside", "ul")
]


#: What a stylesheet rule hides: ``display: none`` or ``visibility: hidden`` in its declarations.
_HIDES = re.compile(r"(?:^|[;{\s])(?:display\s*:\s*none|visibility\s*:\s*hidden)\s*(?:!\s*important\s*)?(?:;|$)", re.I)
#: How a stylesheet that hides something spells it (other spacings are not looked for).
_HIDES_WRITTEN = ("display:none", "display: none", "visibility:hidden", "visibility: hidden")
#: A selector curate follows: one class or id, with or without a tag name (``.premiumoff``, ``div#paywall``).
_SIMPLE_SELECTOR = re.compile(r"(?:[a-zA-Z][a-zA-Z0-9]*)?[.#]-?[_a-zA-Z][\w-]*")
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_BRACE = re.compile(r"[{}]")
#: At most this many selectors are followed per page (each costs a walk of the DOM), and this many elements removed.
_MAX_HIDDEN_SELECTORS, _MAX_HIDDEN_ELEMENTS = 40, 200


def hidden_selectors(css: str) -> list[str]:
    """The simple selectors (one class or id) of the top-level rules of ``css`` that hide what they match.

    Rules inside ``@media``, ``@supports`` and other at-rules are not followed (a box hidden on a
    phone or in print is shown on a screen); nor are descendant or state selectors (``.js .x``,
    ``.menu:hover``), which hide something only in some state of the page.
    """
    css = _CSS_COMMENT.sub("", css)
    out: list[str] = []
    depth, start, head, body = 0, 0, "", 0
    for m in _BRACE.finditer(css):
        if m.group() == "{":
            if depth == 0:
                head, body = css[start : m.start()], m.end()
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0:
                if not head.lstrip().startswith("@") and _HIDES.search(css[body : m.start()]):
                    out.extend(x for x in (sel.strip() for sel in head.split(",")) if _SIMPLE_SELECTOR.fullmatch(x))
                start = m.end()
    return list(dict.fromkeys(out))[:_MAX_HIDDEN_SELECTORS]


def remove_hidden(tree) -> bool:  # noqa: ANN001 - a resiliparse HTMLTree
    """Remove from ``tree`` the elements its own ``<style>`` sheets hide by class or id (e.g. a
    paywall teaser, ``.premiumoff { display: none }``): resiliparse sees ``hidden`` attributes,
    ``aria-hidden`` and inline ``display: none``, but not a stylesheet. An element holding half of
    the page's text or more is kept (a page whose script shows its hidden article). Whether any
    element was removed."""
    doc = tree.document
    if doc is None or tree.body is None:
        return False
    css = "\n".join(el.text for el in doc.query_selector_all("style"))
    low = css.lower()  # (substring tests: a regex over every page's stylesheets cost more than the rest of this)
    sels = hidden_selectors(css) if any(x in low for x in _HIDES_WRITTEN) else []
    if not sels:
        return False
    try:
        found = [el for el in tree.body.query_selector_all(", ".join(sels)) if el.tag not in ("body", "html", "main")][
            :_MAX_HIDDEN_ELEMENTS
        ]
    except Exception:  # noqa: BLE001 - a selector lexbor does not parse: nothing removed
        return False
    if not found:
        return False
    half = 0.5 * len(tree.body.text)
    gone: list = []
    for el in found:  # in document order: an element inside one already removed is gone with it
        if len(el.text) < half and not any(g.contains(el) for g in gone):
            gone.append(el)
    for el in gone:
        el.decompose()
    return bool(gone)


#: Paragraph-like elements whose text scores their parent (and half of it their grandparent), as Readability
#: scores; a ``div`` scores itself with its own text (as Readability turns a div of inline content into a p).
_SCORED = ("p, pre, td", "div")
#: Shorter ones do not count (captions, labels, cells of a layout table).
_SCORED_MIN_CHARS = 25
#: Siblings of the best element that score at least this share of it join it (an article in several boxes).
_SIBLING_SHARE = 0.2


def _passed(tree, comments: bool, main_content: bool, skip: list[str] | None = None) -> str:  # noqa: ANN001 - a resiliparse HTMLTree
    """``tree``'s text as resiliparse gives it in ``minimal_html`` form (main content or all of it), through :func:`boilerplate_pass`."""
    from resiliparse.extract.html2text import extract_plain_text

    marked = extract_plain_text(
        tree, main_content=main_content, comments=comments, alt_texts=False, form_fields=False, noscript=False,
        preserve_formatting="minimal_html", links=True, skip_elements=skip,
    )  # fmt: skip
    return boilerplate_pass(_fast_lines(marked), comments)


def densest_text(tree, comments: bool = False) -> str:  # noqa: ANN001 - a resiliparse HTMLTree
    """The text of the page's densest block, for when resiliparse's main-content mode missed the article.

    Every ``<p>``, ``<pre>`` and ``<td>`` of 25 characters or more adds its length to its parent
    and half of it to its grandparent, and a ``<div>``'s own text (not its children's) to itself
    and its parent; the best-scoring element, with those of its siblings that
    score a fifth of it or more, is extracted without main-content detection and put through
    :func:`boilerplate_pass`. Readability's idea, in resiliparse's DOM: on the pages where ``fast``
    falls back it matches trafilatura's token F1 (docs/benchmarks/extract_quality.md) at a fraction
    of its cost, and needs no second parser."""
    from resiliparse.parse.html import HTMLTree, NodeType

    body = tree.body
    if body is None:
        return ""
    score: dict = {}
    for selector in _SCORED:  # the divs (a walk of every div's children) only when the paragraphs found too little
        for el in body.query_selector_all(selector):
            if el.tag == "div":  # its own text (runs between <br>s): the div holds it as a parent holds a <p>
                n = sum(len(c.text.strip()) for c in el.child_nodes if c.type == NodeType.TEXT)
                holder = el
            else:
                n = len(el.text.strip())
                holder = el.parent
            if n >= _SCORED_MIN_CHARS and holder is not None:
                score[holder] = score.get(holder, 0) + n
                if holder.parent is not None:
                    score[holder.parent] = score.get(holder.parent, 0) + n / 2
        if score and max(score.values()) >= _FAST_MIN_CHARS:
            break
    if not score:
        return ""
    best = max(score, key=score.__getitem__)
    parts = [best]
    if best.parent is not None:
        parts = [c for c in best.parent.children if c == best or score.get(c, 0) >= _SIBLING_SHARE * score[best]]
    return _passed(HTMLTree.parse("<html><body>" + "".join(c.html for c in parts) + "</body></html>"), comments, main_content=False)


@extractor("fast", help="resiliparse with a boilerplate pass and a densest-block fallback; the best main-content F1 here", order=40,
           comments=True)  # fmt: skip
def extract_fast(html: str, comments: bool = False) -> str:
    """Main content, slower than resiliparse alone and faster than trafilatura (the ``fast`` extractor, issue 17).

    1. resiliparse's main-content mode without comment sections (unless ``comments``), without
       the elements the page's stylesheets hide (``remove_hidden``) and without elements whose
       class names them furniture (``_SKIP_CSS``), in its ``minimal_html`` form, which shows
       paragraphs, headings, list items and link text;
    2. a line-level boilerplate pass (``boilerplate_pass``): ads, share bars, cookie and
       newsletter boxes, bylines, dates, link lists, teaser and comment sections;
    3. a result under 250 characters is extracted again without (1)'s class list; if still that
       short, and the whole page through (2) (resiliparse without main-content detection) holds
       250 characters or more, by the page's densest block (:func:`densest_text`), whichever
       gives more text;
    4. a result with less than 20% of the text of the page's ``<p>`` elements is replaced by
       the densest block's when that is over 1.5 times as long (resiliparse missed the article).
    Until issue 26 the fallback was trafilatura: ~20x the cost of the rest, a second parser and
    ~1.3 s of imports per process, for no better text on the pages that need it.
    A page of headings only keeps them (the pass drops trailing headings only after other text).
    """
    from resiliparse.parse.html import HTMLTree

    tree = HTMLTree.parse(html)
    if remove_hidden(tree):
        html = tree.document.html  # what the <p> share sees: the page without its hidden boxes
    text = ""
    for skip in (_SKIP_CSS, None):
        text = _passed(tree, comments, main_content=True, skip=skip)
        if len(text) >= _FAST_MIN_CHARS:
            break
    else:
        # Too short. The densest block only where the whole page, minus its furniture, holds
        # more text than that: on a page of menus, a login box or keyword spam there is no
        # article to find (issue 26: 2 of 3 fallbacks on CommonCrawl-like pages).
        if len(_passed(tree, comments, main_content=False)) < _FAST_MIN_CHARS:
            return text
        other = densest_text(tree, comments)
        return other if len(other) > len(text) else text
    # (the first test is a cheap bound: the <p> text cannot be longer than the page)
    if len(text) < _FAST_MIN_P_SHARE * len(html) and len(text) < _FAST_MIN_P_SHARE * _p_chars(html):
        other = densest_text(tree, comments)
        if len(other) > 1.5 * len(text):
            return other
    return text
