"""HTML-to-text extraction side by side: resiliparse vs trafilatura vs jusText, on the same pages.

Reads the HTML documents (HTTP 200, HTML, under the size cap) of the given WARC files once,
decodes them as ``curate extract`` does, then times each extractor over the same list of
pages in this process, on one core, one after the other. Reported: pages/s and MB/s of
HTML, the share of pages that came out empty and the mean characters kept, and the speed
relative to jusText (the MT-NLG recipe's extractor). ``--stage`` also times the whole
``extract`` stage on the same files with and without the per-record time limit (the
helper process), to show what the limit costs. ``--nested DEPTH`` times each extractor on
one page of DEPTH nested ``<div><span>`` elements: the page that shows why the limit is a
helper process (native code holding the GIL) and not a signal.

    .venv/bin/python benchmarks/bench_extract.py                          # sample_data/cc, every page once
    .venv/bin/python benchmarks/bench_extract.py --in data/cc --max-pages 5000
    .venv/bin/python benchmarks/bench_extract.py --repeat 5 --stage --nested 30000   # the docs' table

The tables go to docs/benchmarks/extract.md (``--no-write``: print only).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import _tables as tables

from curate.stages.extract.extract_stage import EXTRACTORS, find_warc_files
from curate.stages.extract.extractors import extractor_function
from curate.warc.charset import decode_html, looks_binary
from curate.warc.records import WarcReader

ROOT = Path(__file__).resolve().parents[1]


def load_pages(inputs: list[str], max_pages: int | None, max_bytes: int) -> tuple[list[str], int]:
    """Decoded HTML of the candidate documents, and their size in bytes."""
    pages, size = [], 0
    for f in find_warc_files(inputs):
        for raw in WarcReader(f, max_bytes, {}):
            if raw.rtype != "response" or raw.reason or raw.damaged or not raw.body or looks_binary(raw.body):
                continue
            html, _, _ = decode_html(raw.body, raw.charset)
            if html is None:
                continue
            pages.append(html)
            size += len(raw.body)
            if max_pages and len(pages) >= max_pages:
                return pages, size
    return pages, size


def time_extractor(name: str, pages: list[str]) -> dict:
    fn = extractor_function(name)
    fn(pages[0])  # imports and warm-up outside the timing
    empty = chars = 0
    t0 = time.perf_counter()
    for html in pages:
        try:
            text = fn(html) or ""
        except Exception:  # noqa: BLE001 - counted as empty, as the stage would reject it
            text = ""
        empty += not text.strip()
        chars += len(text)
    return {"seconds": time.perf_counter() - t0, "empty": empty, "chars": chars}


def nested_page(depth: int) -> str:
    return "<html><body>" + "<div><span>" * depth + "deep " * 500 + "</span></div>" * depth + "</body></html>"


def time_nested(name: str, depth: int) -> tuple[float, str]:
    """Seconds to extract one page of ``depth`` nested ``<div><span>`` (in-process), and the outcome."""
    fn = extractor_function(name)
    t0 = time.perf_counter()
    try:
        outcome = f"{len(fn(nested_page(depth)) or ''):,} chars"
    except Exception as e:  # noqa: BLE001 - reported, as the stage would count it
        outcome = f"error ({type(e).__name__})"
    return time.perf_counter() - t0, outcome


def time_stage(inputs: list[str], timeout: float, extractor: str = "resiliparse") -> tuple[float, dict]:
    from curate.executor import LocalExecutor
    from curate.runtime import run
    from curate.stages.extract.extract_stage import ExtractStage

    out = Path(tempfile.mkdtemp(prefix="curate-bench-extract-"))
    try:
        stage = ExtractStage(record_timeout=timeout, source="cc/bench", extractor=extractor)
        t0 = time.perf_counter()
        record = run(stage, inputs=inputs, out=out / "o", executor=LocalExecutor(1))
        return time.perf_counter() - t0, record
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--in", dest="inputs", action="append", default=None, help="WARC directory/file/glob [sample_data/cc]")
    ap.add_argument("--max-pages", type=int, default=None, help="use at most N pages")
    ap.add_argument("--repeat", type=int, default=1, help="time the page list N times over (steadier figures)")
    ap.add_argument("--extractors", default=",".join(EXTRACTORS), help="comma-separated subset of " + ",".join(EXTRACTORS))
    ap.add_argument("--max-html-bytes", type=int, default=1_000_000)
    ap.add_argument("--stage", action="store_true", help="also time the extract stage with and without the time-limit helper")
    ap.add_argument("--nested", type=int, default=0, metavar="DEPTH", help="also time one page of DEPTH nested <div><span> [0: skip]")
    tables.add_write_option(ap)
    args = ap.parse_args()
    inputs = args.inputs or [str(ROOT / "sample_data" / "cc")]
    names = [n for n in args.extractors.split(",") if n]
    pages, size = load_pages(inputs, args.max_pages, args.max_html_bytes)
    if not pages:
        sys.exit("no HTML pages found")
    n_once, size_once = len(pages), size
    pages, size = pages * args.repeat, size * args.repeat
    print(f"{len(pages):,} HTML pages, {size / 1e6:.1f} MB, from {', '.join(inputs)} (one core, in-process)\n")
    rows = {name: time_extractor(name, pages) for name in names}
    base = rows.get("justext")
    print(f"{'extractor':<12} {'pages/s':>9} {'MB/s':>7} {'empty':>7} {'chars/page':>11} {'speed vs justext':>17}")
    md_rows = []
    for name, r in rows.items():
        pps = len(pages) / r["seconds"]
        ratio = f"{base['seconds'] / r['seconds']:.1f}x" if base else "-"
        empty = f"{100 * r['empty'] / len(pages):.1f}%"
        print(f"{name:<12} {pps:>9.0f} {size / 1e6 / r['seconds']:>7.2f} {empty:>7} {r['chars'] / len(pages):>11.0f} {ratio:>17}")
        md_rows.append([name, f"{pps:,.0f}", f"{size / 1e6 / r['seconds']:.2f}", empty, f"{r['chars'] / len(pages):,.0f}", ratio])
    sections = [
        "## Extractors, in-process",
        "",
        tables.md_table(["extractor", "pages/s", "MB/s of HTML", "empty pages", "chars/page", "speed vs jusText"], md_rows),
    ]
    if args.stage:
        print("\nthe extract stage (resiliparse, 1 worker, all records of the files):")
        time_stage(inputs, 0)  # warm-up: imports, page cache
        t_in, record = time_stage(inputs, 0)
        t_box, _ = time_stage(inputs, 5.0)
        # records that reached the extractor: the documents written and those rejected after extraction
        rejected = record.get("rejected", {})
        extracted = record.get("docs_out", 0) + sum(
            rejected.get(k, {}).get("docs", 0) for k in ("empty", "timeout", "extractor_error", "extractor_crash", "record_error")
        )
        per = (t_box - t_in) / extracted * 1e3 if extracted else float("nan")
        print(f"  in-process (--record-timeout 0): {t_in:.2f} s")
        print(f"  helper process (--record-timeout 5): {t_box:.2f} s ({t_box / t_in:.2f}x, helper start-up included)")
        print(f"  helper cost: {per:.2f} ms per extracted page ({extracted:,} pages)")
        sections += [
            "",
            "## The extract stage: the time-limit helper's cost",
            "",
            f"`curate extract` (resiliparse, one worker, every record of the files, after one warm-up run), {extracted:,} pages extracted:",
            "",
            tables.md_table(
                ["setting", "wall s", "vs in-process", "helper cost per extracted page"],
                [
                    ["in-process (`--record-timeout 0`)", f"{t_in:.2f}", "1.00x", ""],
                    ["helper process (`--record-timeout 5`)", f"{t_box:.2f}", f"{t_box / t_in:.2f}x", f"{per:.2f} ms"],
                ],
            ),
        ]
    if args.stage:
        print("\nthe extract stage per extractor (--record-timeout 5, 1 worker), against the bare extractor on the same pages:")
        srows, stage_pps = [], {}
        for name in names:
            secs, _ = time_stage(inputs, 5.0, name)
            bare = rows[name]["seconds"] / args.repeat
            stage_pps[name] = n_once / secs
            srows.append([name, f"{secs:.2f}", f"{n_once / secs:,.0f}", f"{bare:.2f}", f"{100 * (secs / bare - 1):+.0f}%"])
        ref = stage_pps.get("trafilatura")
        for r in srows:
            r.append(f"{stage_pps[r[0]] / ref:.1f}x" if ref else "-")
            print("  " + "  ".join(r))
        sections += [
            "",
            "## Through `curate extract`, per extractor",
            "",
            f"The whole stage (a new output directory each time: WARC reading, decoding, extraction in the time-limit helper, "
            f"Unicode repair, Parquet writing; one worker) on the same files; pages/s counts the {n_once:,} HTML pages; "
            "overhead = stage time over the bare extractor's time on the same pages (one pass, in-process, from the first table).",
            "",
            tables.md_table(["extractor", "stage s", "pages/s", "bare extractor s", "overhead", "speed vs trafilatura"], srows),
        ]
    if args.nested:
        print(f"\none page of {args.nested:,} nested <div><span> ({len(nested_page(args.nested)) / 1e6:.1f} MB), in-process:")
        nrows = []
        for name in names:
            secs, outcome = time_nested(name, args.nested)
            print(f"  {name:<12} {secs:8.2f} s  {outcome}")
            nrows.append([name, f"{secs:.2f}", outcome])
        sections += [
            "",
            f"## One page of {args.nested:,} nested `<div><span>`",
            "",
            f"One extraction each, in-process ({len(nested_page(args.nested)) / 1e6:.1f} MB of HTML). With `--record-timeout` "
            "such a page is cut off after the limit; a signal could not interrupt an extractor running in native code.",
            "",
            tables.md_table(["extractor", "seconds", "output"], nrows),
        ]
    if args.write:
        shown_inputs = [str(Path(i).relative_to(ROOT)) if Path(i).is_relative_to(ROOT) else i for i in inputs]
        note = (
            f"Pages: the HTML documents (HTTP 200, HTML, not binary; `--max-html-bytes` {args.max_html_bytes:,}) of "
            f"{', '.join(shown_inputs)}: {n_once:,} pages, {size_once / 1e6:.1f} MB of HTML, decoded as `curate extract` does. "
            f"Each extractor runs over the same list {args.repeat} time(s) (one timed pass over {len(pages):,} pages), "
            "in this process, on one core, one extractor after the other. empty = pages whose output is blank; "
            "chars/page = mean characters kept; the last column is the speed relative to jusText (the MT-NLG "
            "recipe's extractor). jusText uses its English stoplist, so non-English pages mostly come out empty. "
            f"{tables.versions('resiliparse', 'trafilatura', 'justext')}."
        )
        tables.write_table("extract", "HTML-to-text extraction: speed side by side", "\n".join(sections), note)


if __name__ == "__main__":
    main()
