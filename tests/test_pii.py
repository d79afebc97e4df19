"""The pii stage: e-mail and public IP addresses replaced with placeholders (issue 21).

Planted cases through the core (:class:`Redactor`) and through the CLI: addresses in many
forms, addresses that must be left alone (private, loopback, documentation, reserved example
domains, version numbers), IPv6, idempotence, --only-sources, counters and the summary line."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.dataset import read_success
from curate.schema import BASE_SCHEMA
from curate.stages.pii import PIIStage, Redactor, public_ipv4, public_ipv6
from tests.conftest import write_raw_shard

E, V4, V6 = "email@example.com", "192.0.2.1", "2001:db8::1"


def redact(text: str, **kw) -> str:
    return Redactor(**kw).redact(text)


# --------------------------------------------------------------------------- e-mail addresses


@pytest.mark.parametrize(
    "text,expected",
    [
        ("write to john.doe@gmail.com today", f"write to {E} today"),
        ("<a.b+tag@sub.mail.co.uk>", f"<{E}>"),
        ("Mail: O'Brien@IBM.COM.", f"Mail: {E}."),
        ("foo_bar-baz%x@my-host.example-mail.org,", f"{E},"),
        ("(first.last@company.museum)", f"({E})"),
        ("mailto:info@domain.io", f"mailto:{E}"),
        ("a@b.co and c@d.info", f"{E} and {E}"),
        ("x@xn--bcher-kva.de", E),  # punycode domain
        ("jöran@bücher.de", E),  # internationalised (RFC 6531): local part and domain
        ("контакт@пример.рф", E),
        ("?email=jo@x.org&a=1", f"?email={E}&a=1"),  # only the address, not the URL query around it
        ("https://user:secret@host.net/path", f"https://user:{E}/path"),
        ("line one\nsupport@company.com\nline three", f"line one\n{E}\nline three"),
        ("foo@bar.com.", f"{E}."),
    ],
)
def test_email_addresses_are_replaced(text, expected):
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "lodash@4.17.21",  # an npm package version
        "logo@2x.png and icon@3x.webp",  # retina image names
        "me@example.com, you@test.example.org, x@sub.example.net",  # reserved example domains (RFC 2606)
        "a@host.test b@host.invalid c@host.localhost d@mail.example",
        "x@localhost",  # no dot, no top-level domain
        "user@server",
        "a@b.c",  # a one-letter top level
        "x.@y.com",  # a local part may not end with a dot
        "@handle on twitter",
        "price 5 @ 3.99",
        "email@example.com",  # the placeholder itself
    ],
)
def test_things_that_are_not_addresses_are_left_alone(text):
    assert redact(text) == text


def test_email_counters_and_reserved_domains_counted_as_left():
    r = Redactor()
    r.redact("a@gmail.com b@yahoo.fr me@example.com")
    assert r.counts == {"email": 2}
    assert r.left == {"email_reserved": 1}


def test_long_local_part_and_many_at_signs_stay_linear():
    text = "x" * 300 + "@domain.com " + "@" * 20000 + " a@" * 5000
    out = redact(text)
    assert out.startswith(E + " ") and out.count(E) == 1


# --------------------------------------------------------------------------- IP addresses


@pytest.mark.parametrize(
    "text,expected",
    [
        ("server at 8.8.8.8 answers", f"server at {V4} answers"),
        ("IP 93.184.216.34.", f"IP {V4}."),
        ("93.184.216.34:8080", f"{V4}:8080"),
        ("http://93.184.216.34/x", f"http://{V4}/x"),
        ("(1.1.1.1)", f"({V4})"),
        ("8.8.8.8/24", f"{V4}/24"),
        ("a 2606:4700:4700::1111 b", f"a {V6} b"),
        ("[2a00:1450:4001:81c::200e]:443", f"[{V6}]:443"),
        ("2001:4860:4860:0:0:0:0:8888", V6),
        ("::ffff:8.8.8.8", V6),  # IPv4-mapped, judged by its IPv4 address
    ],
)
def test_public_ip_addresses_are_replaced(text, expected):
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "10.0.0.1 172.16.5.4 192.168.1.1",  # private
        "127.0.0.1 and 0.0.0.0",  # loopback, this network
        "169.254.10.20",  # link-local
        "100.64.1.1",  # shared address space (carrier-grade NAT)
        "192.0.2.55 198.51.100.7 203.0.113.200",  # documentation (RFC 5737)
        "224.0.0.251 255.255.255.255 240.1.2.3",  # multicast, broadcast, reserved
        "1.2.3.4-beta",  # a pre-release tag follows
        "release 5.6.7.8-rc1",
        "version 1.2.3.4",
        "Version: 8.8.8.8",
        "v1.2.3.4 and ver. 10.2.3.4",
        "build 45.67.89.10",
        "pip install foo==1.2.3.4",
        "Chrome/91.0.4472.124 Safari/537.36",
        "1.2.3.4.5",  # part of a longer dotted number
        "11.22.33.444",  # an octet over 255: not an address, and no piece of it is one
        "01.02.03.04",  # leading zeros
        "3.14159.2.7",
        "::1 fe80::1%eth0 fc00::5",  # loopback, link-local, unique local
        "2001:db8::5 2001:0db8:85a3::8a2e:370:7334",  # documentation (RFC 3849)
        "::ffff:10.0.0.1",  # mapped private
        "at 12:30:45",  # a time
        "std::vector<int> a::b",  # C++
        "00:1a:2b:3c:4d:5e",  # a MAC address
        "192.0.2.1 2001:db8::1",  # the placeholders
    ],
)
def test_addresses_that_must_not_be_touched(text):
    assert redact(text) == text


def test_public_ranges_table():
    from ipaddress import IPv6Address

    assert public_ipv4("8.8.8.8") and public_ipv4("1.0.0.1") and public_ipv4("223.255.255.255")
    assert not public_ipv4("100.127.255.255") and public_ipv4("100.128.0.0")
    assert not public_ipv4("172.31.255.255") and public_ipv4("172.32.0.0")
    assert not public_ipv4("198.19.255.255") and public_ipv4("198.20.0.0")
    assert public_ipv6(IPv6Address("2606:4700::1")) and public_ipv6(IPv6Address("2a00::1"))
    assert not public_ipv6(IPv6Address("2001:db8:ffff::1")) and not public_ipv6(IPv6Address("3fff::1"))
    assert not public_ipv6(IPv6Address("ff02::1")) and not public_ipv6(IPv6Address("fd00::1"))


def test_ip_counters():
    r = Redactor()
    r.redact("8.8.8.8 10.0.0.1 version 9.9.9.9 2606:4700::1 ::1")
    assert r.counts == {"ip": 2, "ipv6": 1}
    assert r.left == {"ip_not_public": 2, "ip_version_like": 1}


# --------------------------------------------------------------------------- idempotence, options

MIXED = (
    "Contact sales@acme-corp.com or jöran@bücher.de; our server 93.184.216.34 (IPv6 2606:4700:4700::1111) "
    "runs version 1.2.3.4 behind 10.0.0.1. Call +44 20 7946 0958 or (415) 555-2671."
)


def test_running_twice_changes_nothing_the_second_time():
    once = redact(MIXED, phones=True)
    assert once != MIXED
    r = Redactor(phones=True)
    assert r.redact(once) == once
    assert r.counts == {}


def test_custom_placeholders_are_idempotent_too():
    kw = {"email_placeholder": "[EMAIL]", "ipv4_placeholder": "22.214.171.124", "ipv6_placeholder": "[IPV6]"}
    once = redact(MIXED, **kw)
    assert "[EMAIL]" in once and "22.214.171.124" in once and "[IPV6]" in once
    assert redact(once, **kw) == once


def test_phones_only_when_asked():
    assert redact(MIXED).count("+1-555-0100") == 0
    out = redact(MIXED, phones=True)
    assert out.count("+1-555-0100") == 2 and "7946" not in out and "555-2671" not in out
    assert redact("ISBN 978-3-16-148410-0 on 2024-01-15", phones=True) == "ISBN 978-3-16-148410-0 on 2024-01-15"


def test_switches():
    assert redact(MIXED, emails=False).count("@") == 2
    assert "93.184.216.34" in redact(MIXED, ips=False) and E in redact(MIXED, ips=False)
    with pytest.raises(Exception, match="nothing to replace"):
        PIIStage(emails=False, ips=False)


def test_batch_candidates_are_a_superset():
    """The Arrow pre-check skips only texts that cannot hold an address."""
    st = PIIStage()
    texts = ["plain text", "a@b.com", "1.2.3.4", "x ::1 y", None, "version 2", "12:30", "12:30:45"]
    rows = st.candidates(pa.array(texts, pa.large_string())).tolist()
    assert rows == [1, 2, 3, 7]  # "12:30" cannot be an IPv6 address (one colon)


# --------------------------------------------------------------------------- the command


def write_docs(path, rows):
    path.mkdir(parents=True, exist_ok=True)
    table = [{"id": f"d{i}", "text": t, "source": s, "url": None, "meta": None} for i, (t, s) in enumerate(rows)]
    pq.write_table(pa.Table.from_pylist(table, schema=BASE_SCHEMA), path / "part-00000.parquet")
    return path


def test_cli_replaces_in_web_sources_only_and_counts(tmp_path, run):
    src = write_docs(
        tmp_path / "in",
        [
            (MIXED, "cc/CC-MAIN-2024-10"),
            ("nothing to see here", "cc/CC-MAIN-2024-10"),
            ("mail me at a@b.org from 8.8.4.4", "cc/CC-MAIN-2024-10"),
            ("Enron mail: ken.lay@enron.com", "pile/Enron_Emails"),  # not a web source: left as it is by default
        ],
    )
    res = run("pii", "--in", src, "--out", tmp_path / "out", "--workers", "1")
    assert "replaced 3 e-mail address(es), 3 IP address(es) in 2 document(s)" in res.stdout
    out = pd.read_parquet(tmp_path / "out").set_index("id")["text"]
    assert len(out) == 4  # nothing is dropped
    assert out["d0"] == redact(MIXED)
    assert out["d1"] == "nothing to see here"
    assert out["d2"] == f"mail me at {E} from {V4}"
    assert out["d3"] == "Enron mail: ken.lay@enron.com"
    rec = read_success(tmp_path / "out")
    assert rec["counters"]["pii"] == {"email": 3, "ip": 3, "ipv6": 1, "docs": 2}
    assert rec["counters"]["pii_left"] == {"ip_not_public": 1, "ip_version_like": 1}
    assert rec["sections"]["pii"] == "counters.pii"
    # every source, phones too
    res = run("pii", "--in", src, "--out", tmp_path / "all", "--only-sources", "*", "--phones", "--workers", "1")
    out = pd.read_parquet(tmp_path / "all").set_index("id")["text"]
    assert out["d3"] == f"Enron mail: {E}" and "2 phone number(s)" in res.stdout
    # a second run over the output changes nothing
    run("pii", "--in", tmp_path / "out", "--out", tmp_path / "again", "--workers", "1")
    again = pd.read_parquet(tmp_path / "again").set_index("id")["text"]
    assert (again == pd.read_parquet(tmp_path / "out").set_index("id")["text"]).all()
    assert read_success(tmp_path / "again")["counters"]["pii"]["docs"] == 0


def test_cli_bad_utf8_and_usage_errors(tmp_path, run):
    write_raw_shard(tmp_path / "raw", [b"ok a@b.org", b"bad \xff bytes 8.8.8.8"], source="cc/x")
    run("pii", "--in", tmp_path / "raw", "--out", tmp_path / "o", "--workers", "1")
    out = pd.read_parquet(tmp_path / "o").set_index("id")["text"]
    assert out["a"] == f"ok {E}" and out["b"] == f"bad \ufffd bytes {V4}"
    res = run("pii", "--in", tmp_path / "raw", "--out", tmp_path / "o2", "--no-emails", "--no-ips", ok=False)
    assert res.exit_code == 2 and "nothing to replace" in res.stderr and "Traceback" not in res.stderr
