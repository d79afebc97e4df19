"""HTML-to-text extraction side by side: resiliparse vs trafilatura vs jusText, on the same pages.

Reads the HTML documents (HTTP 200, HTML, under the size cap) of the given WARC files once,
decodes them as ``curate extract`` does, then times each extractor over the same list of
pages in this process, on one core, one after the other. Reported: pages/s and MB/s of
HTML, the share of pages that came out empty and the mean characters kept, and the speed
relative to jusText (the MT-NLG recipe's extractor). ``--stage`` also times the whole
``extract`` stage on the same files with and without the per-record time limit (the
helper process), to show what the limit costs.

    .venv/bin/python benchmarks/extract.py                          # sample_data/cc, every page once
    .venv/bin/python benchmarks/extract.py --in data/cc --max-pages 5000
    .venv/bin/python benchmarks/extract.py --repeat 5 --stage       # more pages for steadier numbers
"""

from __future__ import annotations

import sys
from pathlib import Path

# benchmarks/tokenize.py would shadow the standard library's tokenize for a script run from here
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate.stages.extract import WarcReader, decode_html, find_warc_files, looks_binary  # noqa: E402
from curate.stages.extractors import EXTRACTORS, extractor_function  # noqa: E402


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


def time_stage(inputs: list[str], timeout: float) -> float:
    from curate.executor import LocalExecutor
    from curate.runtime import run
    from curate.stages.extract import ExtractStage

    out = Path(tempfile.mkdtemp(prefix="curate-bench-extract-"))
    try:
        stage = ExtractStage(record_timeout=timeout, source="cc/bench")
        t0 = time.perf_counter()
        run(stage, inputs=inputs, out=out / "o", executor=LocalExecutor(1))
        return time.perf_counter() - t0
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
    args = ap.parse_args()
    inputs = args.inputs or [str(ROOT / "sample_data" / "cc")]
    pages, size = load_pages(inputs, args.max_pages, args.max_html_bytes)
    if not pages:
        sys.exit("no HTML pages found")
    pages, size = pages * args.repeat, size * args.repeat
    print(f"{len(pages):,} HTML pages, {size / 1e6:.1f} MB, from {', '.join(inputs)} (one core, in-process)\n")
    rows = {name: time_extractor(name, pages) for name in args.extractors.split(",")}
    base = rows.get("justext")
    print(f"{'extractor':<12} {'pages/s':>9} {'MB/s':>7} {'empty':>7} {'chars/page':>11} {'speed vs justext':>17}")
    for name, r in rows.items():
        pps = len(pages) / r["seconds"]
        ratio = f"{base['seconds'] / r['seconds']:.1f}x" if base else "-"
        print(f"{name:<12} {pps:>9.0f} {size / 1e6 / r['seconds']:>7.2f} {100 * r['empty'] / len(pages):>6.1f}% "
              f"{r['chars'] / len(pages):>11.0f} {ratio:>17}")  # fmt: skip
    if args.stage:
        print("\nthe extract stage (resiliparse, 1 worker, all records of the files):")
        time_stage(inputs, 0)  # warm-up: imports, page cache
        t_in = time_stage(inputs, 0)
        t_box = time_stage(inputs, 5.0)
        print(f"  in-process (--record-timeout 0): {t_in:.2f} s")
        print(f"  helper process (--record-timeout 5): {t_box:.2f} s ({t_box / t_in:.2f}x, helper start-up included)")


if __name__ == "__main__":
    main()
