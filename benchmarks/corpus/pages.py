"""Page templates: the HTML around a page's content, and its URL."""

from __future__ import annotations

import functools
import json
import random

from .util import attr, esc, slugify


class PageMixin:
    """The page around the content; mixed into :class:`~.plan.Corpus`."""

    # ---- the page: HTML around the content
    def page_html(self, site: dict, c: dict, p: dict, rng: random.Random) -> str:
        ui = functools.partial(self.ui, site)
        lang = p["lang"]
        html_lang = {"zh": "zh-CN", "zh-Hant": "zh-TW"}.get(lang, lang)
        layout = site["layout"]
        heavy = c.get("heavy", False)
        meta_cs = ""
        if site["declare"] in ("header+meta", "meta"):
            meta_cs = (f'<meta charset="{site["label"]}">' if rng.random() < 0.6 or layout != "table"
                       else f'<meta http-equiv="Content-Type" content="text/html; charset={site["label"]}">')  # fmt: skip
        title = f"{c['title']} | {site['title']}" if rng.random() < 0.8 else c["title"]
        head = [
            "<!DOCTYPE html>" if layout != "table" else '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN" "http://www.w3.org/TR/html4/loose.dtd">',
            f'<html lang="{html_lang}">' if rng.random() < 0.85 else "<html>",
            "<head>", meta_cs, f"<title>{esc(title)}</title>",
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f'<meta name="description" content="{attr((c["paras"][0] if c["paras"] else c["title"])[:155])}">',
            f'<link rel="canonical" href="{site["scheme"]}://{site["host"]}/">' if rng.random() < 0.5 else "",
            f'<link rel="stylesheet" href="/static/css/style.css?ver={site["year"]}">',
            f"<style>{site['css']}</style>",
            f"<script>{site['js']}</script>",
        ]  # fmt: skip
        if c.get("keywords"):
            head.append(f'<meta name="keywords" content="{attr(c["keywords"])}">')
        if rng.random() < 0.4:
            head.append('<script type="application/ld+json">' + json.dumps({"@context": "https://schema.org", "@type": "Article", "headline": c["title"][:110],
                        "publisher": {"@type": "Organization", "name": site["title"]}}, ensure_ascii=False) + "</script>")  # fmt: skip
        bulk_head, bulk_body = self.page_bulk(site, c, p)
        head.append(bulk_head)
        head.append("</head>")
        nav_items = site["nav"]
        if heavy:
            nav_items = nav_items + [
                (w.capitalize(), f"/topics/{slugify(w, 30)}/") for w in self.tag_words(rng, lang, p["topic"], rng.randint(30, 90))
            ]
        nav_links = "".join(f'<li class="menu-item"><a href="{attr(h)}">{esc(t)}</a></li>' for t, h in nav_items)
        menu = f'<ul class="menu">{nav_links}</ul>'
        if layout == "semantic":
            header = f'<header class="site-header"><a class="logo" href="/">{esc(site["title"])}</a><nav class="main-navigation" aria-label="{esc(ui("menu"))}">{menu}</nav>' \
                     f'<form class="search" action="/search"><input name="q" placeholder="{attr(ui("search"))}"></form></header>'  # fmt: skip
        elif layout == "div":
            header = f'<div id="header"><div class="logo"><a href="/">{esc(site["title"])}</a></div><div id="menu">{menu}</div>' \
                     f'<div class="top-links"><a href="/login">{esc(ui("login"))}</a> | <a href="/register">{esc(ui("register"))}</a></div></div>'  # fmt: skip
        else:
            header = f'<table width="100%" border="0" cellpadding="0" cellspacing="0"><tr><td class="logo"><a href="/"><b>{esc(site["title"])}</b></a></td></tr>' \
                     "<tr><td class=\"menu\">" + " | ".join(f'<a href="{attr(h)}">{esc(t)}</a>' for t, h in nav_items) + "</td></tr></table>"  # fmt: skip
        crumbs = ""
        if rng.random() < 0.5:
            crumbs = f'<div class="breadcrumbs"><a href="/">{esc(ui("home"))}</a> &raquo; <a href="{attr(site["nav"][1][1] if len(site["nav"]) > 1 else "/")}">' \
                     f'{esc(site["nav"][1][0] if len(site["nav"]) > 1 else ui("news"))}</a> &raquo; {esc(c["title"][:60])}</div>'  # fmt: skip
        share = ""
        if p["kind"] in ("article", "boilerplate", "near_dup", "exact_dup") and rng.random() < 0.6:
            share = f'<div class="share"><span>{esc(ui("share"))}:</span> <a href="#">Facebook</a> <a href="#">Twitter</a> <a href="#">LinkedIn</a> <a href="#">Email</a></div>'
        tags = ""
        if p["kind"] in ("article", "near_dup", "exact_dup") and rng.random() < 0.5:
            tags = (
                f'<div class="tags">{esc(ui("tags"))}: '
                + ", ".join(f'<a href="/tag/{slugify(w)}/">{esc(w)}</a>' for w in self.tag_words(rng, lang, p["topic"], rng.randint(2, 6)))
                + "</div>"
            )
        widgets = []
        if site["sidebar"] or heavy:
            titles = rng.sample(site["sidebar_titles"], rng.randint(3, 6))
            widgets.append(
                f'<div class="widget"><h3>{esc(ui("most_read"))}</h3><ul>'
                + "".join(f'<li><a href="/{slugify(t)}/">{esc(t)}</a></li>' for t in titles)
                + "</ul></div>"
            )
            if heavy or rng.random() < 0.4:
                widgets.append(
                    f'<div class="widget"><h3>{esc(ui("related"))}</h3><ul>'
                    + "".join(f'<li><a href="/{slugify(t)}/">{esc(t)}</a></li>' for t in rng.sample(site["sidebar_titles"], 5))
                    + "</ul></div>"
                )
            if heavy:
                widgets.append('<div class="ad">Advertisement</div><div class="widget"><h3>Trending</h3><ol>'
                               + "".join(f"<li><a href=\"/t/{rng.randint(1, 9999)}\">{esc(self.title(rng, lang, p['topic']))}</a></li>" for _ in range(rng.randint(5, 10))) + "</ol></div>")  # fmt: skip
        if site["newsletter"] or heavy:
            widgets.append(
                f'<div class="newsletter"><h3>Newsletter</h3><p>{esc(ui("newsletter"))}</p><input type="email"><button>{esc(ui("subscribe"))}</button></div>'
            )
        side = "".join(widgets)
        cols = []
        for _ in range(site["footer_cols"] + (3 if heavy else 0)):
            cols.append(
                "<ul>"
                + "".join(f'<li><a href="{attr(h)}">{esc(t)}</a></li>' for t, h in rng.sample(site["nav"], min(len(site["nav"]), 5)))
                + "</ul>"
            )
        legal = f'<a href="/privacy">{esc(ui("privacy"))}</a> | <a href="/terms">{esc(ui("terms"))}</a> | <a href="/contact">{esc(ui("contact"))}</a>'
        copy = f"© {site['year']}-2020 {esc(site['title'])}. {esc(ui('rights'))}"
        cookie = ""
        if site["cookie"] or heavy:
            cookie = f'<div id="cookie-notice" class="cookie-banner"><p>{esc(ui("cookie_text"))} <a href="/privacy">{esc(ui("privacy"))}</a></p><button>{esc(ui("accept"))}</button></div>'
        comments = self.render_comments(site, c["comments"], rng) if c.get("comments") else ""
        body_cls = attr(f"{p['family']} {p['kind']}")
        top = cookie if cookie and rng.random() < 0.5 else ""
        bottom = cookie if cookie and not top else ""
        if layout == "semantic":
            body = (f'<body class="{body_cls}">{top}{header}{crumbs}<div class="site-content"><main id="{site["id_word"]}">'
                    f'<article class="post">{c["main"]}{tags}{share}</article>{comments}</main>'
                    + (f'<aside class="sidebar">{side}</aside>' if side else "") + f'</div><footer class="site-footer"><div class="footer-widgets">{"".join(cols)}</div>'
                    f'<nav class="footer-nav">{legal}</nav><p class="copyright">{copy}</p></footer>{bottom}')  # fmt: skip
        elif layout == "div":
            body = (f'<body class="{body_cls}">{top}{header}{crumbs}<div id="{site["id_word"]}"><div class="content">{c["main"]}{tags}{share}{comments}</div>'
                    + (f'<div class="sidebar">{side}</div>' if side else "") + f'</div><div id="footer"><div class="footer-links">{"".join(cols)}</div>'
                    f'<div class="legal">{legal}</div><div class="copy">{copy}</div></div>{bottom}')  # fmt: skip
        else:
            body = (f'<body bgcolor="#ffffff">{top}{header}<table width="100%"><tr><td valign="top" width="75%">{c["main"]}{tags}{comments}</td>'
                    + (f'<td valign="top" class="side">{side}</td>' if side else "") + f'</tr></table><table width="100%"><tr><td align="center"><font size="1">'
                    f"{legal}<br>{copy}</font></td></tr></table>{bottom}")  # fmt: skip
        tail = f'<script src="/static/js/main.js?ver={site["year"]}"></script></body></html>'
        body = body.replace(">", ">" + bulk_body, 1)  # the icon sprite right after <body ...>
        return "\n".join(x for x in head if x) + "\n" + body + "\n" + tail

    # ---- the bulk of a real page: what makes CommonCrawl's captures ~23 KB of WARC.gz each
    def page_bulk(self, site: dict, c: dict, p: dict) -> tuple[str, str]:
        """Inline scripts and an icon sprite, as real pages carry them: ``(in <head>, after <body>)``.

        Sized so that a capture (request, response and metadata records) is ~23 KB of WARC.gz on
        average, CommonCrawl's figure (a monthly archive is ~75 TB of WARC.gz for ~3 billion
        captures; issue 26 quotes ~23 KB per page): a framework bundle (a slice of a pool of
        minified functions shared by the site's pages), the page's state as JSON (its paragraphs
        again, related items with ids, URLs and dates, as server-side rendering embeds them) and
        an SVG sprite. Drawn from their own random stream: the rest of the page is as before.
        """
        rng = self.rng("bulk", p["n"])
        pool = self._js_pool()
        site_rng = self.rng("bundle", site["key"])
        k = site_rng.randint(60, 260)
        start = site_rng.randrange(len(pool) - k)
        bundle = "".join(pool[start : start + k])
        css_pool = self._css_pool()
        k = site_rng.randint(40, 160)  # a framework's stylesheet, inlined: its rules again at each breakpoint
        start = site_rng.randrange(len(css_pool) - k)
        rules = "\n".join(css_pool[start : start + k])
        theme = rules + "".join(f"\n@media (min-width:{bp}px){{{rules}}}" for bp in (576, 768, 992, 1200))
        items = [
            {"id": rng.getrandbits(40), "title": t, "url": f"/{slugify(t)}-{rng.randint(1000, 99999)}/", "date": f"20{rng.randint(10, 20)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
             "image": f"https://cdn.{site['host']}/img/{rng.getrandbits(64):016x}.jpg", "views": rng.randint(10, 99999)}
            for t in rng.sample(site["sidebar_titles"], min(len(site["sidebar_titles"]), rng.randint(4, 10)))
        ]  # fmt: skip
        state = {"props": {"page": {"title": c.get("title", ""), "body": c.get("paras", [])[:40], "related": items},
                 "build": f"{rng.getrandbits(64):016x}", "locale": p["lang"]}}  # fmt: skip
        head = (f'<style id="theme-inline-css">{theme}</style><script>{bundle}</script>' f'<script id="__STATE__" type="application/json">'
                + json.dumps(state, ensure_ascii=False).replace("</", "<\\/") + "</script>")  # fmt: skip
        icons = "".join(
            f'<symbol id="icon-{i}" viewBox="0 0 24 24"><path d="'
            + " ".join(f"{rng.choice('MLCQ')}{rng.uniform(0, 24):.2f} {rng.uniform(0, 24):.2f}" for _ in range(rng.randint(6, 30)))
            + 'z"/></symbol>'
            for i in range(rng.randint(8, 40))
        )
        return head, f'<svg xmlns="http://www.w3.org/2000/svg" style="display:none">{icons}</svg>'

    @functools.lru_cache(maxsize=1)  # noqa: B019 - one Corpus per process
    def _js_pool(self) -> list[str]:
        """3,000 minified functions (what a site's bundle is sliced from)."""
        rng = self.rng("jspool")
        ident = lambda: "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 3))) + str(rng.randint(0, 99))  # noqa: E731
        out = []
        for _ in range(3000):
            a, b, f, g = ident(), ident(), ident(), ident()
            out.append(f"function {f}({a},{b}){{var {g}={a}.{ident()}||{rng.randint(0, 9999)};if({b}&&{b}.{ident()}){{{g}+={b}.length}}"
                       f"return {g}>{rng.randint(1, 500)}?{ident()}({a},\"{ident()}\"):{ident()}.{ident()}({g},{b})}}")  # fmt: skip
        return out

    def url(self, site: dict, p: dict, c: dict | None) -> str:
        rng = self.rng("url", p["n"])
        base = f"{site['scheme']}://{site['host']}"
        n = p["n"]
        title = (c or {}).get("title") or "page"
        slug = slugify(title) if not any(ord(ch) > 0x2000 for ch in title) or rng.random() < 0.5 else str(n)
        fam = site["family"]
        when = self._when(rng)
        if fam == "news":
            return f"{base}/{when:%Y/%m/%d}/{slug}-{n}" + ("/" if rng.random() < 0.5 else ".html")
        if fam == "blog":
            return f"{base}/{when:%Y/%m}/{slug}-{n}/" if rng.random() < 0.7 else f"{base}/?p={n}"
        if fam == "wiki":
            return f"{base}/wiki/{slug.replace('-', '_').title()}_{n}"
        if fam == "forum":
            return f"{base}/viewtopic.php?t={n}" if rng.random() < 0.5 else f"{base}/threads/{slug}.{n}/"
        if fam == "shop":
            return f"{base}/products/{slug}-{n}" if rng.random() < 0.6 else f"{base}/index.php?route=product/product&product_id={n}"
        if fam == "docs":
            return f"{base}/docs/{slug}-{n}.html"
        if fam == "qa":
            return f"{base}/questions/{n}/{slug}"
        if fam == "spam":
            return f"{base}/{slug}-{n}.php"
        return f"{base}/{rng.choice(['en', 'company', 'about', 'services', 'insights'])}/{slug}-{n}"
