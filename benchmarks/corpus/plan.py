"""The corpus plan: which page ``n`` is (kind, language, topic, site), the sites, and the file layout."""

from __future__ import annotations

import functools
import json
import math
import random
import re
from datetime import UTC, date, datetime, timedelta

from .content import ContentMixin
from .pages import PageMixin
from .responses import ResponseMixin
from .textmodel import Chain
from .util import pick, slugify, zipf_index
from .vocab import (
    CHAR_LANGS,
    DECLARE,
    EN_SECTIONS,
    EN_TOPICS,
    FAMILIES,
    FIRST,
    HANDLE_WORDS,
    KINDS,
    LABELS,
    LANGS,
    LAST,
    ORIGINAL_KINDS,
    OTHER_TOPICS,
    SITE_NOUNS,
    SITE_WORDS,
    SPAM_WORDS,
    UI,
    UI_KEYS,
)


class Corpus(ContentMixin, PageMixin, ResponseMixin):
    """Everything about page ``n`` is a pure function of (seed, n, bank)."""

    def __init__(self, bank: dict, seed: int, pages: int, pages_per_file: int, snapshot: str) -> None:
        self.bank = bank
        self.chains: dict[str, Chain] = bank["chains"]
        self.code: list[str] = bank["code"]
        self.seed = seed
        self.pages = pages
        self.ppf = pages_per_file
        self.snapshot = snapshot
        year, week = map(int, snapshot.split("-")[2:4])
        self.crawl_start = datetime.combine(date.fromisocalendar(year, week, 1), datetime.min.time(), tzinfo=UTC) + timedelta(
            hours=14, minutes=19, seconds=23
        )
        self.segment_ts = int(self.crawl_start.timestamp() * 1000) + 411
        # languages with text in the bank, and their shares
        langs = {c.split("|")[0] for c in self.chains}
        named = {k: v[0] for k, v in LANGS.items() if k != "other" and k in langs}
        self.other_langs = sorted(lang for lang in langs if lang not in LANGS)
        weights = dict(named)
        if self.other_langs:
            weights["other"] = LANGS["other"][0]
        self.lang_weights = weights
        if "en" not in named:
            raise SystemExit("chain_corpus: no English text in the sources")
        self.topics = {}
        for lang in sorted(langs):
            self.topics[lang] = sorted(c.split("|")[1] for c in self.chains if c.startswith(lang + "|"))
        self.kind_cum = []
        acc = 0.0
        for k, w in KINDS.items():
            acc += w
            self.kind_cum.append((acc, k))

    # ---- page level
    def rng(self, *parts) -> random.Random:
        return random.Random("/".join(map(str, (self.seed, *parts))))

    def base_kind(self, n: int) -> str:
        r = self.rng("kind", n).random() * self.kind_cum[-1][0]
        for acc, k in self.kind_cum:
            if r < acc:
                return k
        return self.kind_cum[-1][1]

    def chain(self, lang: str, topic: str) -> Chain:
        return self.chains.get(f"{lang}|{topic}") or self.chains[f"{lang}|{self.topics[lang][0]}"]

    def plan(self, n: int) -> dict:
        """Kind, language, site and (for copies) the original of page ``n``."""
        rng = self.rng("page", n)
        kind = self.base_kind(n)
        p: dict = {"n": n, "kind": kind}
        if kind in ("near_dup", "exact_dup"):
            orig = None
            dup = "near" if kind == "near_dup" else "exact_html" if rng.random() < 0.5 else "exact_text"
            kinds = ORIGINAL_KINDS if dup == "exact_html" else ("article", "docs")  # re-hosted text: articles and docs
            popular = rng.random() < 0.05  # syndicated: the first original of a block of 1,000 pages
            for _ in range(40):
                j = int(n * rng.random())
                if popular:
                    j = next((b for b in range(j - j % 1000, min(n, j - j % 1000 + 50)) if self.base_kind(b) in kinds), j)
                if j < n and self.base_kind(j) in kinds:
                    orig = j
                    break
            if orig is None:
                kind = p["kind"] = "article"
            else:
                op = self.plan(orig)
                p.update(of=orig, lang=op["lang"], topic=op["topic"], dup=dup)
                if dup == "exact_html":
                    p.update(site=op["site"], family=op["family"])
                    return p
                family = (
                    op["family"]
                    if op["family"] in ("forum", "shop", "docs", "qa") and rng.random() < 0.5
                    else pick(rng, FAMILIES["article"])
                )
                p.update(family=family, site=(op["lang"], family, zipf_index(rng)))
                return p
        if kind in ("spam", "docs", "qa"):
            lang = "en" if rng.random() < 0.92 else pick(rng, self.lang_weights)
        elif kind in ("redirect", "non_html"):
            lang = pick(rng, self.lang_weights)
        else:
            lang = pick(rng, self.lang_weights)
        if lang == "other":
            lang = self.other_langs[rng.randrange(len(self.other_langs))]
        family = pick(rng, FAMILIES.get(kind, FAMILIES["article"]))
        site = (lang, family, zipf_index(rng))
        p.update(lang=lang, family=family, site=site, topic=self.site(site)["topic"])
        return p

    # ---- sites
    @functools.lru_cache(maxsize=4096)  # noqa: B019 - one Corpus per process
    def site(self, key: tuple) -> dict:
        lang, family, k = key
        rng = self.rng("site", lang, family, k)
        entry = LANGS.get(lang, LANGS["other"])
        topic = pick(rng, EN_TOPICS.get(family, EN_TOPICS["news"])) if lang == "en" else pick(rng, OTHER_TOPICS)
        if topic not in self.topics[lang]:
            topic = self.topics[lang][rng.randrange(len(self.topics[lang]))]
        codec = pick(rng, dict(entry[1]))
        declare = pick(rng, DECLARE)
        if codec != "utf-8" and declare == "none" and rng.random() < 0.5:
            declare = "meta"
        lie = None
        r = rng.random()
        if r < 0.01 and codec == "utf-8":
            lie = "latin-1"  # UTF-8 bytes declared ISO-8859-1: mojibake
        elif r < 0.015 and codec == "utf-8" and lang in ("en", "de", "fr", "es", "it", "pt", "nl", "sv", "no", "da"):
            codec, lie = "cp1252", "utf-8"  # windows-1252 bytes declared UTF-8
        words = SITE_WORDS + [w for w in self.chain(lang, topic).words(rng, 6) if w.isalpha() and w.isascii() and 3 <= len(w) <= 9]
        noun = rng.choice(SITE_NOUNS[family])
        first = rng.choice(words).lower()
        name_core = f"{first}{'-' if rng.random() < 0.3 else ''}{noun}{rng.randint(1, 99) if rng.random() < 0.15 else ''}"
        tld = rng.choice(entry[2])
        if family == "spam":
            name_core = f"{rng.choice(SPAM_WORDS)}-{rng.choice(SPAM_WORDS)}-{noun}{rng.randint(1, 999)}"
            tld = rng.choice(["com", "net", "info", "biz", "xyz", "top", "online"])
        host = f"{'www.' if rng.random() < 0.6 else ''}{name_core}{k if k > 40 else ''}.{tld}"
        title = " ".join(w.capitalize() for w in re.split(r"[-\d]+", name_core) if w) or name_core
        ui_lang = lang if lang in UI and rng.random() < 0.9 else "en"
        layout = pick(rng, {"semantic": 0.55, "div": 0.35, "table": 0.10 if codec == "utf-8" else 0.5})
        css = self._css(rng)
        js = self._js(rng, host)
        nav_labels = [UI[ui_lang][UI_KEYS.index(x)] for x in ("home", "news", "about", "contact")]
        if lang == "en" or ui_lang == "en":
            pool = EN_SECTIONS[family if family in EN_SECTIONS else "news"]
            sections = rng.sample(pool, rng.randint(3, min(8, len(pool))))
        else:
            sections = [w.capitalize() for w in self.tag_words(rng, lang, topic, 20) if len(w) >= (2 if lang in CHAR_LANGS else 6)][
                : rng.randint(3, 8)
            ]
        nav = (
            [(nav_labels[0], "/")]
            + [(s.capitalize(), f"/{slugify(s, 20)}/") for s in sections]
            + [(nav_labels[2], "/about/"), (nav_labels[3], "/contact/")]
        )
        return {
            "key": key, "lang": lang, "family": family, "topic": topic, "codec": codec, "declare": declare, "lie": lie,
            "label": rng.choice(LABELS[lie or codec]), "host": host, "scheme": "https" if rng.random() < 0.75 else "http",
            "title": title, "ui": ui_lang, "layout": layout, "css": css, "js": js, "nav": nav,
            "cookie": rng.random() < 0.55, "newsletter": rng.random() < 0.4, "sidebar": rng.random() < 0.7,
            "comments": rng.random() < (0.6 if family == "blog" else 0.35 if family == "news" else 0.0),
            "server": rng.choice(["nginx", "Apache", "cloudflare", "Apache/2.4.41 (Ubuntu)", "nginx/1.18.0", "Microsoft-IIS/10.0", "LiteSpeed"]),
            "powered": rng.choice([None, None, "PHP/7.4.13", "PHP/7.3.24", "ASP.NET", "Express", "WP Engine"]),
            "ip": f"{rng.choice(['192.0.2', '198.51.100', '203.0.113'])}.{rng.randint(1, 254)}",
            "year": rng.randint(2005, 2019), "sidebar_titles": [self.title(rng, lang, topic) for _ in range(10)],
            "footer_cols": rng.randint(1, 4), "id_word": rng.choice(["content", "main", "page", "primary", "wrapper", "container"]),
        }  # fmt: skip

    def _css(self, rng: random.Random) -> str:
        """A slice of a shared pool of rules (sites share themes and frameworks) and a few of the site's own."""
        pool = self._css_pool()
        k = rng.randint(20, 260)
        start = rng.randrange(len(pool) - k)
        own = self._css_rules(rng, rng.randint(2, 12))
        return "\n".join(pool[start : start + k] + own)

    @functools.lru_cache(maxsize=1)  # noqa: B019 - one Corpus per process
    def _css_pool(self) -> list[str]:
        return self._css_rules(self.rng("css"), 3000)

    def _css_rules(self, rng: random.Random, n: int) -> list[str]:
        classes = ["header", "nav", "menu", "footer", "sidebar", "widget", "post", "entry", "content", "title", "meta", "btn", "card",
                   "grid", "row", "col", "container", "logo", "search", "social", "comment", "cookie", "banner", "ad", "related"]  # fmt: skip
        props = ["margin:0 auto", "padding:{a}px {b}px", "color:#{h}", "background:#{h}", "font-size:{a}px", "line-height:1.{a}",
                 "display:flex", "display:block", "border-bottom:1px solid #{h}", "max-width:{c}px", "font-weight:700", "text-decoration:none"]  # fmt: skip
        rules = []
        for _ in range(n):
            sel = "." + "-".join(rng.sample(classes, rng.randint(1, 3)))
            if rng.random() < 0.3:
                sel += " " + rng.choice(["a", "li", "span", "p", "h2", "img", "ul"])
            body = ";".join(rng.choice(props).format(a=rng.randint(2, 40), b=rng.randint(2, 40), c=rng.randint(6, 14) * 100,
                                                     h=f"{rng.randrange(16**3):03x}") for _ in range(rng.randint(1, 5)))  # fmt: skip
            rules.append(f"{sel}{{{body}}}")
        return rules

    def _js(self, rng: random.Random, host: str) -> str:
        ua = f"UA-{rng.randint(1000000, 99999999)}-{rng.randint(1, 9)}"
        parts = [
            f"window.dataLayer=window.dataLayer||[];function gtag(){{dataLayer.push(arguments);}}gtag('js',new Date());gtag('config','{ua}');",
            f"var siteConfig={json.dumps({'host': host, 'lazyload': rng.random() < 0.5, 'ads': rng.randint(0, 6), 'version': f'{rng.randint(1, 9)}.{rng.randint(0, 20)}'})};",
        ]
        for k in range(rng.randint(0, 12)):
            parts.append(f"(function(d,s){{var e=d.createElement(s);e.async=true;e.src='https://cdn.{host}/js/module{k}.min.js?v={rng.randint(1, 999)}';"
                         f"var f=d.getElementsByTagName(s)[0];f.parentNode.insertBefore(e,f);}})(document,'script');")  # fmt: skip
        if rng.random() < 0.5:
            parts.append("document.addEventListener('DOMContentLoaded',function(){var b=document.querySelectorAll('.menu-toggle');"
                         "for(var i=0;i<b.length;i++){b[i].addEventListener('click',function(e){e.preventDefault();"
                         "document.body.classList.toggle('menu-open');});}});")  # fmt: skip
        return "\n".join(parts)

    # ---- text
    def title(self, rng: random.Random, lang: str, topic: str) -> str:
        ch = self.chain(lang, topic)
        s = ch.sentences(rng, 1, q=0.5, cont=0)[0]
        if ch.chars:
            return s[: rng.randint(8, 24)].rstrip("，、。！？：；")
        words = s.split()
        start = rng.randrange(max(1, len(words) - 4))
        t = " ".join(words[start : start + rng.randint(4, 11)]).strip(",.;:!?\"'()[]“”")
        return t[:1].upper() + t[1:] if t else "Untitled"

    def paragraphs(self, rng: random.Random, lang: str, topic: str, words: int, per_para: tuple[int, int] = (1, 6)) -> list[str]:
        ch = self.chain(lang, topic)
        words = min(words, max(40, ch.n_tokens // (16 if ch.chars else 6)))
        unit = 2.5 if ch.chars else 1.0
        q = rng.choice([0.05, 0.15, 0.3, 0.5])
        cont = rng.choice([0.3, 0.6, 0.85])
        paras, total = [], 0
        join = "" if ch.chars else " "
        while total < words * unit:
            sents = ch.sentences(rng, rng.randint(*per_para), q=q, cont=cont)
            p = join.join(sents)
            if p:
                paras.append(p)
                total += len(p) if ch.chars else len(p.split())
        return paras

    def tag_words(self, rng: random.Random, lang: str, topic: str, n: int) -> list[str]:
        ch = self.chain(lang, topic)
        if ch.chars:
            text = "".join(ch.sentences(rng, max(1, n // 3), q=0.5, cont=0))
            words = [text[i : i + rng.randint(2, 4)] for i in range(0, len(text), 5)]
        else:
            words = ch.words(rng, n * 6)
        words = [w for w in words if w.isalpha() and len(w) >= (2 if ch.chars else 4)]
        return list(dict.fromkeys(w.lower() for w in words))[:n] or ["news"]

    def ui(self, site: dict, key: str) -> str:
        return UI[site["ui"]][UI_KEYS.index(key)]

    def person(self, rng: random.Random, lang: str) -> str:
        if lang == "en" or rng.random() < 0.3:
            return f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        return rng.choice(HANDLE_WORDS) + rng.choice(["_", "", "."]) + rng.choice(HANDLE_WORDS) + str(rng.randint(1, 99))

    def handle(self, rng: random.Random) -> str:
        return rng.choice(HANDLE_WORDS) + rng.choice(["_", "", "-"]) + rng.choice(HANDLE_WORDS + [str(rng.randint(70, 2005))])

    # ---- files
    def file_name(self, f: int) -> str:
        start = self.crawl_start + timedelta(minutes=7 * (f % 100) + 180 * (f // 100))
        end = start + timedelta(hours=3)
        return (f"crawl-data/{self.snapshot}/segments/{self.segment_ts}.{f % 100}/warc/"
                f"CC-MAIN-{start:%Y%m%d%H%M%S}-{end:%Y%m%d%H%M%S}-{f:05d}.warc.gz")  # fmt: skip

    def n_files(self) -> int:
        return max(1, math.ceil(self.pages / self.ppf))
