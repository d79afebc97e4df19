"""Main-content extraction quality and speed: every extractor on real pages and on the synthetic dev set (issues 17, 26).

Two page sets:

* ``readability``: mozilla/readability's 130 test pages (``shared/extraction-dev/
  readability_test_pages.parquet``, Apache-2.0), real pages nobody here chose; the truth is
  Readability.js's expected article HTML turned into text by one step for every extractor
  (:func:`html_text`: scripts, styles and comments dropped, inline tags removed, every other
  tag a space, entities unescaped). They are split by a hash of the page's name
  (:func:`readability_half`: the first byte of sha256(name) even: ``tune``, odd: ``report``);
  ``fast`` is tuned on ``tune`` only, ``report`` is only ever scored.
* ``synthetic``: ``benchmarks/extract_devset/`` (its README), pages assembled here, with its
  ``dev`` and ``heldout`` splits; kept for regressions.

Metric (issue 26): **token F1**: tokens are ``re.findall(r"\\w+", text.lower())``, compared
as multisets per page (tp = the shared count, P = tp/|output|, R = tp/|truth|, F1 =
2tp/(|output|+|truth|)), averaged over the pages; a page whose output is empty (or raised)
scores 0. ``P`` and ``R`` are the means of the per-page values (an empty output: P 0).
``4-gram F1`` is ScrapingHub's article-extraction-benchmark metric on 4-token shingles
(:func:`aggregate`), kept from issue 17 for comparison.

Speed: one core, in this process, over the same decoded HTML strings; the extractors are
alternated (the order rotates every round) and each one's best round of ``--repeat`` is kept
(pages/s from wall time; CPU seconds of that round from ``time.process_time``).

    .venv/bin/python benchmarks/bench_extract_quality.py --repeat 3          # the docs' table
    .venv/bin/python benchmarks/bench_extract_quality.py --sets readability:tune --extractors fast --no-write -v
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
import time
from collections import Counter
from pathlib import Path

import _tables as tables

from curate.stages.extract.extract_stage import EXTRACTORS
from curate.stages.extract.extractors import extractor_function

ROOT = Path(__file__).resolve().parents[1]

DEVSET = ROOT / "benchmarks" / "extract_devset"
_TOKEN = re.compile(r"\w+")


# --------------------------------------------------------------------------- metric


def shingles(text: str, n: int = 4) -> Counter:
    """Multiset of the ``n``-token windows of ``text`` (lower-cased ``\\w+`` tokens); a text
    of fewer than ``n`` tokens is one shorter shingle, an empty one has none."""
    tokens = _TOKEN.findall((text or "").lower())
    if len(tokens) < n:
        return Counter([tuple(tokens)]) if tokens else Counter()
    return Counter(zip(*(tokens[i:] for i in range(n))))


def tp_fp_fn(pred: str, truth: str, n: int = 4) -> tuple[int, int, int]:
    p, t = shingles(pred, n), shingles(truth, n)
    tp = sum((p & t).values())
    return tp, sum(p.values()) - tp, sum(t.values()) - tp


def page_scores(pred: str, truth: str) -> tuple[float | None, float | None, float]:
    """(precision or None for an empty prediction, recall or None for an empty truth, F1)."""
    tp, fp, fn = tp_fp_fn(pred, truth)
    if tp + fp + fn == 0:
        return 1.0, 1.0, 1.0  # both empty: a perfect answer
    prec = tp / (tp + fp) if tp + fp else None
    rec = tp / (tp + fn) if tp + fn else None
    f1 = 2 * tp / (2 * tp + fp + fn)
    return prec, rec, f1


def aggregate(preds: list[str], truths: list[str]) -> dict:
    """P, R, F1 (public-benchmark definition), mean per-page F1, empty outputs."""
    ps, rs, fs, empty = [], [], [], 0
    junk = kept = 0
    for pred, truth in zip(preds, truths):
        prec, rec, f1 = page_scores(pred, truth)
        if prec is not None:
            ps.append(prec)
        if rec is not None:
            rs.append(rec)
        fs.append(f1)
        empty += not _TOKEN.search(pred or "")
        tp, fp, _ = tp_fp_fn(pred, truth)
        junk, kept = junk + fp, kept + tp + fp
    p = sum(ps) / len(ps) if ps else 0.0
    r = sum(rs) / len(rs) if rs else 0.0
    return {
        "P": p,
        "R": r,
        "F1": 2 * p * r / (p + r) if p + r else 0.0,
        "F1page": sum(fs) / len(fs) if fs else 0.0,
        "empty": empty,
        "junk": junk / kept if kept else 0.0,
    }


def token_scores(pred: str, truth: str) -> tuple[float, float, float]:
    """Per-page (P, R, F1) of lower-cased ``\\w+`` tokens as multisets; an empty output scores 0 (an empty truth too, unless both are)."""
    p, t = Counter(_TOKEN.findall((pred or "").lower())), Counter(_TOKEN.findall((truth or "").lower()))
    np_, nt = sum(p.values()), sum(t.values())
    if np_ + nt == 0:
        return 1.0, 1.0, 1.0
    tp = sum((p & t).values())
    return (tp / np_ if np_ else 0.0), (tp / nt if nt else 0.0), 2 * tp / (np_ + nt)


def token_aggregate(preds: list[str], truths: list[str]) -> dict:
    """Means over the pages of token P, R and F1 (issue 26's metric), and the empty outputs."""
    scores = [token_scores(p, t) for p, t in zip(preds, truths)]
    n = len(scores) or 1
    return {
        "tP": sum(x[0] for x in scores) / n,
        "tR": sum(x[1] for x in scores) / n,
        "tF1": sum(x[2] for x in scores) / n,
        "per_page": [x[2] for x in scores],
        "empty": sum(not _TOKEN.search(p or "") for p in preds),
    }


# --------------------------------------------------------------------------- data and extractors


def load_devset(splits: list[str], devset: Path = DEVSET) -> list[dict]:
    rows = (devset / "index.tsv").read_text("utf-8").splitlines()
    head = rows[0].split("\t")
    pages = []
    for line in rows[1:]:
        row = dict(zip(head, line.split("\t")))
        if "all" in splits or row["split"] in splits:
            row["html"] = gzip.decompress((devset / "pages" / f"{row['name']}.html.gz").read_bytes()).decode("utf-8")
            row["truth"] = (devset / "truth" / f"{row['name']}.txt").read_text("utf-8")
            pages.append(row)
    return pages


#: mozilla/readability's test pages: ``shared/extraction-dev/`` beside the repository (or above it).
READABILITY_NAME = Path("shared") / "extraction-dev" / "readability_test_pages.parquet"
_DROP = re.compile(r"<(script|style|noscript|template)\b.*?</\1\s*>|<!--.*?-->", re.S | re.I)
_INLINE = re.compile(
    r"</?(?:a|abbr|b|bdi|bdo|cite|code|data|dfn|em|font|i|kbd|mark|q|s|samp|small|span|strike|strong|sub|sup|time|tt|u|var|wbr)\b[^>]*>",
    re.I,
)
_ANY_TAG = re.compile(r"<[^>]*>")


def readability_path() -> Path | None:
    """Where the readability pages are: ``shared/extraction-dev/`` in the repository's parent or a directory above it."""
    for d in ROOT.parents:
        if (d / READABILITY_NAME).is_file():
            return d / READABILITY_NAME
    return None


def html_text(html: str) -> str:
    """The text of a truth HTML fragment, the same step for every extractor: scripts, styles and
    comments dropped, inline tags (``<a>``, ``<b>``, ``<span>``, ...) removed, every other tag a
    space, entities unescaped."""
    from html import unescape

    return unescape(_ANY_TAG.sub(" ", _INLINE.sub("", _DROP.sub(" ", html))))


def readability_half(name: str) -> str:
    """``tune`` or ``report``: the first byte of sha256(name) even or odd (55 / 75 of the 130 pages)."""
    import hashlib

    return "tune" if hashlib.sha256(name.encode()).digest()[0] % 2 == 0 else "report"


def load_readability(halves: list[str], path: Path | None = None) -> list[dict]:
    """The readability pages of the given halves: name, html (decoded as ``curate extract`` decodes), truth (text)."""
    import pyarrow.parquet as pq

    from curate.warc.charset import decode_html

    path = path or readability_path()
    if path is None:
        sys.exit(f"no {READABILITY_NAME} beside the repository or above it")
    pages = []
    for row in pq.read_table(path).to_pylist():
        half = readability_half(row["case"])
        if half in halves:
            html, _, _ = decode_html(row["source_html"], None)
            truth = html_text(row["expected_html"].decode("utf-8", "replace"))
            pages.append(
                {"name": row["case"], "split": half, "group": "readability", "template": row["case"], "html": html or "", "truth": truth}
            )
    return pages


def _resiliparse_comments(html: str) -> str:
    """resiliparse's main content with its own default, ``comments=True`` (curate's call before issue 26)."""
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(html, main_content=True, alt_texts=False, form_fields=False, noscript=False)


#: benchmark-only variants, next to curate's own extractors
VARIANTS = {"resiliparse-comments": _resiliparse_comments}
DEFAULT = ("resiliparse", "resiliparse-comments", "trafilatura", "justext", "fast")


def get_extractor(name: str):
    return VARIANTS[name] if name in VARIANTS else extractor_function(name)


def run(fn, pages: list[str]) -> tuple[float, float, list[str]]:
    """(wall seconds, CPU seconds, outputs) of ``fn`` over ``pages``."""
    out = []
    t0, c0 = time.perf_counter(), time.process_time()
    for html in pages:
        try:
            out.append(fn(html) or "")
        except Exception:  # noqa: BLE001 - an error is an empty output, as the stage would reject it
            out.append("")
    return time.perf_counter() - t0, time.process_time() - c0, out


def measure(names: list[str], pages: list[dict], repeat: int) -> dict[str, dict]:
    htmls = [p["html"] for p in pages]
    fns = {n: get_extractor(n) for n in names}
    for fn in fns.values():  # imports and warm-up outside the timing (a tiny page: fast's fallback imports trafilatura)
        run(fn, htmls[:2] + ["<html><body><p>A short page.</p></body></html>"])
    best = {n: (float("inf"), 0.0) for n in names}
    outputs: dict[str, list[str]] = {}
    for r in range(repeat):
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            secs, cpu, out = run(fns[n], htmls)
            best[n] = min(best[n], (secs, cpu))
            outputs.setdefault(n, out)
    return {n: {"seconds": best[n][0], "cpu": best[n][1], "outputs": outputs[n]} for n in names}


# --------------------------------------------------------------------------- report


cpu_model = tables.cpu_model
HEAD = ["extractor", "token F1", "P", "R", "4-gram F1", "empty", "pages/s", "CPU s", "speed vs trafilatura"]


def rows(names: list[str], results: dict[str, dict], n_pages: int) -> list[list[str]]:
    base = results.get("trafilatura", {}).get("seconds")
    out = []
    for n in names:
        r, m, g = results[n], results[n]["tokens"], results[n]["metrics"]
        ratio = f"{base / r['seconds']:.1f}x" if base else "-"
        out.append([n, f"{m['tF1']:.3f}", f"{m['tP']:.3f}", f"{m['tR']:.3f}", f"{g['F1']:.3f}", str(m["empty"]),
                    f"{n_pages / r['seconds']:.0f}", f"{r['cpu']:.2f}", ratio])  # fmt: skip
    return out


def load_set(spec: str, devset: Path) -> list[dict]:
    """``readability:tune``, ``readability:report``, ``synthetic:dev``, ``synthetic:heldout``."""
    kind, _, split = spec.partition(":")
    if kind == "readability":
        return load_readability([split] if split else ["tune", "report"])
    if kind == "synthetic":
        return load_devset([split or "all"], devset)
    sys.exit(f"unknown set {spec!r}: readability:tune|report or synthetic:dev|heldout")


NOTE = """Token F1 (issue 26): lower-cased `\\w+` tokens of the output and of the truth compared as multisets,
per page (F1 = 2 x shared / (output + truth tokens)), averaged over the pages; an empty output scores 0.
P and R are the per-page means. 4-gram F1: ScrapingHub's article-extraction-benchmark metric (4-token
shingles, P over non-empty outputs; issue 17). Speed: one core, in-process, best of the alternated
rounds; through `curate extract` each page also pays WARC reading, decoding, Unicode repair and the
helper process ([extract](extract.md)).

**readability**: mozilla/readability's 130 test pages (`shared/extraction-dev/`, Apache-2.0), real
pages; the truth is Readability.js's expected output (a good reference, not a human annotation),
turned into text by one step for all (`html_text`: tags to spaces, inline tags removed). Split by
`sha256(page name)[0]` even (`tune`) or odd (`report`): `fast` was tuned on `tune` only; `report`
was only scored. **synthetic**: `benchmarks/extract_devset/` (assembled here by the author of
`fast`'s rules: optimistic for `fast`), kept for regressions. `resiliparse` runs with the options of
its published figures (`comments=False`, ...); `resiliparse-comments` is resiliparse's own default
(`comments=True`), which curate used before issue 26.

The five public benchmark sets of issue 26 (about 1,150 pages with human ground truth, Scrapinghub's
among them) are not available offline here: their figures are not reproduced in this table."""


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default="readability:tune,readability:report,synthetic:dev,synthetic:heldout",
                    help="comma-separated page sets, one table each [all four]")  # fmt: skip
    ap.add_argument("--extractors", default=",".join(DEFAULT), help=f"comma-separated, from {', '.join(EXTRACTORS + tuple(VARIANTS))}")
    ap.add_argument("--repeat", type=int, default=1, help="timed rounds; the best one counts [1]")
    ap.add_argument("-v", "--verbose", action="store_true", help="also print token F1 per page")
    ap.add_argument("--devset", type=Path, default=DEVSET)
    tables.add_write_option(ap)
    args = ap.parse_args(argv)
    names = [n for n in args.extractors.split(",") if n]
    sections = []
    for spec in args.sets.split(","):
        pages = load_set(spec, args.devset)
        if not pages:
            sys.exit(f"no pages in {spec!r}")
        size = sum(len(p["html"].encode("utf-8", "surrogatepass")) for p in pages)
        results = measure(names, pages, args.repeat)
        truths = [p["truth"] for p in pages]
        for n in names:
            results[n]["metrics"] = aggregate(results[n]["outputs"], truths)
            results[n]["tokens"] = token_aggregate(results[n]["outputs"], truths)
        title = f"`{spec}`: {len(pages)} pages, {size / 1e6:.1f} MB of HTML"
        body = rows(names, results, len(pages))
        print(f"{title}\n" + tables.text_table(HEAD, body, indent="  ") + "\n", flush=True)
        if args.verbose:
            for i, p in enumerate(pages):
                print(f"  {p['name'][:48]:48} " + " ".join(f"{results[n]['tokens']['per_page'][i]:.3f}" for n in names))
        sections.append(f"### {title}\n\n" + tables.md_table(HEAD, body))
    if args.write:
        tables.write_table("extract_quality", "Main-content extraction: quality and speed", "\n\n".join(sections), NOTE, argv)


if __name__ == "__main__":
    main()
