"""Build the WARC/ARC fixtures in tests/data/warc/ (issue 17): real framings from other tools, small.

Deterministic: fixed record ids (uuid5), dates and gzip headers (mtime 0), so a re-run writes
the same bytes (``--check`` says whether the files on disk are what this script writes).
Records are written with warcio 1.8.1 (the test extra) where warcio can write the framing,
and by hand where it cannot (WARC/0.18 with bare-LF HTTP headers, a WARC gzipped as a whole,
ARC files). README.md there says what each file is.

    .venv/bin/python tests/data/make_warc_fixtures.py          # (re)write tests/data/warc/
    .venv/bin/python tests/data/make_warc_fixtures.py --check  # exit 1 if a file differs
"""

from __future__ import annotations

import argparse
import gzip
import io
import sys
import uuid
import zlib
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

OUT = Path(__file__).resolve().parent / "warc"
DATE = "2024-03-05T12:00:00Z"
MAX_FIXTURE_BYTES = 50_000

WORDS = (
    "harbour council budget ferry timetable winter storm engineers bridge repairs village school library "
    "volunteers museum archive river flood meadow farmers market festival orchestra rehearsal railway station "
    "platform signal summer evening lecture history mountain weather forecast bakery bread morning newspaper"
).split()


def prose(seed: int, words: int) -> str:
    """Deterministic sentences (a small linear congruential generator over a fixed word list)."""
    x, out = seed * 7919 + 17, []
    for k in range(words):
        x = (x * 1103515245 + 12345) % (1 << 31)
        w = WORDS[x % len(WORDS)]
        out.append(w.capitalize() if k % 12 == 0 else w)
        if k % 12 == 11:
            out[-1] += "."
    return " ".join(out) + "."


def page(title: str, paras: list[str], head: str = "") -> bytes:
    body = "".join(f"<p>{p}</p>" for p in paras)
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title>{head}</head><body><nav><a href='/'>Home</a> <a href='/news'>News</a></nav>"
        f"<article><h1>{title}</h1>{body}</article><footer>Contact us</footer></body></html>"
    ).encode()


def article(n: int, title: str | None = None) -> bytes:
    return page(title or f"Report {n}", [prose(n * 10 + k, 60) for k in range(4)], '<meta charset="utf-8">')


def rid(name: str, i: int) -> str:
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'curate-fixture/{name}/{i}')}>"


def gz(data: bytes) -> bytes:
    """One gzip member, mtime 0 (deterministic)."""
    return gzip.compress(data, compresslevel=9, mtime=0)


class Writer:
    """warcio's WARCWriter with fixed ids and dates; ``raw_http`` writes an HTTP block as given."""

    def __init__(self, name: str, compress: bool = True) -> None:
        self.name, self.buf, self.i = name, io.BytesIO(), 0
        self.w = WARCWriter(self.buf, gzip=compress)

    def _ids(self, extra: dict | None = None) -> dict:
        self.i += 1
        return {"WARC-Record-ID": rid(self.name, self.i), "WARC-Date": DATE, **(extra or {})}

    def warcinfo(self) -> None:
        rec = self.w.create_warcinfo_record(self.name, {"software": "curate fixture builder (warcio 1.8.1)", "format": "WARC/1.0"})
        rec.rec_headers.replace_header("WARC-Record-ID", rid(self.name, 0))
        rec.rec_headers.replace_header("WARC-Date", DATE)
        self.w.write_record(rec)

    def request(self, url: str) -> None:
        req = StatusAndHeaders(
            "GET / HTTP/1.1", [("Host", url.split("/")[2]), ("Accept-Encoding", "gzip, deflate, br")], is_http_request=True
        )
        self.w.write_record(self.w.create_warc_record(url, "request", http_headers=req, warc_headers_dict=self._ids()))

    def response(self, url: str, body: bytes, headers: list[tuple[str, str]], status: str = "200 OK", warc: dict | None = None) -> None:
        """A response whose stored payload is ``body`` exactly (already coded as ``headers`` say)."""
        http = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
        rec = self.w.create_warc_record(url, "response", payload=io.BytesIO(body), length=None, http_headers=http,
                                        warc_headers_dict=self._ids(warc))  # fmt: skip
        self.w.write_record(rec)

    def pair(self, url: str, body: bytes, headers: list[tuple[str, str]], status: str = "200 OK", warc: dict | None = None) -> None:
        self.request(url)
        self.response(url, body, headers, status, warc)

    def bytes(self) -> bytes:
        return self.buf.getvalue()


HTML = ("Content-Type", "text/html; charset=utf-8")


def chunked(data: bytes, sizes: list[int], ext: bool = False) -> bytes:
    """HTTP/1.1 chunked framing of ``data`` in chunks of the given sizes (the rest in one more), with the final 0 chunk."""
    out, pos = [], 0
    for n in [*sizes, len(data)]:
        piece = data[pos : pos + n]
        if not piece:
            break
        out.append(b"%06x%s\r\n%s\r\n" % (len(piece), b";name=value" if ext and not out else b"", piece))
        pos += len(piece)
    return b"".join(out) + b"0\r\n\r\n"


# --------------------------------------------------------------------------- the fixtures


def content_encoding() -> bytes:
    """Responses stored as sent, Content-Encoding and all (wget, Heritrix, Webrecorder, browsertrix do so)."""
    w = Writer("content-encoding")
    w.warcinfo()
    import brotli  # noqa: PLC0415 - only this builder needs it (installed here; curate treats it as optional)
    import zstandard  # noqa: PLC0415

    w.pair("https://news.example/gzip", gz(article(1, "Gzip report")), [HTML, ("Content-Encoding", "gzip")])
    w.pair("https://news.example/x-gzip", gz(article(2, "X-gzip report")), [HTML, ("Content-Encoding", "x-gzip")])
    w.pair(
        "https://news.example/deflate-zlib", zlib.compress(article(3, "Zlib deflate report"), 9), [HTML, ("Content-Encoding", "deflate")]
    )
    raw = zlib.compressobj(9, zlib.DEFLATED, -15)
    w.pair(
        "https://news.example/deflate-raw",
        raw.compress(article(4, "Raw deflate report")) + raw.flush(),
        [HTML, ("Content-Encoding", "deflate")],
    )
    w.pair("https://news.example/br", brotli.compress(article(5, "Brotli report")), [HTML, ("Content-Encoding", "br")])
    w.pair("https://news.example/zstd", zstandard.ZstdCompressor(level=3).compress(article(6, "Zstandard report")),
           [HTML, ("Content-Encoding", "zstd")])  # fmt: skip
    # stored decoded under the original header (a recorder that decoded but kept it)
    w.pair("https://news.example/stored-decoded", article(7, "Stored decoded report"), [HTML, ("Content-Encoding", "gzip")])
    # the gzip stream cut short (the crawler stopped reading: WARC-Truncated)
    cut = gz(article(8, "Cut gzip report"))
    w.pair(
        "https://news.example/gzip-cut", cut[: len(cut) * 2 // 3], [HTML, ("Content-Encoding", "gzip")], warc={"WARC-Truncated": "length"}
    )
    # not a compressed stream at all, though it says so
    w.pair("https://news.example/gzip-garbage", b"\x1f\x8b\x08\x00" + bytes(range(256)) * 2, [HTML, ("Content-Encoding", "gzip")])
    w.pair("https://news.example/compress", b"\x1f\x9d\x90" + bytes(100), [HTML, ("Content-Encoding", "compress")])
    w.pair("https://news.example/plain", article(9, "Plain report"), [HTML])
    w.pair(
        "https://news.example/moved",
        b"",
        [("Location", "https://news.example/plain"), ("Content-Encoding", "gzip")],
        status="301 Moved Permanently",
    )
    return w.bytes()


def gzip_bomb() -> bytes:
    """A gzip-coded body inflating 1000:1 (8 MiB of markup from 8 kB), between two good pages."""
    w = Writer("gzip-bomb")
    w.pair("https://bomb.example/before", article(20), [HTML])
    bomb = gz(b"<html><body><p>" + b"a" * (8 << 20) + b"</p></body></html>")
    w.pair("https://bomb.example/bomb", bomb, [HTML, ("Content-Encoding", "gzip")])
    w.pair("https://bomb.example/after", article(21), [HTML])
    return w.bytes()


def chunked_plain() -> bytes:
    """Transfer-Encoding: chunked kept in the payload (warcprox, as warcio's example-iana.org-chunked.warc); uncompressed."""
    w = Writer("chunked", compress=False)
    w.warcinfo()
    w.pair("http://www.registry.example/", chunked(article(30, "Number registry"), [900, 700], ext=True),
           [HTML, ("Transfer-Encoding", "chunked")])  # fmt: skip
    w.pair("http://www.registry.example/gz", chunked(gz(article(31, "Chunked gzip registry")), [500]),
           [HTML, ("Transfer-Encoding", "chunked"), ("Content-Encoding", "gzip")])  # fmt: skip
    whole = chunked(article(32, "Cut registry"), [600, 600])
    w.pair("http://www.registry.example/cut", whole[:1500], [HTML, ("Transfer-Encoding", "chunked")])  # no final chunk
    bad = chunked(article(33, "Malformed registry"), [800])
    bad = bad.replace(b"\r\n%06x\r\n" % (len(article(33, "Malformed registry")) - 800), b"\r\nzz-not-hex\r\n", 1)
    w.pair("http://www.registry.example/malformed", bad, [HTML, ("Transfer-Encoding", "chunked")])
    w.pair("http://www.registry.example/dechunked", article(34, "Dechunked registry"), [HTML, ("Transfer-Encoding", "chunked")])
    return w.bytes()


def whole_file_gzip() -> bytes:
    """A WARC gzipped as ONE member (``gzip file.warc``), its last response a 302."""
    w = Writer("whole-file", compress=False)
    w.warcinfo()
    for i in range(4):
        w.pair(f"https://blog.example/post-{i}", article(40 + i), [HTML])
    w.pair("https://blog.example/old", b"", [("Location", "https://blog.example/post-0")], status="302 Found")
    return gz(w.bytes())


def _warc_record(version: bytes, fields: list[tuple[bytes, bytes]], block: bytes) -> bytes:
    head = b"".join(b"%s: %s\r\n" % kv for kv in [*fields, (b"Content-Length", b"%d" % len(block))])
    return version + b"\r\n" + head + b"\r\n" + block + b"\r\n\r\n"


def clueweb09() -> bytes:
    """ClueWeb09-style records: WARC/0.18, CRLF WARC headers, HTTP headers ending in a bare LF; gzip per record."""
    out = [gz(_warc_record(b"WARC/0.18", [(b"WARC-Type", b"warcinfo"), (b"WARC-Date", b"2009-03-65T08:43:19-0800"),
                                           (b"WARC-Record-ID", rid("clueweb", 0).encode()), (b"Content-Type", b"application/warc-fields")],
                           b"software: Nutch 1.0-dev (modified for clueweb09)\r\nisPartOf: clueweb09-en\r\n"))]  # fmt: skip
    pages = [
        ("http://www.forum.example/thread?id=1", "200 OK", "text/html", article(50, "Forum thread")),
        ("http://www.shop.example/catalogue", "200 OK", "text/html; charset=ISO-8859-1",
         page("Catalogue", [prose(510 + k, 60) + " Caf\xe9 cr\xe8me." for k in range(3)]).decode().encode("latin-1")),
        ("http://www.club.example/", "200 OK", None, article(52, "Club news")),  # no Content-Type: sniffed
        ("http://www.old.example/moved", "301 Moved Permanently", "text/html", b"<html><body>Moved</body></html>"),
    ]  # fmt: skip
    for i, (url, status, ctype, body) in enumerate(pages, 1):
        http = (
            f"HTTP/1.1 {status}\nServer: Apache/2.2.3\n"
            + (f"Content-Type: {ctype}\n" if ctype else "")
            + f"Content-Length: {len(body)}\n\n"
        )
        fields = [(b"WARC-Type", b"response"), (b"WARC-Target-URI", url.encode()), (b"WARC-Date", b"2009-01-13T18:04:21-0800"),
                  (b"WARC-TREC-ID", b"clueweb09-en0000-00-%05d" % i), (b"WARC-Record-ID", rid("clueweb", i).encode()),
                  (b"Content-Type", b"application/http;msgtype=response")]  # fmt: skip
        out.append(gz(_warc_record(b"WARC/0.18", fields, http.encode() + body)))
    return b"".join(out)


def wget() -> bytes:
    """wget 1.2x: WARC-Target-URI in angle brackets (the WARC/1.0 grammar), bodies as sent (gzip, chunked)."""
    w = Writer("wget")
    w.warcinfo()
    for _i, (path, headers, body) in enumerate([
        ("", [HTML], article(60, "Example home")),
        ("about", [HTML, ("Content-Encoding", "gzip")], gz(article(61, "About the example"))),
        ("news", [HTML, ("Transfer-Encoding", "chunked")], chunked(article(62, "Example news"), [1000])),
    ]):  # fmt: skip
        url = f"http://example.com/{path}"
        w.request(f"<{url}>")
        w.response(f"<{url}>", body, headers)
    w.pair("<http://example.com/robots.txt>", b"User-agent: *\nDisallow:\n", [("Content-Type", "text/plain")])
    return w.bytes()


def arc(gzipped: bool) -> bytes:
    """An ARC (version 1) file as the Internet Archive and pre-2013 CommonCrawl wrote them; .arc.gz: one member per record."""
    date = "20080430204825"
    desc = b"1 0 Curate fixtures\nURL IP-address Archive-date Content-type Archive-length\n"
    name = "old-crawl.arc.gz" if gzipped else "old-crawl.arc"
    recs = [(f"filedesc://{name}", "0.0.0.0", "text/plain", desc)]

    def resp(status: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
        return (f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n").encode() + body

    recs += [
        ("http://www.archive.example/", "192.0.2.10", "text/html", resp("200 OK", [HTML], article(70, "Archive home"))),
        ("http://www.archive.example/a page with spaces.html", "192.0.2.10", "text/html",
         resp("200 OK", [("Content-Type", "text/html")], article(71, "Spaces in the URL"))),
        ("http://www.archive.example/gone", "192.0.2.10", "text/html", resp("404 Not Found", [HTML], b"<html>Not here</html>")),
        ("http://www.archive.example/logo.gif", "192.0.2.10", "image/gif", resp("200 OK", [("Content-Type", "image/gif")], b"GIF89a" + bytes(40))),
        ("dns:www.archive.example", "192.0.2.1", "text/dns", b"20080430204825\nwww.archive.example.\t3600\tIN\tA\t192.0.2.10\n"),
        ("http://www.archive.example/news", "192.0.2.10", "text/html",
         resp("200 OK", [HTML, ("Content-Encoding", "gzip")], gz(article(72, "Archive news")))),
    ]  # fmt: skip
    out = []
    for url, ip, mime, block in recs:
        rec = f"{url} {ip} {date} {mime} {len(block)}\n".encode() + block + b"\n"
        out.append(gz(rec) if gzipped else rec)
    return b"".join(out)


def late_utf8() -> bytes:
    """A UTF-8 page declaring no charset whose first non-ASCII bytes come after 100 kB (as a 1.09 MB news page did at 110,685)."""
    w = Writer("late-utf8")
    ascii_part = "".join(f"<p>{prose(80 + k, 60)}</p>" for k in range(240))
    assert len(ascii_part) > 100_000
    tail = "<p>The airlines\u2019 caf\u00e9 menus \u2014 cr\u00e8me br\u00fbl\u00e9e, na\u00efve \u201cquotes\u201d and \u00a3 prices.</p>"
    body = f"<!DOCTYPE html><html><head><title>Long story</title></head><body><article><h1>Long story</h1>{ascii_part}{tail}</article></body></html>"
    w.pair("https://paper.example/long-story", body.encode(), [("Content-Type", "text/html")])
    return w.bytes()


def large_page() -> bytes:
    """A 1.2 MB UTF-8 page (over the default --max-html-bytes) with a 3-byte character across byte 1,000,000."""
    w = Writer("large-page")
    head = '<!DOCTYPE html><html><head><meta charset="utf-8"><title>Big</title></head><body><article><h1>Big</h1>'
    para = "<p>" + prose(90, 60) + " \u6e2f\u53e3 \u00e9t\u00e9.</p>"  # CJK and Latin-1 letters: 3- and 2-byte sequences
    text = head + para * ((999_990 - len(head.encode())) // len(para.encode()))
    raw = text.encode()
    fill = 1_000_000 - 1 - len(raw)  # pad so that the 3-byte \u6f22 starts at byte 999,999: the cut splits it
    text += "x" * fill + "\u6f22\u5b57</p>" + para * 150 + "</article></body></html>"
    body = text.encode()
    assert body[999_999:1_000_002] == "\u6f22".encode()
    w.pair("https://big.example/article", body, [HTML])
    w.pair("https://big.example/small", article(91), [HTML])
    return w.bytes()


FIXTURES = {
    "content-encoding.warc.gz": content_encoding,
    "gzip-bomb.warc.gz": gzip_bomb,
    "chunked.warc": chunked_plain,
    "whole-file-gzip.warc.gz": whole_file_gzip,
    "clueweb09-lf-headers.warc.gz": clueweb09,
    "wget-angle-brackets.warc.gz": wget,
    "old-crawl.arc.gz": lambda: arc(True),
    "old-crawl.arc": lambda: arc(False),
    "late-utf8.warc.gz": late_utf8,
    "large-page.warc.gz": large_page,
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the files on disk instead of writing them")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    bad = 0
    for name, make in FIXTURES.items():
        data = make()
        assert len(data) < MAX_FIXTURE_BYTES, (name, len(data))
        path = OUT / name
        if args.check:
            same = path.exists() and path.read_bytes() == data
            bad += not same
            print(f"{'ok     ' if same else 'DIFFERS'} {name}")
        else:
            path.write_bytes(data)
            print(f"{len(data):>7,} {name}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
