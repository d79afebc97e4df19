"""The content of each page kind (title, main HTML, what the manifest says), and near-duplicate edits."""

from __future__ import annotations

import math
import random
from collections import Counter
from datetime import datetime, timedelta

from .util import esc, jaccard, shingles, slugify, strip_tags
from .vocab import PRODUCT_NOUNS, SHORT_REPLIES, SPAM_WORDS


class ContentMixin:
    """Content of the page kinds; mixed into :class:`~.plan.Corpus`."""

    # ---- content of the page kinds (title + main HTML + what the manifest says about it)
    def content(self, p: dict) -> dict:
        """Title, main-content HTML and the article text (title + paragraphs, for duplicates)."""
        rng = self.rng("content", p["n"])
        site = self.site(p["site"])
        lang, topic, kind = p["lang"], p["topic"], p["kind"]
        fn = getattr(self, f"_c_{kind}")
        return fn(rng, site, lang, topic)

    def _when(self, rng: random.Random) -> datetime:
        return self.crawl_start - timedelta(days=int(rng.random() ** 2 * 3000), minutes=rng.randint(0, 1440))

    def _article(self, rng, site, lang, topic, words: int, per_para=(1, 6), max_paras: int = 10**6, comments: int = 0) -> dict:
        """An article as data (title, author, date, blocks, comments): copies re-render it in another template."""
        title = self.title(rng, lang, topic)
        paras = self.paragraphs(rng, lang, topic, words, per_para)[:max_paras]
        blocks: list[tuple[str, str]] = []
        for k, para in enumerate(paras):
            if k and k % rng.randint(3, 7) == 0 and rng.random() < 0.5:
                blocks.append(("h", self.title(rng, lang, topic)))
            if k == 1 and rng.random() < 0.3:
                blocks.append(("fig", self.title(rng, lang, topic)))
            blocks.append(("p", para))
        d = {"title": title, "paras": paras, "blocks": blocks, "author": self.person(rng, lang), "when": self._when(rng)}
        if comments:
            d["comments"] = self._comment_list(rng, lang, topic, comments)
        return d

    def render_article(self, c: dict, site: dict, rng: random.Random) -> str:
        out = [f'<h1 class="entry-title">{esc(c["title"])}</h1>']
        when = c["when"]
        if c.get("author"):
            out.append(f'<div class="byline">{esc(self.ui(site, "posted_by"))} <a href="/author/{rng.randint(1, 40)}/">{esc(c["author"])}</a>'
                       f' <time datetime="{when:%Y-%m-%dT%H:%M}">{when:%B %d, %Y}</time></div>')  # fmt: skip
        for kind, text in c["blocks"]:
            if kind == "p":
                out.append(f"<p>{esc(text)}</p>")
            elif kind == "h":
                out.append(f"<h2>{esc(text)}</h2>")
            elif kind == "code":
                out.append(f'<div class="highlight"><pre><code>{esc(text)}</code></pre></div>')
            else:
                out.append(
                    f'<figure><img src="/wp-content/uploads/{when:%Y/%m}/img{rng.randint(100, 9999)}.jpg" alt=""><figcaption>{esc(text)}</figcaption></figure>'
                )
        return "\n".join(out)

    def _c_article(self, rng, site, lang, topic) -> dict:
        words = int(min(4000, max(60, rng.lognormvariate(math.log(450), 0.7))))
        n = rng.randint(1, 12) if site["comments"] and rng.random() < 0.7 else 0
        d = self._article(rng, site, lang, topic, words, comments=n)
        d["main"] = self.render_article(d, site, rng)
        return d

    def _comment_list(self, rng, lang, topic, n) -> list[dict]:
        out = []
        replies = SHORT_REPLIES.get(lang, SHORT_REPLIES["en"])
        for _ in range(n):
            if rng.random() < 0.3:
                text = rng.choice(replies)
            elif rng.random() < 0.05:
                text = f"Great info! Check out my site https://{rng.choice(SPAM_WORDS)}-{rng.choice(SPAM_WORDS)}.com for {' '.join(rng.sample(SPAM_WORDS, 3))}"
            else:
                text = " ".join(self.chain(lang, topic).sentences(rng, rng.randint(1, 3), q=0.4, cont=0.3))
            out.append({"author": self.person(rng, lang), "when": self._when(rng), "text": text})
        return out

    def render_comments(self, site: dict, comments: list[dict], rng: random.Random) -> str:
        out = [
            f'<section id="comments" class="comments-area"><h3>{len(comments)} {esc(self.ui(site, "comments"))}</h3><ol class="comment-list">'
        ]
        for cm in comments:
            out.append(f'<li class="comment"><div class="comment-author"><b>{esc(cm["author"])}</b> <span class="says">says:</span></div>'
                       f'<div class="comment-meta"><a href="#comment-{rng.randint(1000, 99999)}">{cm["when"]:%B %d, %Y at %I:%M %p}</a></div>'
                       f'<div class="comment-content"><p>{esc(cm["text"])}</p></div><a class="comment-reply-link" href="#">{esc(self.ui(site, "reply"))}</a></li>')  # fmt: skip
        out.append(f'</ol><div id="respond"><h3>{esc(self.ui(site, "leave_reply"))}</h3><p class="comment-notes">{esc(self.ui(site, "email_note"))}</p>'
                   '<form><textarea name="comment"></textarea><input name="author"><input name="email"><input type="submit" value="Post Comment"></form></div></section>')  # fmt: skip
        return "".join(out)

    def _c_boilerplate(self, rng, site, lang, topic) -> dict:
        d = self._article(
            rng, site, lang, topic, rng.randint(30, 120), (1, 3), max_paras=2, comments=rng.randint(1, 4) if rng.random() < 0.5 else 0
        )
        d["main"] = self.render_article(d, site, rng)
        d["heavy"] = True
        return d

    def _c_forum(self, rng, site, lang, topic) -> dict:
        title = self.title(rng, lang, topic)
        ch = self.chain(lang, topic)
        posts, paras = [], []
        n = rng.randint(1, 25)
        users = [self.handle(rng) for _ in range(rng.randint(2, 10))]
        replies = SHORT_REPLIES.get(lang, SHORT_REPLIES["en"])
        for k in range(n):
            u = rng.choice(users)
            if k and rng.random() < 0.25:
                text = [rng.choice(replies)]
            else:
                text = [" ".join(ch.sentences(rng, rng.randint(1, 5), q=0.3, cont=0.5)) for _ in range(rng.randint(1, 3))]
            paras.extend(text)
            quote = ""
            if k and rng.random() < 0.2:
                quote = (
                    f"<blockquote><cite>{esc(rng.choice(users))} wrote:</cite>{esc(paras[rng.randrange(len(paras))][:300])}</blockquote>"
                )
            sig = f'<div class="signature">{esc(rng.choice(["Sent from my iPhone", "-- " + u, "Running Debian 10 / Python 3.8", "Cheers!"]))}</div>' \
                if rng.random() < 0.2 else ""  # fmt: skip
            when = self._when(rng)
            posts.append(f'<div class="post" id="p{rng.randint(10000, 999999)}"><div class="postprofile"><a class="username" href="/memberlist.php?u={rng.randint(2, 9999)}">{esc(u)}</a>'
                         f'<dd>Posts: {rng.randint(1, 5000)}</dd><dd>Joined: {when - timedelta(days=rng.randint(10, 2000)):%a %b %d, %Y}</dd></div>'
                         f'<div class="postbody"><p class="author">{when:%a %b %d, %Y %I:%M %p}</p><div class="content">{quote}'
                         + "<br><br>".join(esc(t) for t in text) + f"</div>{sig}</div></div>")  # fmt: skip
        pages = rng.randint(1, 9)
        main = (f'<h2 class="topic-title"><a href="#">{esc(title)}</a></h2><div class="action-bar"><a class="button" href="#">Post Reply</a>'
                f'<div class="pagination">{n} posts &bull; Page 1 of {pages}</div></div>' + "".join(posts))  # fmt: skip
        return {"title": title, "paras": paras, "main": main}

    def _c_product(self, rng, site, lang, topic) -> dict:
        brand = "".join(
            rng.choice("BCDFGKLMNPRSTVZ") + rng.choice("aeiou") + rng.choice(["n", "r", "l", "x", "", "k"]) for _ in range(2)
        ).capitalize()
        name = f"{brand} {rng.choice(PRODUCT_NOUNS)} {rng.choice(['', 'Pro', 'Max', 'X', 'Lite', '2', '3000', 'Plus'])}".strip()
        cur = {
            "en": "$",
            "de": "€",
            "fr": "€",
            "es": "€",
            "it": "€",
            "nl": "€",
            "pt": "R$",
            "ru": "₽",
            "ja": "¥",
            "zh": "¥",
            "pl": "zł",
        }.get(lang, "$")
        price = f"{cur}{rng.randint(5, 900)}.{rng.choice(['99', '95', '00', '49'])}"
        desc = self.paragraphs(rng, lang, topic, rng.randint(40, 250), (1, 4))
        specs = [("Brand", brand), ("Model", f"{brand[:2].upper()}-{rng.randint(100, 9999)}"), ("Weight", f"{rng.uniform(0.1, 12):.1f} kg"),
                 ("Dimensions", f"{rng.randint(5, 80)} x {rng.randint(5, 80)} x {rng.randint(1, 40)} cm"),
                 ("Color", rng.choice(["Black", "White", "Silver", "Blue", "Red", "Grey"])), ("Warranty", f"{rng.randint(1, 5)} years"),
                 ("SKU", f"{rng.randint(10**7, 10**8)}")]  # fmt: skip
        reviews = []
        for _ in range(rng.randint(0, 6)):
            stars = rng.choice([5, 5, 5, 4, 4, 3, 2, 1])
            txt = rng.choice(["Great product!", "Works as described.", "Stopped working after two weeks.", "Good value for money."]) if rng.random() < 0.4 \
                else " ".join(self.chain(lang, topic).sentences(rng, rng.randint(1, 3), q=0.4))  # fmt: skip
            reviews.append(
                f'<div class="review"><span class="stars">{"★" * stars}{"☆" * (5 - stars)}</span> <b>{esc(self.person(rng, lang))}</b><p>{esc(txt)}</p></div>'
            )
        main = (f'<div class="product"><h1 class="product-title">{esc(name)}</h1><div class="price">{esc(price)}</div>'
                f'<div class="stock">{esc(self.ui(site, "in_stock"))}</div><button class="add-to-cart">{esc(self.ui(site, "add_to_cart"))}</button>'
                f'<h2>{esc(self.ui(site, "description"))}</h2>' + "".join(f"<p>{esc(d)}</p>" for d in desc)
                + '<table class="specs">' + "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in specs) + "</table>"
                + f'<h2>{esc(self.ui(site, "reviews"))}</h2>' + "".join(reviews) + "</div>")  # fmt: skip
        return {"title": name, "paras": desc, "main": main}

    def _code(self, rng) -> str:
        return self.code[rng.randrange(len(self.code))] if self.code else "print('hello world')"

    def _c_docs(self, rng, site, lang, topic) -> dict:
        title = self.title(rng, lang, topic)
        blocks, paras = [], []
        for _ in range(rng.randint(1, 6)):
            blocks.append(("h", self.title(rng, lang, topic)))
            for para in self.paragraphs(rng, lang, topic, rng.randint(30, 200), (1, 4)):
                blocks.append(("p", para))
                paras.append(para)
            if rng.random() < 0.8:
                blocks.append(("code", self._code(rng)))
        d = {"title": title, "paras": paras, "blocks": blocks, "author": None, "when": self._when(rng)}
        d["main"] = self.render_article(d, site, rng)
        return d

    def _c_qa(self, rng, site, lang, topic) -> dict:
        title = self.title(rng, lang, topic) + "?"
        q = self.paragraphs(rng, lang, topic, rng.randint(30, 150), (1, 3))
        out = [f'<div id="question-header"><h1 itemprop="name">{esc(title)}</h1></div><div class="question"><div class="votes">{rng.randint(-2, 300)}</div>'
               + "".join(f"<p>{esc(x)}</p>" for x in q) + (f"<pre><code>{esc(self._code(rng))}</code></pre>" if rng.random() < 0.7 else "")
               + '<div class="tags">' + "".join(f'<a class="post-tag" href="/tags/{t}">{t}</a>' for t in rng.sample(["python", "linux", "bash", "debian", "regex", "javascript", "c", "json", "unicode", "performance"], 3))
               + f'</div><div class="user-info">asked {rng.randint(2, 11)} years ago by {esc(self.handle(rng))}</div></div>']  # fmt: skip
        paras = list(q)
        n = rng.randint(0, 5)
        out.append(f"<h2>{n} Answers</h2>")
        for _ in range(n):
            a = self.paragraphs(rng, lang, topic, rng.randint(20, 200), (1, 3))
            paras.extend(a)
            out.append(f'<div class="answer"><div class="votes">{rng.randint(-1, 500)}</div>' + "".join(f"<p>{esc(x)}</p>" for x in a)
                       + (f"<pre><code>{esc(self._code(rng))}</code></pre>" if rng.random() < 0.6 else "")
                       + f'<div class="user-info">answered by {esc(self.handle(rng))}</div></div>')  # fmt: skip
        return {"title": title, "paras": paras, "main": "\n".join(out)}

    def _c_listing(self, rng, site, lang, topic) -> dict:
        n = rng.randint(5, 30)
        title = f"{n} " + self.title(rng, lang, topic) if rng.random() < 0.6 else self.title(rng, lang, topic)
        intro = self.paragraphs(rng, lang, topic, rng.randint(20, 80), (1, 2))[:1]
        items, paras = [], list(intro)
        for _ in range(n):
            head = self.title(rng, lang, topic)
            tail = self.chain(lang, topic).sentences(rng, 1, q=0.4)[0] if rng.random() < 0.6 else ""
            items.append(f"<li><strong>{esc(head)}</strong>{' – ' + esc(tail) if tail else ''}</li>")
            paras.append(f"{head} {tail}".strip())
        tag = "ol" if rng.random() < 0.5 else "ul"
        main = f"<h1>{esc(title)}</h1>" + "".join(f"<p>{esc(x)}</p>" for x in intro) + f"<{tag}>" + "".join(items) + f"</{tag}>"
        return {"title": title, "paras": paras, "main": main}

    def _c_table(self, rng, site, lang, topic) -> dict:
        title = self.title(rng, lang, topic)
        intro = self.paragraphs(rng, lang, topic, rng.randint(20, 60), (1, 2))[:1]
        cols = rng.randint(3, 7)
        heads = [w.strip(".,;:()").capitalize() for w in self.chain(lang, topic).words(rng, cols)]
        rows = []
        for r in range(rng.randint(8, 60)):
            cells = [self.title(rng, lang, topic)[:30] if rng.random() < 0.4 else str(r + 1)]
            for _ in range(cols - 1):
                cells.append(
                    rng.choice(
                        [f"{rng.uniform(0, 1000):.1f}", str(rng.randint(0, 99999)), f"{rng.randint(0, 100)}%", f"{rng.randint(1990, 2020)}"]
                    )
                )
            rows.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
        main = (f"<h1>{esc(title)}</h1>" + "".join(f"<p>{esc(x)}</p>" for x in intro) + '<table class="wikitable sortable"><thead><tr>'
                + "".join(f"<th>{esc(h)}</th>" for h in heads) + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")  # fmt: skip
        return {"title": title, "paras": intro, "main": main}

    def _c_spam(self, rng, site, lang, topic) -> dict:
        kw = " ".join(rng.sample(SPAM_WORDS, rng.randint(2, 4)))
        style = rng.choice(["stuffing", "seo", "links"])
        paras = []
        if style == "stuffing":
            words = [rng.choice(SPAM_WORDS) for _ in range(rng.randint(80, 600))]
            paras = [" ".join(words[k : k + rng.randint(12, 40)]) for k in range(0, len(words), 30)]
        elif style == "seo":
            for para in self.paragraphs(rng, lang, topic, rng.randint(150, 600), (2, 5)):
                ws = para.split()
                for k in range(0, len(ws), rng.randint(6, 15)):
                    ws.insert(k, kw)
                paras.append(" ".join(ws))
        main = f"<h1>{esc(kw.upper() if rng.random() < 0.5 else kw.title())}</h1>" + "".join(f"<p>{esc(x)}</p>" for x in paras)
        links = "".join(f'<li><a href="/{slugify(" ".join(rng.sample(SPAM_WORDS, 2)))}.html">{esc(" ".join(rng.sample(SPAM_WORDS, rng.randint(2, 5))))}</a></li>'
                        for _ in range(rng.randint(10, 150 if style == "links" else 40)))  # fmt: skip
        main += f'<ul class="links">{links}</ul>'
        return {"title": kw.title(), "paras": paras, "main": main, "keywords": kw}

    def _c_short(self, rng, site, lang, topic) -> dict:
        variant = rng.choice(["soon", "login", "soft404", "js", "parked", "age", "image", "denied"])
        title, body = {
            "soon": ("Coming soon", "<h1>Coming soon</h1><p>We are working on something new. Stay tuned!</p>"),
            "login": (self.ui(site, "login"), f'<form class="login"><h1>{esc(self.ui(site, "login"))}</h1><label>Username</label><input name="user">'
                      '<label>Password</label><input type="password"><a href="/lost-password">Forgot your password?</a><button>Sign in</button></form>'),
            "soft404": (self.ui(site, "not_found"), f"<h1>{esc(self.ui(site, 'not_found'))}</h1><p>{esc(self.ui(site, 'not_found_text'))}</p>"),
            "js": ("Loading...", "<noscript>You need to enable JavaScript to run this app.</noscript><div id=\"root\"></div>"),
            "parked": (site["host"], f"<h1>{esc(site['host'])}</h1><p>This domain may be for sale. Inquire now!</p><p>Related searches: "
                       + ", ".join(esc(w) for w in rng.sample(SPAM_WORDS, 4)) + "</p>"),
            "age": ("Age verification", "<h1>Are you 18 or older?</h1><p>You must be of legal age to enter this site.</p><button>Yes</button><button>No</button>"),
            "image": (self.title(rng, lang, topic), f'<img src="/photos/{rng.randint(1, 99999)}.jpg"><p>{esc(self.title(rng, lang, topic))}</p>'),
            "denied": ("Access denied", "<h1>Access denied</h1><p>You do not have permission to view this page.</p>"),
        }[variant]  # fmt: skip
        return {"title": title, "paras": [strip_tags(body)], "main": body, "variant": variant}

    def _c_nav(self, rng, site, lang, topic) -> dict:
        cat = self.title(rng, lang, topic).split()[0]
        items = []
        for _ in range(rng.randint(15, 80)):
            t = self.title(rng, lang, topic)
            when = self._when(rng)
            items.append(f'<li><a href="/{when:%Y/%m}/{slugify(t)}/">{esc(t)}</a> <span class="date">{when:%Y-%m-%d}</span></li>')
        tagcloud = " ".join(f'<a href="/tag/{slugify(w)}/" style="font-size:{rng.randint(8, 22)}pt">{esc(w)}</a>'
                            for w in self.tag_words(rng, lang, topic, rng.randint(10, 40)))  # fmt: skip
        main = (f"<h1>{esc(self.ui(site, 'categories'))}: {esc(cat)}</h1><ul class=\"archive\">" + "".join(items) + "</ul>"
                f'<div class="pagination">{esc(self.ui(site, "prev"))} 1 2 3 … {rng.randint(4, 300)} {esc(self.ui(site, "next"))}</div>'
                f'<div class="tagcloud">{tagcloud}</div>')  # fmt: skip
        return {"title": f"{cat} | {site['title']}", "paras": [], "main": main}

    # ---- near-duplicate edits
    def main_tokens(self, c: dict, chars: bool) -> list[str]:
        """Title, blocks and comments: what a perfect main-content extractor would keep."""
        tok = list if chars else str.split
        out = tok(c["title"])
        for _, text in c["blocks"]:
            out += tok(text)
        for cm in c.get("comments") or []:
            out += tok(cm["text"])
        return out

    def edit(self, rng: random.Random, c: dict, lang: str, topic: str, site_title: str) -> tuple[dict, dict]:
        """An edited copy of an article: the word-5-gram Jaccard of title + blocks + comments is aimed at
        0.80-0.97 and measured (``jaccard_word5``; characters for Chinese and Japanese)."""
        ch = self.chain(lang, topic)
        tok = list if ch.chars else str.split
        join = "" if ch.chars else " "
        base = shingles(self.main_tokens(c, ch.chars))
        target = rng.uniform(0.80, 0.97)
        drop_comments = bool(c.get("comments")) and rng.random() < 0.3
        new_author = rng.random() < 0.5
        best = None
        scale = 1.0
        for _attempt in range(5):
            r = random.Random(rng.random())
            blocks = [(k, tok(t)) if k == "p" else (k, t) for k, t in c["blocks"]]
            ps = [b[1] for b in blocks if b[0] == "p"]
            t_title = tok(c["title"])
            n = len(base)
            budget = max(1, round(n * (1 - target) / (1 + target) / 4.5 * scale))
            ops = Counter()
            if r.random() < 0.3:
                t_title = t_title + tok({"en": " (updated)", "de": " (aktualisiert)", "fr": " (mis à jour)"}.get(lang, " – " + site_title))
                ops["title"] += 1
            vocab = [w for p in ps for w in p] or ["the"]
            while budget > 0 and ps:
                k = r.randrange(len(ps))
                op = r.random()
                if op < 0.6 and ps[k]:
                    ps[k][r.randrange(len(ps[k]))] = r.choice(vocab)
                    ops["word_substitutions"] += 1
                    budget -= 1
                elif op < 0.75:
                    new = tok(ch.sentences(r, 1, q=0.4)[0])
                    pos = r.randrange(len(ps[k]) + 1)
                    ps[k][pos:pos] = new
                    ops["sentences_inserted"] += 1
                    budget -= 1 + len(new) // 5
                elif op < 0.9 and len(ps[k]) > 12:
                    i = r.randrange(len(ps[k]) - 8)
                    del ps[k][i : i + r.randint(3, 8)]
                    ops["words_deleted"] += 1
                    budget -= 1
                elif len(ps) > 3 and blocks[-1][0] == "p" and len(blocks[-1][1]) < n * 0.1:
                    blocks[-1][1].clear()
                    ops["last_paragraph_dropped"] += 1
                    budget -= 2
                else:
                    budget -= 0.5
            new_blocks = [(k, join.join(t) if k == "p" else t) for k, t in blocks]
            new_blocks = [(k, t) for k, t in new_blocks if t]
            if r.random() < 0.3 and lang == "en":
                new_blocks.append(("p", f"This article originally appeared on {site_title}."))
                ops["credit_line"] += 1
            copy = dict(c, title=join.join(t_title), blocks=new_blocks, paras=[t for k, t in new_blocks if k == "p"])
            if drop_comments:
                copy["comments"] = None
                ops["comments_dropped"] = 1
            if new_author and c.get("author"):
                copy["author"] = self.person(r, lang)
            jac = jaccard(base, shingles(self.main_tokens(copy, ch.chars)))
            if best is None or abs(jac - target) < abs(best[1] - target):
                best = (copy, jac, dict(sorted(ops.items())))
            if 0.80 <= jac <= 0.975 or (drop_comments and jac < 0.80 and budget <= 1):
                break
            scale *= 0.6 if jac < 0.80 else 1.6
        copy, jac, ops = best
        return copy, {"jaccard_word5": round(jac, 4), "edits": ops}
