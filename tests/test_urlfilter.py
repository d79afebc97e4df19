"""The urlfilter stage: blocklists (domains and their subdomains, URLs) and banned words in URLs (issue 21).

Planted cases through the core and the CLI: subdomain matches, internationalised domains, URL
list entries with paths, the word lists as FineWeb uses them, malformed list lines (an error
naming the file and line), unparsable URLs (counted under their own reason), no url column."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.dataset import read_success
from curate.errors import CurateError
from curate.schema import BASE_SCHEMA
from curate.stages.urlfilter import DEFAULT_BLOCKLIST, URLFilterStage, host_suffixes, normalise_host, split_url, url_key


def lists_dir(tmp_path: Path, domains: str = "", urls: str = "", category: str = "adult") -> Path:
    """A UT1-style blocklist tree with one category."""
    d = tmp_path / "ut1" / category
    d.mkdir(parents=True, exist_ok=True)
    if domains:
        (d / "domains").write_text(domains, "utf-8")
    if urls:
        (d / "urls").write_text(urls, "utf-8")
    return tmp_path / "ut1"


def words_file(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, "utf-8")
    return p


def no_words() -> dict:
    return {"banned_words": "none", "soft_banned_words": "none", "banned_subwords": "none"}


def stage(tmp_path: Path, domains: str = "", urls: str = "", **kw) -> URLFilterStage:
    return URLFilterStage(blocklist=[str(lists_dir(tmp_path, domains, urls))], **{**no_words(), **kw})


def decide(st: URLFilterStage, url: str) -> str | None:
    lists = st.lists()
    reason = st.check(url, lists)
    if reason is None and st.subword_hits([url], lists)[0]:
        return "url:banned_subword"
    return reason


# --------------------------------------------------------------------------- hosts and URLs


@pytest.mark.parametrize(
    "host,expected",
    [
        ("Example.COM.", "example.com"),
        ("Bücher.de", "xn--bcher-kva.de"),
        ("faß.de", "xn--fa-hia.de"),  # IDNA 2008, non-transitional
        ("例え.テスト", "xn--r8jz45g.xn--zckzah"),
        ("[2001:DB8::0001]", "2001:db8::1"),
        ("1.2.3.4", "1.2.3.4"),
        ("exa mple.com", None),
        ("a" * 64 + ".com", None),  # a label over 63 characters
        ("", None),
    ],
)
def test_normalise_host(host, expected):
    assert normalise_host(host) == expected


def test_host_suffixes_and_url_keys():
    assert host_suffixes("a.b.example.co.uk") == ["a.b.example.co.uk", "b.example.co.uk", "example.co.uk", "co.uk", "uk"]
    assert host_suffixes("1.2.3.4") == ["1.2.3.4"]
    assert url_key("https://www.Example.com/dir/") == "example.com/dir"
    assert url_key("example.com/dir/page.html?x=1") == "example.com/dir/page.html?x=1"
    assert url_key("mailto:a@b.c") is None


@pytest.mark.parametrize("url", ["http://exa mple.com/", "mailto:someone@example.com", "javascript:void(0)", "http://[zz/x",
                                 "http:///path", "http://", "http://x..com/", "https://" + "a" * 300 + ".com/"])  # fmt: skip
def test_urls_that_do_not_parse(url, tmp_path):
    assert split_url(url) is None
    assert decide(stage(tmp_path, "blocked.com\n"), url) == "url:unparsable"


# --------------------------------------------------------------------------- blocklists


@pytest.mark.parametrize(
    "url,reason",
    [
        ("https://blocked.com/page", "url:blocked_domain"),
        ("https://www.blocked.com/page", "url:blocked_domain"),  # a subdomain
        ("http://a.b.c.blocked.com:8080/x?y=1", "url:blocked_domain"),
        ("HTTPS://BLOCKED.COM./", "url:blocked_domain"),  # case, trailing dot
        ("//blocked.com/x", "url:blocked_domain"),
        ("blocked.com/no-scheme", "url:blocked_domain"),
        ("https://notblocked.com/", None),  # a suffix that is not a parent domain
        ("https://blocked.com.evil.net/", None),
        ("https://example.org/blocked.com", None),
        ("https://anything.xxx/", "url:blocked_domain"),  # a whole top-level domain on the list
        ("https://www.Bücher.de/katalog", "url:blocked_domain"),  # listed in Unicode, URL in Unicode
        ("https://shop.xn--bcher-kva.de/", "url:blocked_domain"),  # URL in punycode
        ("https://xn--fa-hia.de/", "url:blocked_domain"),  # listed as faß.de
        ("https://fass.de/", None),  # not the transitional mapping
        ("http://93.184.216.34/x", "url:blocked_domain"),  # an IP address on the list
        ("http://93.184.216.35/x", None),
        ("http://[2001:db8::7]:80/", "url:blocked_domain"),
    ],
)
def test_blocked_domains_and_subdomains(tmp_path, url, reason):
    domains = "# comment\n\nblocked.com\nxxx\nbücher.de\nxn--fa-hia.de\n93.184.216.34\n2001:DB8:0::7\n"
    assert decide(stage(tmp_path, domains), url) == reason


@pytest.mark.parametrize(
    "url,reason",
    [
        ("http://host.org/dir", "url:blocked_url"),
        ("https://www.host.org/dir/", "url:blocked_url"),
        ("https://host.org/dir/page.html?x=1", "url:blocked_url"),  # under a listed path
        ("https://host.org/directory", None),  # not under it: a path prefix is not a parent
        ("https://host.org/", None),
        ("https://other.org/dir", None),
        ("https://sub.host.org/dir", None),  # a URL entry is not a domain entry
        ("https://news.site.com/a/b.html", "url:blocked_url"),
        ("https://news.site.com/a/b.html?page=2", "url:blocked_url"),
        ("https://news.site.com/a/c.html", None),
        ("https://q.net/search?q=1", "url:blocked_url"),  # an entry with a query matches that query only
        ("https://q.net/search?q=2", None),
    ],
)
def test_blocked_urls_with_paths(tmp_path, url, reason):
    urls = "host.org/dir\nhttp://www.news.site.com/a/b.html\nq.net/search?q=1\n"
    assert decide(stage(tmp_path, urls=urls), url) == reason


def test_shipped_default_lists():
    st = URLFilterStage()
    assert decide(st, "https://www.pornhub.com/view") == "url:blocked_domain"
    assert decide(st, "https://cdn.xvideos.com/x.mp4") == "url:blocked_domain"
    assert decide(st, "https://example.com/bdsm/page") == "url:banned_word"
    assert decide(st, "https://example.com/BDSM-Page") == "url:banned_word"
    assert decide(st, "https://example.com/hot-babes-with-boobs") == "url:soft_banned_words"
    assert decide(st, "https://example.com/boobs") is None  # one soft word is not enough
    assert decide(st, "https://example.com/2-Girls_1cup.html") == "url:banned_subword"
    assert decide(st, "https://en.wikipedia.org/wiki/Essex") is None  # "sex" inside a word is not a banned word
    assert decide(st, "https://www.bbc.co.uk/news/world-123") is None
    files = {d["file"] for d in st.params()["lists"]}
    assert "shipped:blocklist/adult/domains" in files and "shipped:banned_words.txt" in files
    assert DEFAULT_BLOCKLIST.is_dir()


def test_word_lists_of_your_own(tmp_path):
    bw = words_file(tmp_path, "bw.txt", "# hard\nForbidden\n")
    sw = words_file(tmp_path, "sw.txt", "alpha\nbeta\ngamma\n")
    sub = words_file(tmp_path, "sub.txt", "very bad\n")
    st = URLFilterStage(blocklist=["none"], banned_words=str(bw), soft_banned_words=str(sw), banned_subwords=str(sub),
                        soft_word_threshold=3)  # fmt: skip
    assert decide(st, "https://x.org/forbidden/") == "url:banned_word"
    assert decide(st, "https://x.org/forbiddenfruit") is None  # a word, not a subword
    assert decide(st, "https://x.org/alpha-beta") is None
    assert decide(st, "https://x.org/alpha-beta/gamma") == "url:soft_banned_words"
    assert decide(st, "https://x.org/VeryBad.html") == "url:banned_subword"
    assert decide(st, "https://pornhub.com/") is None  # --blocklist none


# --------------------------------------------------------------------------- bad lists


@pytest.mark.parametrize(
    "content,line,what",
    [
        ("good.com\nbad domain.com\n", 2, "not a domain"),
        ("# c\n\ngood.com\nhttp://a.com/x\n", 4, "a URL?"),
        ("good.com\n" * 3 + "-" * 300 + ".com\n", 4, "not a domain"),
    ],
)
def test_malformed_domain_line_is_an_error_naming_file_and_line(tmp_path, content, line, what):
    root = lists_dir(tmp_path, content)
    with pytest.raises(CurateError) as exc:
        URLFilterStage(blocklist=[str(root)], **no_words())
    msg = str(exc.value)
    assert f"{root / 'adult' / 'domains'}:{line}:" in msg and what in msg and "\n" not in msg


def test_malformed_lines_through_the_cli(tmp_path, run):
    src = write_docs(tmp_path / "in", [("https://a.org/", "cc/x")])
    root = lists_dir(tmp_path, "fine.org\n", urls="ok.org/x\nhttp://exa mple.com/y\n")
    res = run("urlfilter", "--in", src, "--out", tmp_path / "o", "--blocklist", root, ok=False)
    assert res.exit_code == 1 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines() == [f"curate: error: {root / 'adult' / 'urls'}:2: not a URL: 'http://exa mple.com/y' "
                                               "(one entry per line, '#' starts a comment)"]  # fmt: skip
    assert not (tmp_path / "o" / "part-00000.parquet").exists()
    bad = words_file(tmp_path, "w.txt", "ok\n---\n")
    res = run("urlfilter", "--in", src, "--out", tmp_path / "o", "--banned-words", bad, ok=False)
    assert res.exit_code == 1 and f"{bad}:2: not a word" in res.stderr
    res = run("urlfilter", "--in", src, "--out", tmp_path / "o", "--blocklist", tmp_path / "missing", ok=False)
    assert res.exit_code == 1 and "no such blocklist" in res.stderr
    res = run("urlfilter", "--in", src, "--out", tmp_path / "o", "--blocklist", root, "--categories", "gambling", ok=False)
    assert res.exit_code == 1 and "no category gambling" in res.stderr and "it has: adult" in res.stderr
    res = run("urlfilter", "--in", src, "--out", tmp_path / "o", "--soft-word-threshold", "0", ok=False)
    assert res.exit_code == 2


def test_categories_and_plain_domain_files(tmp_path):
    root = lists_dir(tmp_path, "porn.example-adult.com\n")
    lists_dir(tmp_path, "casino.example-bet.com\n", category="gambling")
    both = URLFilterStage(blocklist=[str(root)], categories=["adult", "gambling"], **no_words())
    assert decide(both, "https://casino.example-bet.com/") == "url:blocked_domain"
    adult = URLFilterStage(blocklist=[str(root)], **no_words())  # default: adult
    assert decide(adult, "https://casino.example-bet.com/") is None
    every = URLFilterStage(blocklist=[str(root)], categories=["all"], **no_words())
    assert decide(every, "https://casino.example-bet.com/") == "url:blocked_domain"
    plain = words_file(tmp_path, "my_domains.txt", "*.wild.org\n.dot.org\n")
    st = URLFilterStage(blocklist=[str(plain)], **no_words())
    assert decide(st, "https://a.wild.org/") == decide(st, "https://dot.org/") == "url:blocked_domain"


def test_changed_list_changes_the_parameters(tmp_path):
    a = stage(tmp_path, "one.com\n").params()
    (tmp_path / "ut1" / "adult" / "domains").write_text("one.com\ntwo.com\n")
    b = stage(tmp_path).params()
    assert a["lists"][0]["file"] == b["lists"][0]["file"] and a["lists"][0]["sha256"] != b["lists"][0]["sha256"]


# --------------------------------------------------------------------------- the command


def write_docs(path: Path, rows: list[tuple[str | None, str]], with_url: bool = True) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(
        [{"id": f"d{i}", "text": f"text {i}", "source": s, "url": u, "meta": None} for i, (u, s) in enumerate(rows)], schema=BASE_SCHEMA
    )
    if not with_url:
        table = table.drop_columns(["url"])
    pq.write_table(table, path / "part-00000.parquet")
    return path


def test_cli_reasons_counters_and_unparsable_urls(tmp_path, run):
    rows = [
        ("https://www.pornhub.com/x", "cc/a"),
        ("https://news.example.org/story", "cc/a"),
        ("http://exa mple.com/", "cc/a"),  # does not parse: its own reason, never a crash
        ("mailto:someone@example.org", "cc/a"),
        (None, "pile/Wikipedia"),  # no URL: passes
        ("   ", "cc/a"),  # blank: as no URL
        ("https://example.com/bdsm", "cc/b"),
        ("https://Bücher.de/", "cc/b"),
    ]
    src = write_docs(tmp_path / "in", rows)
    out = tmp_path / "out"
    res = run("urlfilter", "--in", src, "--out", out, "--keep-rejected", "--workers", "1")
    assert "urlfilter: 8 -> 4 docs" in res.stdout
    assert sorted(pd.read_parquet(out)["id"]) == ["d1", "d4", "d5", "d7"]
    rej = pd.read_parquet(out / "_rejected")
    assert dict(zip(rej["id"], rej["reason"])) == {
        "d0": "url:blocked_domain",
        "d2": "url:unparsable",
        "d3": "url:unparsable",
        "d6": "url:banned_word",
    }
    rec = read_success(out)
    assert rec["counters"]["urlfilter"] == {"checked": 6, "missing": 2, "blocked_domain": 1, "unparsable": 2, "banned_word": 1}
    assert rec["counters"]["first_error"] == {"url:unparsable": "http://exa mple.com/"}
    assert {r: v["docs"] for r, v in rec["rejected"].items()} == {"url:blocked_domain": 1, "url:unparsable": 2, "url:banned_word": 1}
    assert rec["sections"] == {"urlfilter": "counters.urlfilter"}


def test_cli_no_url_column_and_only_unparsable(tmp_path, run):
    src = write_docs(tmp_path / "in", [("https://pornhub.com/", "pile/x"), ("https://a.org/", "pile/x")], with_url=False)
    res = run("urlfilter", "--in", src, "--out", tmp_path / "o", "--workers", "1")
    assert "2 -> 2 docs" in res.stdout
    assert read_success(tmp_path / "o")["counters"]["urlfilter"] == {"checked": 0, "missing": 2}
    # every URL unparsable: the stage kept nothing because of an error reason, and says so in one line
    bad = write_docs(tmp_path / "bad", [("not a url", "cc/x"), ("mailto:x@y.z", "cc/x")])
    res = run("urlfilter", "--in", bad, "--out", tmp_path / "o2", "--workers", "1", ok=False)
    assert res.exit_code == 1 and "url:unparsable" in res.stderr and "not a url" in res.stderr and "Traceback" not in res.stderr
