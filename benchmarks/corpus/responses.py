"""HTTP responses: status, headers and body of each page, redirects, errors and non-HTML records."""

from __future__ import annotations

import base64
import json
import math
import random
import zlib

from .util import attr, esc, pick, rec_id, slugify
from .vocab import CANONICAL


class ResponseMixin:
    """The HTTP side of a page; mixed into :class:`~.plan.Corpus`."""

    def response(self, n: int) -> dict:
        """The HTTP response of page ``n``: status, headers, body and what the manifest says."""
        p = self.plan(n)
        rng = self.rng("response", n)
        kind = p["kind"]
        site = self.site(p["site"])
        info = {"n": n, "kind": kind, "family": p["family"], "lang": p["lang"], "topic": p["topic"], "site": site["host"]}
        if kind in ("redirect", "error", "non_html"):
            return getattr(self, f"_r_{kind}")(p, site, rng, info)
        if p.get("dup") == "exact_html":
            orig = self.response(p["of"])
            url = orig["url"]
            # the same page under another URL: tracking parameters, a session id, the AMP or print version (unique per copy)
            variant = rng.choice(["utm", "fbclid", "session", "amp", "print"])
            sep = "&" if "?" in url else "?"
            if variant == "utm":
                source = rng.choice(["feed", "twitter", "facebook", "newsletter", "rss"])
                url += f"{sep}utm_source={source}&utm_medium=social&utm_campaign={rng.getrandbits(40):x}"
            elif variant == "fbclid":
                url += f"{sep}fbclid=IwAR{base64.urlsafe_b64encode(rng.randbytes(30)).decode().rstrip('=')}"
            elif variant == "session":
                url += f"{sep}sid={rng.getrandbits(128):032x}"
            elif variant == "amp":
                url += f"{sep}amp=1&_gl={rng.getrandbits(48):x}"
            else:
                url += f"{sep}print=1&ref={rng.getrandbits(32):x}"
            info.update({k: orig["info"][k] for k in ("family", "lang", "topic", "site", "charset", "declared")}, copied_kind=self.base_kind(p["of"]),
                        dup={"type": "exact_html", "of": p["of"], "of_url": orig["url"], "of_record_id": self.record_ids(p["of"])[1]})  # fmt: skip
            return {"url": url, "status": orig["status"], "headers": orig["headers"], "body": orig["body"], "info": info, "ip": orig["ip"]}
        if p.get("dup"):
            op = self.plan(p["of"])
            oc = self.content(op)
            dup = {
                "type": p["dup"],
                "of": p["of"],
                "of_url": self.url(self.site(op["site"]), op, oc),
                "of_record_id": self.record_ids(p["of"])[1],
            }
            if p["dup"] == "near":
                c, extra = self.edit(rng, oc, p["lang"], p["topic"], self.site(op["site"])["title"])
                dup.update(extra)
            else:
                c = dict(oc)
            c["main"] = self.render_article(c, site, rng)
            info["dup"] = dup
            info["copied_kind"] = op["kind"]
        else:
            c = self.content(p)
            if "variant" in c:
                info["variant"] = c["variant"]
        html = self.page_html(site, c, p, rng)
        codec = site["codec"]
        body = html.encode(codec, "xmlcharrefreplace")
        ctype = "text/html" if rng.random() < 0.97 else "application/xhtml+xml"
        declared = site["declare"]
        if site["declare"] in ("header+meta", "header"):
            ctype += f"; charset={site['label']}"
        if rng.random() < 0.005:  # no Content-Type header at all: sniffed as HTML
            ctype = None
            declared = {"header+meta": "meta", "header": "none"}.get(declared, declared)
            info["no_content_type"] = True
        info.update(
            charset=CANONICAL[codec],
            declared=declared if not site["lie"] or declared == "none" else f"{declared} wrong ({CANONICAL[site['lie']]})",
        )
        return {
            "url": self.url(site, p, c),
            "status": "200 OK",
            "headers": self._headers(site, ctype, rng),
            "body": body,
            "info": info,
            "ip": site["ip"],
        }

    def record_ids(self, n: int) -> tuple[str, str, str]:
        """WARC-Record-IDs (request, response, metadata) of page ``n``."""
        ids = self.rng("ids", n)
        return rec_id(ids), rec_id(ids), rec_id(ids)

    def _headers(self, site: dict, ctype: str | None, rng: random.Random, extra: list | None = None) -> list[tuple[str, str]]:
        h = [("Server", site["server"])]
        if site["powered"]:
            h.append(("X-Powered-By", site["powered"]))
        if ctype:
            h.append(("Content-Type", ctype))
        h += extra or []
        if rng.random() < 0.5:
            h.append(("Cache-Control", rng.choice(["max-age=0, no-cache", "public, max-age=600", "no-store, no-cache, must-revalidate"])))
        if rng.random() < 0.3:
            h.append(("Set-Cookie", f"PHPSESSID={rng.getrandbits(64):016x}; path=/; HttpOnly"))
        h.append(("Vary", "Accept-Encoding"))
        return h

    def _r_redirect(self, p, site, rng, info) -> dict:
        status = pick(rng, {"301 Moved Permanently": 0.5, "302 Found": 0.35, "307 Temporary Redirect": 0.1, "308 Permanent Redirect": 0.05})
        path = f"/{rng.choice(['old', 'archive', 'node', 'index.php', 'go'])}/{p['n']}"
        if rng.random() < 0.4:
            url, loc = f"http://{site['host']}{path}", f"https://{site['host']}{path}"
        else:
            url, loc = (
                f"{site['scheme']}://{site['host']}{path}",
                f"{site['scheme']}://{site['host']}/{rng.choice(['login', 'en', 'new'])}/{p['n']}",
            )
        body = b"" if rng.random() < 0.4 else (f'<html><head><title>{status}</title></head><body><h1>{status[4:]}</h1>'
                                                f'<p>The document has moved <a href="{attr(loc)}">here</a>.</p></body></html>').encode()  # fmt: skip
        info.update(status=int(status[:3]), location=loc)
        return {"url": url, "status": status, "headers": self._headers(site, "text/html; charset=iso-8859-1" if body else None, rng, [("Location", loc)]),
                "body": body, "info": info, "ip": site["ip"]}  # fmt: skip

    def _r_error(self, p, site, rng, info) -> dict:
        status = pick(
            rng,
            {
                "404 Not Found": 0.65,
                "403 Forbidden": 0.1,
                "410 Gone": 0.05,
                "500 Internal Server Error": 0.12,
                "503 Service Unavailable": 0.08,
            },
        )
        url = f"{site['scheme']}://{site['host']}/{slugify(self.title(rng, p['lang'], p['topic']))}-{p['n']}"
        if status.startswith("404") and rng.random() < 0.6:
            c = {
                "title": self.ui(site, "not_found"),
                "paras": [],
                "main": f"<h1>{esc(self.ui(site, 'not_found'))}</h1><p>{esc(self.ui(site, 'not_found_text'))}</p>",
            }
            body = self.page_html(site, c, p, rng).encode(site["codec"], "xmlcharrefreplace")
            ctype = f"text/html; charset={site['label']}"
        else:
            server = site["server"].split("/")[0].lower()
            body = (
                f"<html>\r\n<head><title>{status}</title></head>\r\n<body>\r\n<center><h1>{status}</h1></center>\r\n<hr><center>{server}</center>\r\n</body>\r\n</html>\r\n"
            ).encode()
            ctype = "text/html"
        info.update(status=int(status[:3]))
        return {"url": url, "status": status, "headers": self._headers(site, ctype, rng), "body": body, "info": info, "ip": site["ip"]}

    def _r_non_html(self, p, site, rng, info) -> dict:
        what = pick(rng, {"jpeg": 0.2, "png": 0.1, "gif": 0.03, "pdf": 0.15, "json": 0.1, "rss": 0.1, "sitemap": 0.05, "robots": 0.1,
                          "css": 0.07, "js": 0.05, "txt": 0.05})  # fmt: skip
        base = f"{site['scheme']}://{site['host']}"
        n = p["n"]
        if what in ("jpeg", "png", "gif"):
            magic = {"jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01", "png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "gif": b"GIF89a"}[
                what
            ]
            body = magic + rng.randbytes(int(rng.lognormvariate(math.log(8000), 0.8)) % 60000)
            url, ctype = f"{base}/uploads/{n}.{'jpg' if what == 'jpeg' else what}", f"image/{what}"
        elif what == "pdf":
            text = " ".join(self.paragraphs(rng, p["lang"], p["topic"], 200)).encode("latin-1", "replace")
            stream = zlib.compress(b"BT /F1 12 Tf 72 712 Td (" + text[:3000] + b") Tj ET")
            body = (b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
                    b"3 0 obj<</Type/Page/Parent 2 0 R/Contents 4 0 R>>endobj\n4 0 obj<</Length " + str(len(stream)).encode() + b"/Filter/FlateDecode>>stream\n"
                    + stream + b"\nendstream endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")  # fmt: skip
            url, ctype = f"{base}/files/{slugify(self.title(rng, p['lang'], p['topic']))}-{n}.pdf", "application/pdf"
        elif what == "json":
            items = [
                {"id": rng.randint(1, 10**6), "title": self.title(rng, p["lang"], p["topic"]), "score": round(rng.random(), 3)}
                for _ in range(rng.randint(1, 30))
            ]
            body = json.dumps({"status": "ok", "page": rng.randint(1, 50), "items": items}, ensure_ascii=False).encode()
            url, ctype = f"{base}/api/v{rng.randint(1, 3)}/items?page={n}", "application/json"
        elif what == "rss":
            items = "".join(f"<item><title>{esc(self.title(rng, p['lang'], p['topic']))}</title><link>{base}/{rng.randint(1, 10**6)}/</link>"
                            f"<description>{esc(self.chain(p['lang'], p['topic']).sentences(rng, 1)[0])}</description></item>" for _ in range(rng.randint(3, 20)))  # fmt: skip
            body = f'<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>{esc(site["title"])}</title><link>{base}/</link>{items}</channel></rss>'.encode()
            url, ctype = f"{base}/feed/?n={n}", "application/rss+xml; charset=UTF-8"
        elif what == "sitemap":
            body = ('<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                    + "".join(f"<url><loc>{base}/{rng.randint(1, 10**6)}/</loc><lastmod>2020-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}</lastmod></url>" for _ in range(rng.randint(10, 200)))
                    + "</urlset>").encode()  # fmt: skip
            url, ctype = f"{base}/sitemap-{n}.xml", "application/xml"
        elif what == "robots":
            lines = ["User-agent: *"] + [
                f"Disallow: /{w}/"
                for w in rng.sample(["wp-admin", "cgi-bin", "private", "search", "cart", "tmp", "login", "api"], rng.randint(1, 6))
            ]
            lines += [f"Sitemap: {base}/sitemap.xml", ""]
            body = "\n".join(lines).encode()
            url, ctype = f"{base}/robots.txt?crawl={n}", "text/plain"
        elif what == "css":
            body, url, ctype = site["css"].encode(), f"{base}/static/css/style-{n}.css", "text/css"
        elif what == "js":
            body, url, ctype = site["js"].encode(), f"{base}/static/js/app-{n}.js", "application/javascript"
        else:
            body = "\n\n".join(self.paragraphs(rng, p["lang"], p["topic"], rng.randint(100, 800))).encode("utf-8")
            url, ctype = f"{base}/files/readme-{n}.txt", "text/plain; charset=utf-8"
        info.update(status=200, media=what)
        return {"url": url, "status": "200 OK", "headers": self._headers(site, ctype, rng), "body": body, "info": info, "ip": site["ip"]}
