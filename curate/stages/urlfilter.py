"""URL blocklists and banned words in the URL (the ``urlfilter`` stage), as FineWeb's URL filter uses them.

A document is dropped, with the first reason that holds, when its URL

1. ``url:unparsable``: does not parse or has no valid host name (counted, never a crash; a
   stage that kept nothing because of it fails, as for any error reason);
2. ``url:blocked_domain``: has a host that is on a domain list or is a subdomain of one: a set
   lookup of ``a.b.example.co.uk``, ``b.example.co.uk``, ``example.co.uk``, ``co.uk``, ``uk``
   (an IP address host is looked up as it is);
3. ``url:blocked_url``: is on a URL list, or lies under one (UT1's and squidGuard's ``urls``
   files: ``host/path`` without the scheme and ``www.``; ``example.com/dir`` blocks
   ``http://www.example.com/dir/page.html``): a set lookup of the URL and its parent paths;
4. ``url:banned_word``: holds a banned word as a whole word (words are the runs of letters and
   digits of the lower-cased URL);
5. ``url:soft_banned_words``: holds at least ``--soft-word-threshold`` different soft-banned words;
6. ``url:banned_subword``: holds a banned subword anywhere in the URL's letters and digits run
   together (``2 girls 1 cup`` matches ``.../2-Girls_1cup.html``).

Documents without a URL (no ``url`` column, null or blank) pass. Counters under ``urlfilter``:
``checked``, ``missing`` and one per reason (``blocked_domain``, ...). Host names and domain lists are compared
lower-cased and in IDNA form (punycode, UTS 46 non-transitional: ``Bücher.de`` is
``xn--bcher-kva.de``, ``faß.de`` is ``xn--fa-hia.de``), with a trailing dot removed.

Lists are UT1's format: a blocklist directory holds one folder per category, each with a
``domains`` and/or a ``urls`` file (one entry per line, ``#`` comments); ``--categories`` picks
folders. A category folder or a single file of domains may be given instead. The word lists
(``banned_words.txt``, ``banned_subwords.txt``, ``soft_banned_words.txt``) hold one word or
phrase per line, compared with its letters and digits only and lower-cased. A line that is not a
domain, URL or word is an error naming the file and line.

Lists are read once per process (the parent checks them before any work; each worker reads them
again, by path, so they must be readable on every worker, as ``langid --model`` is). Their
sha256 is part of the recorded parameters: a changed list makes an output stale.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from ipaddress import IPv6Address, ip_address
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.compute as pc

from curate.errors import CurateError, ParamError
from curate.registry import stage
from curate.runtime import Batch, Counters, Decisions, DocStage, param
from curate.storage import file_sha256

RESOURCES = Path(__file__).resolve().parents[1] / "resources" / "urlfilter"
DEFAULT_BLOCKLIST = RESOURCES / "blocklist"
DEFAULT_WORDS = {
    "banned_words": RESOURCES / "banned_words.txt",
    "banned_subwords": RESOURCES / "banned_subwords.txt",
    "soft_banned_words": RESOURCES / "soft_banned_words.txt",
}
NONE = "none"
LIST_FILES = ("domains", "urls")  # a UT1 category folder's files

_HOST = re.compile(r"(?:[a-z0-9_-]{1,63}\.)*[a-z0-9_-]{1,63}")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_WWW = re.compile(r"www\d{0,3}\.")
_NOT_WORD = re.compile(r"[\W_]+")


def normalise_host(host: str) -> str | None:
    """A host name lower-cased, in IDNA (punycode) form, without a trailing dot; an IP address compressed; None if neither."""
    h = host.strip()
    if h.startswith("[") and h.endswith("]"):
        h = h[1:-1]
    if ":" in h:
        try:
            return str(IPv6Address(h.split("%", 1)[0]))
        except ValueError:
            return None
    if h.endswith("."):
        h = h[:-1]
    if not h:
        return None
    if not h.isascii():
        import idna

        try:
            h = idna.encode(h, uts46=True, transitional=False).decode("ascii")
        except (idna.IDNAError, UnicodeError, ValueError):
            try:  # IDNA 2003 (Python's codec) takes what IDNA 2008 refuses: underscores, symbols (i❤.ws)
                h = h.encode("idna").decode("ascii")
            except UnicodeError:
                return None
    h = h.lower()
    if len(h) > 253 or not _HOST.fullmatch(h):
        return None
    return h


def is_ip(host: str) -> bool:
    if ":" in host:
        return True
    if not host[-1].isdigit():
        return False
    try:
        ip_address(host)
    except ValueError:
        return False
    return True


def host_suffixes(host: str) -> list[str]:
    """``a.b.example.co.uk`` -> itself, ``b.example.co.uk``, ``example.co.uk``, ``co.uk``, ``uk``; an IP address -> itself."""
    if is_ip(host):
        return [host]
    out = [host]
    i = host.find(".")
    while i != -1:
        out.append(host[i + 1 :])
        i = host.find(".", i + 1)
    return out


def split_url(url: str) -> tuple[str, str, str] | None:
    """``(host, path, query)`` of a URL (host normalised), or None when it does not parse or has no host.

    A URL without a scheme (``example.com/x``, UT1's form) is read as ``http://``; one with a
    scheme but no ``//`` (``mailto:``, ``javascript:``) has no host.
    """
    u = url.strip()
    if not u or any(ch.isspace() for ch in u):
        return None
    if "://" not in u:
        if u.startswith("//"):
            u = "http:" + u
        elif _SCHEME.match(u) and not re.match(r"[^:/]+:\d", u):  # mailto:..., but not example.com:8080/...
            return None
        else:
            u = "http://" + u
    try:
        parts = urlsplit(u)
        host = parts.hostname
    except ValueError:
        return None
    if not host:
        return None
    h = normalise_host(host)
    if h is None:
        return None
    return h, parts.path, parts.query


def url_keys(host: str, path: str, query: str) -> list[str]:
    """The keys a URL is looked up under in a URL list: ``host/path?query``, ``host/path`` and every parent path, ``host``."""
    m = _WWW.match(host)
    h = host[m.end() :] if m and "." in host[m.end() :] else host
    path = path.rstrip("/")
    keys = [h + path + "?" + query] if query else []
    while True:
        keys.append(h + path)
        if not path:
            return keys
        path = path[: path.rfind("/")]


def url_key(entry: str) -> str | None:
    """A URL-list entry as its lookup key (``host/path``, scheme, ``www.`` and trailing ``/`` removed); None if malformed."""
    parts = split_url(entry)
    if parts is None:
        return None
    return url_keys(*parts)[0]


def normalise_word(word: str) -> str:
    """A list word as it is compared: its letters and digits, lower-cased (``2 Girls 1 Cup`` -> ``2girls1cup``)."""
    return _NOT_WORD.sub("", word.lower())


# --------------------------------------------------------------------------- reading lists


def _lines(path: Path):
    """``(line number, stripped line)`` of the entries of a list file (blank lines and ``#`` comments skipped)."""
    try:
        with open(path, encoding="utf-8", errors="strict") as f:
            for n, raw in enumerate(f, 1):
                line = raw.strip()
                if line and not line.startswith("#"):
                    yield n, line
    except UnicodeDecodeError as exc:
        raise CurateError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except IsADirectoryError:
        raise CurateError(f"{path}: is a directory, not a list file") from None
    except OSError as exc:
        raise CurateError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _bad(path: Path, n: int, line: str, what: str) -> CurateError:
    shown = line if len(line) <= 80 else line[:77] + "..."
    return CurateError(f"{path}:{n}: not {what}: {shown!r} (one entry per line, '#' starts a comment)")


def read_domains(path: Path) -> set[str]:
    """A domains file: one domain (or IP address) per line; ``*.example.com`` and ``.example.com`` mean ``example.com``."""
    out: set[str] = set()
    for n, line in _lines(path):
        d = line[2:] if line.startswith("*.") else line[1:] if line.startswith(".") else line
        h = normalise_host(d) if "/" not in d else None
        if h is None:
            raise _bad(path, n, line, "a domain" + (" (a URL? put it in a urls file)" if "/" in d else ""))
        out.add(h)
    return out


def read_urls(path: Path) -> set[str]:
    """A urls file: ``host/path`` per line (a scheme and ``www.`` are allowed and removed)."""
    out: set[str] = set()
    for n, line in _lines(path):
        key = url_key(line)
        if key is None:
            raise _bad(path, n, line, "a URL")
        out.add(key)
    return out


def read_words(path: Path) -> set[str]:
    """A word list: one word or phrase per line."""
    out: set[str] = set()
    for n, line in _lines(path):
        w = normalise_word(line)
        if not w:
            raise _bad(path, n, line, "a word (no letter or digit)")
        out.add(w)
    return out


@dataclass(frozen=True)
class Lists:
    """The lists one stage checks URLs against."""

    domains: frozenset[str]
    urls: frozenset[str]
    banned_words: frozenset[str]
    banned_subwords: tuple[str, ...]
    soft_banned_words: frozenset[str]

    @functools.cached_property
    def subword_pattern(self) -> str:
        return "|".join(re.escape(w) for w in sorted(self.banned_subwords, key=lambda w: (-len(w), w)))


_READERS = {"domains": read_domains, "urls": read_urls, "banned_words": read_words, "banned_subwords": read_words,
            "soft_banned_words": read_words}  # fmt: skip


def _stamp(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


@functools.lru_cache(maxsize=2)
def load_lists(files: tuple[tuple[str, str, int, int], ...]) -> Lists:
    """Read ``(kind, path, size, mtime_ns)`` files once per process; a file changed since it was checked is an error."""
    sets: dict[str, set[str]] = {k: set() for k in _READERS}
    for kind, path, size, mtime in files:
        p = Path(path)
        try:
            now = _stamp(p)
        except OSError as exc:
            raise CurateError(f"{p}: cannot read: {exc.strerror or exc}") from None
        if now != (size, mtime):
            raise CurateError(f"{p}: changed while the stage ran; run it again")
        sets[kind] |= _READERS[kind](p)
    return Lists(frozenset(sets["domains"]), frozenset(sets["urls"]), frozenset(sets["banned_words"]),
                 tuple(sorted(sets["banned_subwords"])), frozenset(sets["soft_banned_words"]))  # fmt: skip


def blocklist_files(path: Path, categories: list[str] | None) -> list[tuple[str, Path]]:
    """The ``(kind, file)`` lists of one ``--blocklist`` PATH: a file of domains, a category folder, or a UT1 tree."""
    if not path.exists():
        raise CurateError(f"{path}: no such blocklist file or directory")
    if path.is_file():
        return [("domains", path)]
    direct = [(k, path / k) for k in LIST_FILES if (path / k).is_file()]
    if direct:
        return direct
    found = sorted(d.name for d in path.iterdir() if d.is_dir() and any((d / k).is_file() for k in LIST_FILES))
    if not found:
        raise CurateError(f"{path}: neither a list file nor a blocklist directory (no domains or urls file in it or its folders)")
    wanted = found if categories is None else categories
    missing = [c for c in wanted if c not in found]
    if missing:
        raise CurateError(f"{path}: no category {', '.join(missing)} (with a domains or urls file); it has: {', '.join(found)}")
    return [(k, path / c / k) for c in wanted for k in LIST_FILES if (path / c / k).is_file()]


# --------------------------------------------------------------------------- the stage


@stage("urlfilter", section="select", order=30)
@dataclass
class URLFilterStage(DocStage):
    """Drop documents whose URL is on a blocklist (a domain or its subdomains, a URL) or holds banned words.

    Reasons: url:blocked_domain, url:blocked_url, url:banned_word, url:soft_banned_words,
    url:banned_subword, url:unparsable. Documents without a URL pass (counted: urlfilter.missing).
    Lists are UT1's format (a directory of category folders, each with domains and urls
    files); the shipped default is a small sample (209 well-known adult domains, the .xxx
    .porn .adult .sex top-level domains) and FineWeb's word lists: pass the real UT1 with
    --blocklist.

    \b
    Example:
      curate urlfilter --in out/filter --out out/urlfilter
      curate urlfilter --in out/filter --out out/urlfilter --blocklist ut1/blacklists --categories adult,phishing
    """

    name: ClassVar[str] = "urlfilter"
    sections: ClassVar[dict[str, str]] = {"urlfilter": "counters.urlfilter"}
    error_reasons: ClassVar[frozenset[str]] = frozenset({"url:unparsable"})
    blocklist: list[str] = param([], "A blocklist: a UT1 directory of category folders (each with domains and urls files), one "
                                 "category folder, or a file of domains (repeatable) [default: the shipped sample]; 'none' for none.",
                                 metavar="PATH", multiple=True, show_default=False, record=False)  # fmt: skip
    categories: list[str] = param(["adult"], "Category folders of a UT1 blocklist directory to use (repeatable or comma-separated); "
                                  "'all' for every one.", metavar="NAME", multiple=True, split=True)  # fmt: skip
    banned_words: str | None = param(None, "Words that drop a URL holding one of them as a word [default: the shipped FineWeb "
                                     "list]; 'none' for none.", metavar="FILE", record=False)  # fmt: skip
    soft_banned_words: str | None = param(None, "Words that drop a URL holding --soft-word-threshold of them [default: the "
                                          "shipped FineWeb list]; 'none' for none.", metavar="FILE", record=False)  # fmt: skip
    banned_subwords: str | None = param(None, "Words that drop a URL holding one of them anywhere in its letters and digits "
                                        "[default: the shipped FineWeb list]; 'none' for none.", metavar="FILE", record=False)  # fmt: skip
    soft_word_threshold: int = param(2, "How many different soft-banned words drop a URL.", min=1)

    def __post_init__(self) -> None:
        if isinstance(self.blocklist, str):
            self.blocklist = [self.blocklist]
        if isinstance(self.categories, str):
            self.categories = [self.categories]
        cats = [c.strip() for item in (self.categories or []) for c in str(item).split(",") if c.strip()]
        if not cats:
            raise ParamError("--categories", "name at least one category, or 'all'")
        if "all" in cats and len(cats) > 1:
            raise ParamError("--categories", "'all' cannot be combined with categories")
        self.categories = cats
        if self.soft_word_threshold < 1:
            raise ParamError("--soft-word-threshold", f"must be at least 1, got {self.soft_word_threshold}")
        paths = [str(b) for b in (self.blocklist or [])]
        if NONE in paths and len(paths) > 1:
            raise ParamError("--blocklist", "'none' cannot be combined with blocklists")
        files: list[tuple[str, Path]] = []
        if paths != [NONE]:
            for b in paths or [str(DEFAULT_BLOCKLIST)]:
                files += blocklist_files(Path(b).expanduser(), None if cats == ["all"] else cats)
        for kind, default in DEFAULT_WORDS.items():
            value = getattr(self, kind)
            if value == NONE:
                continue
            p = Path(value).expanduser() if value else default
            if not p.is_file():
                raise CurateError(f"{p}: no such word list file (--{kind.replace('_', '-')})")
            files.append((kind, p))
        seen: set[tuple[str, str]] = set()
        spec = []
        for kind, p in files:
            key = (kind, str(p.resolve()))
            if key not in seen:
                seen.add(key)
                spec.append((kind, key[1], *_stamp(p)))
        self._spec: tuple[tuple[str, str, int, int], ...] = tuple(spec)
        self._digests = [(kind, self._shown(Path(path)), file_sha256(Path(path))) for kind, path, _, _ in spec]
        self.lists()  # malformed lines are an error now, before any work

    @staticmethod
    def _shown(p: Path) -> str:
        try:
            return "shipped:" + str(p.relative_to(RESOURCES))
        except ValueError:
            return str(p)

    def derived_params(self) -> dict[str, Any]:
        """The lists by content (sha256), not by the paths given: the path options are not recorded themselves."""
        return {"lists": [{"kind": k, "file": f, "sha256": d} for k, f, d in self._digests]}

    def lists(self) -> Lists:
        return load_lists(self._spec)

    def check(self, url: str, lists: Lists) -> str | None:
        """The reason ``url`` is dropped (without the banned-subword check, done per batch), or None."""
        parts = split_url(url)
        if parts is None:
            return "url:unparsable"
        host, path, query = parts
        if lists.domains and any(s in lists.domains for s in host_suffixes(host)):
            return "url:blocked_domain"
        if lists.urls and any(k in lists.urls for k in url_keys(host, path, query)):
            return "url:blocked_url"
        if lists.banned_words or lists.soft_banned_words:
            words = set(_NOT_WORD.split(url.lower()))
            if not lists.banned_words.isdisjoint(words):
                return "url:banned_word"
            if lists.soft_banned_words and len(lists.soft_banned_words & words) >= self.soft_word_threshold:
                return "url:soft_banned_words"
        return None

    def subword_hits(self, urls: list[str], lists: Lists) -> list[bool]:
        """Whether each URL holds a banned subword (Arrow's RE2 over the batch; a set scan if the pattern is too large for it)."""
        if not lists.banned_subwords or not urls:
            return [False] * len(urls)
        squashed = [_NOT_WORD.sub("", u.lower()) for u in urls]
        try:
            return pc.match_substring_regex(pa.array(squashed, pa.string()), lists.subword_pattern).to_pylist()
        except (pa.ArrowInvalid, pa.ArrowException):
            by_len: dict[int, set[str]] = {}
            for w in lists.banned_subwords:
                by_len.setdefault(len(w), set()).add(w)
            return [any(s[i : i + n] in ws for n, ws in by_len.items() for i in range(len(s) - n + 1)) for s in squashed]

    def decide_batch(self, batch: Batch) -> Decisions:
        table = batch.table
        lists = self.lists()
        n = table.num_rows
        counters = Counters(urlfilter={"checked": 0, "missing": 0})
        c = counters["urlfilter"]
        reasons: list[str | None] = [None] * n
        if "url" not in table.column_names:
            c["missing"] = n
        else:
            urls = table.column("url").to_pylist()
            pending: list[int] = []
            for i, u in enumerate(urls):
                if u is None or not u.strip():
                    c["missing"] += 1
                    continue
                c["checked"] += 1
                reasons[i] = self.check(u, lists)
                if reasons[i] is None:
                    pending.append(i)
            for i, hit in zip(pending, self.subword_hits([urls[i] for i in pending], lists)):
                if hit:
                    reasons[i] = "url:banned_subword"
            first = next((urls[i] for i, r in enumerate(reasons) if r == "url:unparsable"), None)
            if first is not None:
                counters.first("first_error", "url:unparsable", first[:200])
        for r in reasons:
            if r is not None:
                counters.add("urlfilter", r.split(":", 1)[1])
        return Decisions(reasons, counters=counters)
