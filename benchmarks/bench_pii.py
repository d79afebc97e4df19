"""Web safety: curate's pii and urlfilter stages against datatrove 0.10.1's PIIFormatter and URLFilter, on the same documents.

PII: both tools replace addresses in the same texts, on one core each. Each is given one
placeholder per kind that cannot occur in text (a private-use character), so the replaced
spans of the input can be read back from each output and compared address by address:
replaced by both (the same span), by curate only, by datatrove only. curate runs as its stage
does (``PIIStage`` over Arrow batches of 1,024 documents, with its batch pre-check); datatrove
runs ``PIIFormatter.format`` on every text.

URL filter (``--urlfilter``): both decide on the same URLs with the same lists: the UT1
blocklist datatrove ships (``url_filterblacklistsv0_3_0.tar.gz``: its ``domains`` and ``urls``
files, given to curate as one category folder) and FineWeb's word lists (curate ships the same
three files). Reported: decisions per second, and how often keep/drop agree, with examples.

Documents: the CommonCrawl sample's extract (``curate extract`` on sample_data/cc, made once
in the work directory) or the dataset directories given with --in, plus planted text (e-mail
addresses in many forms, public, private and documentation IP addresses, version numbers,
IPv6) and planted URLs; --size N takes the first N documents (cycling).

datatrove runs in its own environment (benchmarks/.env, see benchmarks/requirements.txt; or
--peer-python), started by this script as a subprocess::

    .venv/bin/python benchmarks/bench_pii.py --size 300 --no-write                 # a quick check
    .venv/bin/python benchmarks/bench_pii.py --urlfilter --repeat 3                 # docs/benchmarks/pii.md

The table goes to docs/benchmarks/pii.md (``--no-write``: print only).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import _tables as tables

ROOT = Path(__file__).resolve().parents[1]
ENV = ROOT / "benchmarks" / ".env"
WORK = ROOT / "benchmarks" / "_work" / "pii"
EMAIL_MARK, IP_MARK = "\ue000", "\ue001"  # placeholders no text holds: the replaced spans can be read back
BATCH = 1024


# --------------------------------------------------------------------------- planted documents

EMAILS = ["john.doe@gmail.com", "a.b+tag@sub.mail.co.uk", "O'Brien@IBM.COM", "foo_bar-baz@my-host.org", "jöran@bücher.de",
          "x@xn--bcher-kva.de", "info@company.museum", "me@example.com", "support@helpdesk.io", "first.last@uni.edu"]  # fmt: skip
NOT_EMAILS = ["lodash@4.17.21", "logo@2x.png", "user@localhost", "@handle", "?email=jo@x.org&a=1"]
IPS = ["8.8.8.8", "93.184.216.34", "1.1.1.1", "10.0.0.1", "192.168.1.20", "127.0.0.1", "192.0.2.55", "203.0.113.9",
       "2606:4700:4700::1111", "2001:db8::5", "::1", "fe80::1"]  # fmt: skip
VERSIONS = ["version 1.2.3.4", "1.2.3.4-beta", "v2.3.4.5", "Chrome/91.0.4472.124", "1.2.3.4.5", "foo==4.3.2.1"]
URLS = ["https://www.pornhub.com/view", "https://cdn.xvideos.com/x.mp4", "https://example.com/bdsm/page", "https://example.com/BDSM",
        "https://example.com/hot-babes-with-boobs", "https://example.com/2-Girls_1cup.html", "https://en.wikipedia.org/wiki/Essex",
        "https://Bücher.de/x", "https://a.b.c.pornhub.com/", "http://exa mple.com/", "mailto:x@y.org", "https://www.bbc.co.uk/news"]  # fmt: skip


def planted(n: int, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    words = "the of and to in a is that for it as was with be by on not this are or from at which".split()
    items = EMAILS + NOT_EMAILS + IPS + VERSIONS
    docs = []
    for i in range(n):
        parts = []
        for _ in range(rng.randint(3, 8)):
            parts.append(" ".join(rng.choice(words) for _ in range(rng.randint(5, 15))))
            parts.append(rng.choice(items))
        docs.append({"id": f"planted-{i}", "source": "cc/planted", "url": rng.choice(URLS), "text": " ".join(parts) + "."})
    return docs


def sample_inputs(work: Path) -> list[str]:
    if not (work / "cc" / "_SUCCESS").exists():
        cmd = [
            sys.executable,
            "-m",
            "curate",
            "-q",
            "extract",
            "--in",
            str(ROOT / "sample_data/cc"),
            "--out",
            str(work / "cc"),
            "--workers",
            "1",
        ]
        subprocess.run(cmd, check=True)
    return [str(work / "cc")]


def load_documents(inputs: list[str], size: int | None, n_planted: int) -> list[dict]:
    from curate.dataset import iter_dataset

    docs: list[dict] = []
    for table in iter_dataset(inputs, columns=["id", "source", "text", "url"]):
        docs.extend(table.to_pylist())
    docs += planted(n_planted)
    if size:
        docs = [docs[i % len(docs)] for i in range(size)]
    return docs


# --------------------------------------------------------------------------- the datatrove side (runs in benchmarks/.env)


def run_peer(docs_path: Path, out_path: Path, ut1: str, repeat: int) -> None:
    from datatrove.pipeline.formatters import PIIFormatter

    docs = [json.loads(line) for line in docs_path.open(encoding="utf-8")]
    texts = [d["text"] for d in docs]
    fmt = PIIFormatter(email_replacement=EMAIL_MARK, ip_replacement=IP_MARK)
    best, out = float("inf"), []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = [fmt.format(t) for t in texts]
        best = min(best, time.perf_counter() - t0)
    result: dict = {"pii": {"seconds": best, "texts": out}}
    if ut1:
        from datatrove.data import Document
        from datatrove.pipeline.filters import URLFilter

        uf = URLFilter()
        uf.download_data()  # the integrated lists: UT1 and the word lists (not timed)
        urls = [d["url"] for d in docs if d.get("url")]
        best, decisions = float("inf"), []
        for _ in range(repeat):
            t0 = time.perf_counter()
            decisions = []
            for u in urls:
                r = uf.filter(Document(text="", id="x", metadata={"url": u}))
                decisions.append("keep" if r is True else (r[1] if isinstance(r, tuple) else "drop"))
            best = min(best, time.perf_counter() - t0)
        result["urlfilter"] = {"seconds": best, "decisions": decisions}
    out_path.write_text(json.dumps(result, ensure_ascii=False), "utf-8")


# --------------------------------------------------------------------------- the curate side


def time_curate_pii(docs: list[dict], repeat: int) -> tuple[float, list[str]]:
    import pyarrow as pa

    from curate.schema import BASE_SCHEMA
    from curate.stages.pii import PIIStage

    stage = PIIStage(email_placeholder=EMAIL_MARK, ipv4_placeholder=IP_MARK, ipv6_placeholder=IP_MARK)
    rows = [{"id": str(i), "text": d["text"], "source": d["source"], "url": None, "meta": None} for i, d in enumerate(docs)]
    tables = [pa.Table.from_pylist(rows[i : i + BATCH], schema=BASE_SCHEMA) for i in range(0, len(rows), BATCH)]
    best, out = float("inf"), []
    for _ in range(repeat):
        t0 = time.perf_counter()
        results = [stage(t) for t in tables]
        best = min(best, time.perf_counter() - t0)
        out = [x for r in results for x in r.kept.column("text").to_pylist()]
    return best, out


def ut1_dir(work: Path, peer_python: Path) -> Path:
    """The UT1 lists datatrove ships, extracted once: a folder with its domains and urls files."""
    d = work / "ut1"
    if not (d / "domains").exists():
        code = "import datatrove.utils._import_utils as u; print(u.ASSETS_PATH)"
        assets = subprocess.run([str(peer_python), "-c", code], check=True, capture_output=True, text=True).stdout.strip()
        d.mkdir(parents=True, exist_ok=True)
        with tarfile.open(Path(assets) / "url_filterblacklistsv0_3_0.tar.gz", "r:gz") as tar:
            tar.extractall(d, filter="data")
    return d


def time_curate_urls(docs: list[dict], ut1: Path, repeat: int) -> tuple[float, list[str]]:
    import pyarrow as pa

    from curate.schema import BASE_SCHEMA
    from curate.stages.urlfilter import URLFilterStage

    stage = URLFilterStage(blocklist=[str(ut1)])
    stage.lists()  # read once (not timed, as datatrove's download_data)
    rows = [{"id": str(i), "text": "", "source": "cc/x", "url": d["url"], "meta": None} for i, d in enumerate(docs) if d.get("url")]
    tables = [pa.Table.from_pylist(rows[i : i + BATCH], schema=BASE_SCHEMA) for i in range(0, len(rows), BATCH)]
    best, decisions = float("inf"), []
    for _ in range(repeat):
        t0 = time.perf_counter()
        results = [stage(t) for t in tables]
        best = min(best, time.perf_counter() - t0)
    for t, r in zip(tables, results):
        why = dict(zip(r.rejected.column("id").to_pylist(), r.rejected.column("reason").to_pylist())) if r.rejected is not None else {}
        decisions += [why.get(i, "keep") for i in t.column("id").to_pylist()]
    return best, decisions


# --------------------------------------------------------------------------- comparing


def spans(original: str, output: str) -> set[tuple[int, int, str]] | None:
    """The input spans an output replaced, as ``(start, end, kind)``; None if they cannot be read back."""
    if output == original:
        return set()
    parts = re.split(f"([{EMAIL_MARK}{IP_MARK}])", output)
    pattern = "".join(re.escape(p) if k % 2 == 0 else "(.+?)" for k, p in enumerate(parts))
    m = re.fullmatch(pattern, original, re.S)
    if m is None:
        return None
    kinds = parts[1::2]
    return {(m.start(g), m.end(g), "email" if kinds[g - 1] == EMAIL_MARK else "ip") for g in range(1, len(kinds) + 1)}


def show(text: str, a: int, b: int) -> str:
    return json.dumps(text[max(0, a - 25) : a] + "[" + text[a:b] + "]" + text[b : b + 25], ensure_ascii=False)


def compare_pii(docs: list[dict], ours: list[str], theirs: list[str]) -> dict:
    both = only_ours = only_theirs = same_docs = unreadable = 0
    ex_ours: list[str] = []
    ex_theirs: list[str] = []
    for d, o, t in zip(docs, ours, theirs):
        same_docs += o == t
        so, st = spans(d["text"], o), spans(d["text"], t)
        if so is None or st is None:
            unreadable += 1
            continue
        both += len(so & st)
        only_ours += len(so - st)
        only_theirs += len(st - so)
        ex_ours += [f"{k}: {show(d['text'], a, b)}" for a, b, k in sorted(so - st)][: 8 - len(ex_ours)]
        ex_theirs += [f"{k}: {show(d['text'], a, b)}" for a, b, k in sorted(st - so)][: 8 - len(ex_theirs)]
    return {"same_docs": same_docs, "both": both, "only_curate": only_ours, "only_datatrove": only_theirs, "unreadable": unreadable,
            "examples_curate": ex_ours, "examples_datatrove": ex_theirs}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--in", dest="inputs", action="append", help="dataset directories (default: the CommonCrawl sample's extract)")
    ap.add_argument("--size", type=int, default=None, help="number of documents (default: all, plus the planted ones)")
    ap.add_argument("--planted", type=int, default=500, help="planted documents added to the input")
    ap.add_argument("--repeat", type=int, default=3, help="passes over the documents (the best time is reported)")
    ap.add_argument("--urlfilter", action="store_true", help="also compare the URL filters (reads UT1's 4.5 million domains)")
    ap.add_argument("--peer-python", default=str(ENV / "bin" / "python"), help="the Python of the environment with datatrove")
    ap.add_argument("--work", default=str(WORK))
    ap.add_argument("--peer", nargs=4, metavar=("DOCS", "OUT", "UT1", "REPEAT"), help=argparse.SUPPRESS)
    tables.add_write_option(ap)
    args = ap.parse_args()
    if args.peer:
        run_peer(Path(args.peer[0]), Path(args.peer[1]), args.peer[2], int(args.peer[3]))
        return
    peer = Path(args.peer_python)
    if not peer.exists():
        sys.exit(f"{peer} is missing: python3 -m venv benchmarks/.env && benchmarks/.env/bin/pip install -r benchmarks/requirements.txt")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    docs = load_documents(args.inputs or sample_inputs(work), args.size, args.planted)
    n, mb = len(docs), sum(len(d["text"].encode("utf-8")) for d in docs) / 1e6
    print(f"{n:,} documents, {mb:.1f} MB; one core each", file=sys.stderr)
    docs_path, peer_out = work / "docs.jsonl", work / "datatrove.json"
    with docs_path.open("w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps({"text": d["text"], "url": d.get("url")}, ensure_ascii=False) + "\n")
    ut1 = str(ut1_dir(work, peer)) if args.urlfilter else ""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    subprocess.run([str(peer), __file__, "--peer", str(docs_path), str(peer_out), ut1, str(args.repeat)], check=True, env=env)
    theirs = json.loads(peer_out.read_text("utf-8"))

    s_ours, out_ours = time_curate_pii(docs, args.repeat)
    s_theirs = theirs["pii"]["seconds"]
    c = compare_pii(docs, out_ours, theirs["pii"]["texts"])
    head = ["method", "docs/s", "MB/s", "speed vs datatrove"]
    rows = [["curate pii", f"{n / s_ours:,.0f}", f"{mb / s_ours:.1f}", f"{s_theirs / s_ours:.1f}x"],
            ["datatrove PIIFormatter", f"{n / s_theirs:,.0f}", f"{mb / s_theirs:.1f}", "1.0x"]]  # fmt: skip
    print(tables.text_table(head, rows))
    agree = (f"same output text: {c['same_docs']:,} of {n:,} documents; addresses replaced by both (the same span): "
             f"{c['both']:,}; by curate only: {c['only_curate']:,}; by datatrove only: {c['only_datatrove']:,}"
             + (f"; documents whose spans could not be read back: {c['unreadable']}" if c["unreadable"] else ""))  # fmt: skip
    print("\n" + agree)
    for who in ("curate", "datatrove"):
        for e in c[f"examples_{who}"]:
            print(f"  only {who}: {e}")
    body = tables.md_table(head, rows) + f"\n\n{agree}."
    for who in ("curate", "datatrove"):
        if c[f"examples_{who}"]:
            body += f"\n\nReplaced by {who} only (first 8, the span in brackets):\n\n```\n" + "\n".join(c[f"examples_{who}"]) + "\n```"

    if args.urlfilter:
        s_u, dec_ours = time_curate_urls(docs, Path(ut1), args.repeat)
        dec_theirs = theirs["urlfilter"]["decisions"]
        s_ut = theirs["urlfilter"]["seconds"]
        urls = [d["url"] for d in docs if d.get("url")]
        nu = len(urls)
        same = sum((a == "keep") == (b == "keep") for a, b in zip(dec_ours, dec_theirs))
        diff = [f"curate {a}, datatrove {b}: {u}" for u, a, b in zip(urls, dec_ours, dec_theirs) if (a == "keep") != (b == "keep")]
        urows = [["curate urlfilter", f"{nu / s_u:,.0f}", f"{s_ut / s_u:.1f}x", f"{sum(a != 'keep' for a in dec_ours):,}"],
                 ["datatrove URLFilter", f"{nu / s_ut:,.0f}", "1.0x", f"{sum(b != 'keep' for b in dec_theirs):,}"]]  # fmt: skip
        uhead = ["method", "URLs/s", "speed vs datatrove", "dropped"]
        print("\n" + tables.text_table(uhead, urows))
        uagree = f"same keep/drop decision: {same:,} of {nu:,} URLs"
        print("\n" + uagree)
        for line in list(dict.fromkeys(diff))[:10]:
            print("  differs:", line)
        body += "\n\n## URL filter\n\n" + tables.md_table(uhead, urows) + f"\n\n{uagree}."
        if diff:
            body += "\n\nWhere they differ (first 10 distinct):\n\n```\n" + "\n".join(list(dict.fromkeys(diff))[:10]) + "\n```"
    if args.write:
        origin = ", ".join(args.inputs) if args.inputs else "the CommonCrawl sample's extract (`curate extract` on sample_data/cc)"
        note = (
            f"Input: {origin} and {args.planted:,} planted documents (e-mail addresses in many forms, public, private and "
            f"documentation IPv4 and IPv6 addresses, version numbers): {n:,} documents, {mb:.1f} MB. Both run on the same "
            f"documents in one process each, on one core; each time is the best of {args.repeat} pass(es). curate runs as its "
            "stage does (`PIIStage` over Arrow batches of 1,024 documents); datatrove runs `PIIFormatter().format` on every "
            "text. Each is given one placeholder per kind that no text holds, so the replaced spans are read back from both "
            "outputs and compared address by address. "
            + ("The URL filters decide on the same URLs with the same lists: the UT1 blocklist datatrove ships "
               "(`url_filterblacklistsv0_3_0.tar.gz`) and FineWeb's word lists; the lists are read before timing. "
               if args.urlfilter else "")
            + "datatrove 0.10.1 runs in its own environment (benchmarks/requirements.txt)."
        )  # fmt: skip
        tables.write_table("pii", "Web safety: curate pii and urlfilter vs datatrove", body, note)


if __name__ == "__main__":
    main()
