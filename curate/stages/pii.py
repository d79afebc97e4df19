"""E-mail and IP address redaction (the ``pii`` stage), as FineWeb does it, with fewer false positives.

Every e-mail address and every *public* IPv4 and IPv6 address in a document's text is replaced
with a fixed placeholder (``email@example.com``, ``192.0.2.1``, ``2001:db8::1`` by default);
phone numbers optionally. Nothing is dropped: the stage counts what it replaced (``pii.email``,
``pii.ip``, ``pii.phone``, ``pii.docs``) and what it saw but left alone (``pii_left.*``).

What is an address (compared with datatrove 0.10.1's ``PIIFormatter``, which FineWeb used):

* **E-mail**: a local part of letters, digits and ``. _ % + ' - ! $ * ^ ` { | } ~`` that starts
  at a word boundary, ``@``, then dot-separated host labels and a top-level label of 2-63
  letters (or ``xn--`` punycode); letters and digits of any script, so internationalised
  addresses (``jöran@bücher.de``, RFC 6531) are found, which datatrove's ASCII pattern misses
  or cuts short. Unlike datatrove's: ``/ = ? & #`` do not belong to the local
  part (in web text they are a URL's path or query: ``?email=jo@x.org`` loses only the address),
  a numeric top level is not an address (``lodash@4.17.21``), nor is an image name
  (``logo@2x.png``), and the reserved example domains (``example.com/.org/.net``, ``.example``,
  ``.test``, ``.invalid``, ``.localhost``; RFC 2606, 6761) are left alone, the placeholder among them.
* **IPv4**: four decimal octets 0-255 without leading zeros, not part of a longer dotted or
  alphanumeric token (``1.2.3.4.5``, ``v1.2.3.4``, ``11.22.33.444`` are not addresses; datatrove
  replaces a piece of each), not after a version word (``version 1.2.3.4``, ``build 1.2.3.4``,
  ``==1.2.3.4``, ``Chrome/1.2.3.4``) nor followed by a pre-release tag (``1.2.3.4-beta``).
* **IPv6**: a colon-hex run that ``ipaddress`` accepts (``::ffff:1.2.3.4`` included; a zone
  ``%eth0`` is not part of it). datatrove finds none.
* **Public**: IPv4 outside 0/8, 10/8, 100.64/10, 127/8, 169.254/16, 172.16/12, 192.0.0/24,
  192.0.2/24, 192.88.99/24, 192.168/16, 198.18/15, 198.51.100/24, 203.0.113/24, 224/4 (multicast)
  and 240/4 (reserved, broadcast); IPv6 inside 2000::/3 (global unicast) but outside
  2001::/23 (IETF protocol assignments), 2001:db8::/32 and 3fff::/20 (documentation); an
  IPv4-mapped IPv6 address is judged by its IPv4 address. A fixed table, so the answer does not
  change with the Python version (3.11's ``is_global``, which datatrove uses, calls multicast global).

The placeholders are themselves reserved (RFC 2606, 5737, 3849), so running the stage twice
changes nothing the second time. Speed: Arrow's RE2 picks the documents that can hold an
address (an ``@``, a digit-dot-digit run, two colons close together) for the whole batch;
only those go through Python, and e-mail addresses are found from their ``@`` outwards instead of
trying the pattern at every character.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from ipaddress import AddressValueError, IPv6Address
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.errors import ParamError
from curate.registry import stage
from curate.runtime import Batch, Counters, Decisions, DocStage, param

# --------------------------------------------------------------------------- e-mail addresses

# The local part's characters: RFC 5322's atext without / = ? & # (a URL's path and query in web text).
# \w: letters and digits of every script too (RFC 6531 addresses: jöran@bücher.de).
_ATEXT = r"\w!$%'*+^`{|}~\-"
_LOCAL = re.compile(rf"[{_ATEXT}]+(?:\.[{_ATEXT}]+)*")  # matched on the reversed text before the "@" (it is symmetric)
_ALNUM = r"[^\W_]"  # a letter or digit, of any script
_LABEL = rf"{_ALNUM}(?:(?:{_ALNUM}|-)*{_ALNUM})?"
_DOMAIN = re.compile(rf"(?:{_LABEL}\.)+([^\W\d_]{{2,63}}|xn--[A-Za-z0-9-]*[A-Za-z0-9])(?![^\W_])")
_LOCAL_WINDOW = 256  # characters looked at before an "@" (more only when the local part fills them)
_IMAGE_SUFFIXES = frozenset({"png", "jpg", "jpeg", "gif", "svg", "webp", "bmp", "tif", "tiff", "ico", "avif"})
_RESERVED_DOMAINS = ("example.com", "example.org", "example.net")
_RESERVED_TLDS = frozenset({"example", "test", "invalid", "localhost"})


def _is_word(ch: str) -> bool:
    """Whether ``ch`` is a regex word character (``\\w`` on str)."""
    return ch.isalnum() or ch == "_"


def reserved_email_domain(domain: str) -> bool:
    """Domains reserved for examples and tests (RFC 2606, RFC 6761): their addresses are nobody's."""
    d = domain.lower()
    return d.rsplit(".", 1)[-1] in _RESERVED_TLDS or any(d == r or d.endswith("." + r) for r in _RESERVED_DOMAINS)


def find_email(text: str, at: int, floor: int = 0) -> tuple[int, int, str] | None:
    """The address around the ``@`` at ``at`` as ``(start, end, domain)``, or None; it starts at or after ``floor``."""
    m = _DOMAIN.match(text, at + 1)
    if m is None or m.group(1).lower() in _IMAGE_SUFFIXES:
        return None
    lo = max(floor, at - _LOCAL_WINDOW)
    r = _LOCAL.match(text[lo:at][::-1])
    if r is None:
        return None
    n = r.end()
    if n == at - lo and lo > floor:  # the local part fills the window: look further back
        r = _LOCAL.match(text[floor:at][::-1])
        n = r.end() if r else n
    start = at - n
    # the leftmost start at a word boundary (a word character after a non-word one), as \b does
    while start < at and not (_is_word(text[start]) and (start == 0 or not _is_word(text[start - 1]))):
        start += 1
    if start >= at:
        return None
    return start, m.end(), text[at + 1 : m.end()]


# --------------------------------------------------------------------------- IP addresses

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
# not inside a longer dotted or alphanumeric token: 1.2.3.4.5, v1.2.3.4, 11.22.33.444
_IPV4 = re.compile(rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?!\w|\.\d)")
_IPV6 = re.compile(r"(?<![\w.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?<=:)(?:\d{1,3}\.){3}\d{1,3})?(?![\w:]|\.\d)")
_VERSION_BEFORE = re.compile(
    r"(?:\b(?:v|ver|vers|version|versions|versão|versión|release|rel|build|firmware|fw|rev|revision|update|patch|kernel)"
    r"\.?\s*[:#]?\s*|[A-Za-z]/|[=<>~!]=\s*)$",
    re.IGNORECASE,
)
_VERSION_AFTER = re.compile(r"-[A-Za-z]")  # 1.2.3.4-beta, -rc1, -SNAPSHOT (an address range goes on with a digit)

_V4_NOT_PUBLIC = (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
    "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
    "224.0.0.0/4", "240.0.0.0/4",
)  # fmt: skip
_V6_NOT_PUBLIC = ("2001::/23", "2001:db8::/32", "3fff::/20")


def _ranges(cidrs: tuple[str, ...], bits: int) -> list[tuple[int, int]]:
    from ipaddress import ip_network

    out = []
    for c in cidrs:
        net = ip_network(c)
        out.append((int(net.network_address), int(net.network_address) + (1 << (bits - net.prefixlen)) - 1))
    return out


_V4_RANGES = _ranges(_V4_NOT_PUBLIC, 32)
_V6_RANGES = _ranges(_V6_NOT_PUBLIC, 128)


def public_ipv4(address: str) -> bool:
    """Whether a dotted quad (already checked by the pattern) is a public address."""
    a, b, c, d = (int(x) for x in address.split("."))
    n = (a << 24) | (b << 16) | (c << 8) | d
    return not any(lo <= n <= hi for lo, hi in _V4_RANGES)


def public_ipv6(address: IPv6Address) -> bool:
    """Whether an IPv6 address is public: global unicast (2000::/3) outside the special and documentation blocks."""
    mapped = address.ipv4_mapped
    if mapped is not None:
        return public_ipv4(str(mapped))
    n = int(address)
    if not 0x2000 <= n >> 112 <= 0x3FFF:
        return False
    return not any(lo <= n <= hi for lo, hi in _V6_RANGES)


def version_like(text: str, start: int, end: int) -> bool:
    """A dotted quad that is a version number by its context: after a version word or ``==``, before ``-beta``."""
    return bool(_VERSION_BEFORE.search(text, max(0, start - 24), start)) or bool(_VERSION_AFTER.match(text, end))


# --------------------------------------------------------------------------- phone numbers (optional)

_PHONE = re.compile(
    r"(?<![\w+.\-/])(?:"
    r"\+\d{1,3}[ .\-]?(?:\(\d{1,4}\)[ .\-]?)?\d{1,4}(?:[ .\-]?\d{2,4}){1,4}"  # +44 20 7946 0958, +1 (415) 555-2671
    r"|\(\d{3}\)[ ]?\d{3}[ .\-]\d{4}"  # (415) 555-2671
    r"|\d{3}([ .\-])\d{3}\1\d{4}"  # 415-555-2671, 415.555.2671
    r"|0\d{1,4}([ .\-])\d{2,4}(?:\2\d{2,4}){1,3}"  # 020 7946 0958, 06 12 34 56 78 (a national trunk prefix)
    r")(?!\w|[.\-]\d)"
)


def _phone_digits_ok(s: str) -> bool:
    n = sum(ch.isdigit() for ch in s)
    return 8 <= n <= 15 if s.startswith("+") else 9 <= n <= 12


# --------------------------------------------------------------------------- the scanner

# Arrow (RE2) pre-checks over the whole batch: only texts that match go to Python.
_HINT_IP = r"[0-9]\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]|:[0-9A-Fa-f]{0,4}:"
_HINT_PHONE = r"[0-9][ .\-)][0-9]{2,4}[ .\-][0-9]{2,4}"


@dataclass
class Redactor:
    """Finds and replaces addresses in one text; counts in ``counts`` (replaced) and ``left`` (seen, left alone)."""

    emails: bool = True
    ips: bool = True
    phones: bool = False
    email_placeholder: str = "email@example.com"
    ipv4_placeholder: str = "192.0.2.1"
    ipv6_placeholder: str = "2001:db8::1"
    phone_placeholder: str = "+1-555-0100"

    def __post_init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.left: dict[str, int] = {}

    def _count(self, d: dict[str, int], key: str) -> None:
        d[key] = d.get(key, 0) + 1

    def redact(self, text: str) -> str:
        """The text with its addresses replaced (counted in ``self.counts`` and ``self.left``)."""
        if self.emails and "@" in text:
            text = self._emails(text)
        if self.ips:
            if ":" in text:
                text = _IPV6.sub(self._ipv6, text)
            if "." in text:
                text = _IPV4.sub(self._ipv4, text)
        if self.phones:
            text = _PHONE.sub(self._phone, text)
        return text

    def _emails(self, text: str) -> str:
        parts: list[str] = []
        last = 0
        at = text.find("@")
        while at != -1:
            found = find_email(text, at, last)
            if found is None:
                at = text.find("@", at + 1)
                continue
            start, end, domain = found
            if reserved_email_domain(domain):
                self._count(self.left, "email_reserved")
            elif text[start:end] != self.email_placeholder:
                parts += (text[last:start], self.email_placeholder)
                last = end
                self._count(self.counts, "email")
            at = text.find("@", end)
        if not parts:
            return text
        parts.append(text[last:])
        return "".join(parts)

    def _ipv4(self, m: re.Match[str]) -> str:
        s = m.group()
        if not public_ipv4(s):
            self._count(self.left, "ip_not_public")
            return s
        if version_like(m.string, m.start(), m.end()):
            self._count(self.left, "ip_version_like")
            return s
        if s == self.ipv4_placeholder:
            return s
        self._count(self.counts, "ip")
        return self.ipv4_placeholder

    def _ipv6(self, m: re.Match[str]) -> str:
        s = m.group()
        try:
            address = IPv6Address(s)
        except (AddressValueError, ValueError):
            return s  # 12:30:45, a MAC address, C++'s a::b: not an address
        if not public_ipv6(address):
            self._count(self.left, "ip_not_public")
            return s
        if s == self.ipv6_placeholder:
            return s
        self._count(self.counts, "ip")
        self._count(self.counts, "ipv6")
        return self.ipv6_placeholder

    def _phone(self, m: re.Match[str]) -> str:
        s = m.group()
        if not _phone_digits_ok(s) or s == self.phone_placeholder:
            return s
        self._count(self.counts, "phone")
        return self.phone_placeholder


@stage("pii", section="select", order=20)
@dataclass
class PIIStage(DocStage):
    """Replace e-mail addresses and public IP addresses with fixed placeholders (FineWeb's PII step).

    Public IPv4 and IPv6 addresses only: private, loopback, link-local, multicast, reserved
    and documentation ranges, and version numbers (version 1.2.3.4, 1.2.3.4.5), are left
    alone. Nothing is dropped; counters: pii.email, pii.ip (pii.ipv6 of them), pii.phone,
    pii.docs (documents changed), pii_left.* (seen and left alone). By default only web
    text (--only-sources 'cc/*'); --only-sources '*' applies it to every source.

    \b
    Example:
      curate pii --in out/langid --out out/pii
      curate pii --in out/langid --out out/pii_all --only-sources '*' --phones
    """

    name: ClassVar[str] = "pii"
    sections: ClassVar[dict[str, str]] = {"pii": "counters.pii", "pii_left": "counters.pii_left"}
    option_defaults: ClassVar[dict[str, Any]] = {"only_sources": "cc/*"}
    emails: bool = param(True, "Replace e-mail addresses.", secondary="--no-emails")
    ips: bool = param(True, "Replace public IPv4 and IPv6 addresses.", secondary="--no-ips")
    phones: bool = param(False, "Also replace phone numbers (+CC international, North American and 0-prefixed national "
                         "formats; less precise than the others).", secondary="--no-phones")  # fmt: skip
    email_placeholder: str = param("email@example.com", "What an e-mail address becomes.", metavar="TEXT")
    ipv4_placeholder: str = param("192.0.2.1", "What a public IPv4 address becomes (a documentation address, RFC 5737).", metavar="TEXT")
    ipv6_placeholder: str = param("2001:db8::1", "What a public IPv6 address becomes (a documentation address, RFC 3849).", metavar="TEXT")
    phone_placeholder: str = param("+1-555-0100", "What a phone number becomes (with --phones).", metavar="TEXT")

    def __post_init__(self) -> None:
        if not (self.emails or self.ips or self.phones):
            raise ParamError("--no-emails", "with --no-ips too (and no --phones) there is nothing to replace")

    def redactor(self) -> Redactor:
        return Redactor(self.emails, self.ips, self.phones, self.email_placeholder, self.ipv4_placeholder, self.ipv6_placeholder,
                        self.phone_placeholder)  # fmt: skip

    def candidates(self, column: pa.ChunkedArray | pa.Array) -> np.ndarray:
        """Row numbers of the texts that may hold an address (Arrow's RE2 over the batch; a superset)."""
        masks = []
        if self.emails:
            masks.append(pc.match_substring(column, "@"))
        if self.ips:
            masks.append(pc.match_substring_regex(column, _HINT_IP))
        if self.phones:
            masks.append(pc.match_substring_regex(column, _HINT_PHONE))
        mask = masks[0]
        for m in masks[1:]:
            mask = pc.or_(mask, m)
        return np.flatnonzero(pc.fill_null(mask, False).to_numpy(zero_copy_only=False))

    def decide_batch(self, batch: Batch) -> Decisions:
        table = batch.table
        column = table.column("text")
        rows = self.candidates(column)
        red = self.redactor()
        changed_rows: list[int] = []
        changed_texts: list[str] = []
        if len(rows):
            for i, text in zip(rows.tolist(), column.take(pa.array(rows)).to_pylist()):
                if text is None:
                    continue
                new = red.redact(text)
                if new != text:
                    changed_rows.append(i)
                    changed_texts.append(new)
        counters = Counters(pii={"email": 0, "ip": 0, **red.counts, "docs": len(changed_rows)})
        if self.phones:
            counters["pii"].setdefault("phone", 0)
        if red.left:
            counters["pii_left"] = red.left
        if not changed_rows:
            return Decisions(counters=counters)
        mask = np.zeros(table.num_rows, dtype=bool)
        mask[changed_rows] = True
        values = pc.replace_with_mask(column.combine_chunks().cast(pa.large_string()), pa.array(mask),
                                      pa.array(changed_texts, pa.large_string()))  # fmt: skip
        return Decisions(texts=values, counters=counters)

    def summary(self, record: dict[str, Any]) -> list[str]:
        c = (record.get("counters") or {}).get("pii") or {}
        parts = [f"{c.get('email', 0):,} e-mail address(es)", f"{c.get('ip', 0):,} IP address(es)"]
        if "phone" in c:
            parts.append(f"{c['phone']:,} phone number(s)")
        line = f"  replaced {', '.join(parts)} in {c.get('docs', 0):,} document(s)"
        lines = super().summary(record)
        return [lines[0], line, *lines[1:]]
