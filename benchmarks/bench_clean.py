"""Unicode repair: curate's clean stage (mojibake pre-check, then ftfy) vs plain ftfy.fix_text on every document.

Both run on the same documents in one process on one core. Agreement counts documents whose
repaired text is identical; the documents where they differ are printed (they show what the
pre-check skips: ftfy's other fixes on text with no mojibake pattern).

    .venv/bin/python benchmarks/bench_clean.py                         # the Pile sample + the CommonCrawl sample extract
    .venv/bin/python benchmarks/bench_clean.py --in out/sample/pile --in out/sample/cc_extract --repeat 3

The table goes to docs/benchmarks/clean.md (``--no-write``: print only).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import _tables as tables
import ftfy

ROOT = Path(__file__).resolve().parents[1]


def load_texts(inputs: list[str]) -> list[str]:
    from curate.dataset import iter_dataset

    texts: list[str] = []
    for t in iter_dataset(inputs, ["text"]):
        texts += t.column("text").to_pylist()
    return texts


def sample_inputs(work: Path) -> list[str]:
    """Download the Pile sample and extract the CommonCrawl sample (their raw text, before any repair)."""
    import subprocess

    cur = [sys.executable, "-m", "curate", "-q"]
    if not (work / "pile" / "_SUCCESS").exists():
        subprocess.run([*cur, "download", "pile", "--dataset", str(ROOT / "sample_data/pile"), "--out", str(work / "pile")], check=True)
    if not (work / "cc" / "_SUCCESS").exists():
        subprocess.run([*cur, "extract", "--in", str(ROOT / "sample_data/cc"), "--out", str(work / "cc"), "--workers", "1"], check=True)
    return [str(work / "pile"), str(work / "cc")]


def quote(text: str) -> str:
    """A JSON string, readable (non-ASCII as is) unless the text holds lone surrogates."""
    try:
        return json.dumps(text, ensure_ascii=False).encode("utf-8").decode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--in", dest="inputs", action="append", help="dataset directories (default: the samples)")
    ap.add_argument("--repeat", type=int, default=3, help="passes over the documents (best time is reported)")
    ap.add_argument("--work", default=None)
    tables.add_write_option(ap)
    args = ap.parse_args()
    from curate.stages.clean import CleanStage

    work = Path(args.work or tempfile.mkdtemp(prefix="curate-bench-clean-"))
    texts = load_texts(args.inputs or sample_inputs(work))
    mb = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) / 1e6
    stage = CleanStage()

    def curate_fix(t: str) -> str:
        return stage.clean_text(t)[0]

    def plain_fix(t: str) -> str:
        # what the clean stage would give if it sent every document through ftfy
        fixed = ftfy.fix_text(t, normalization="NFC", unescape_html=False, uncurl_quotes=False)
        return stage.clean_text(fixed)[0] if fixed != t else curate_fix(t)

    results = {}
    outputs = {}
    for name, fn in (("curate clean", curate_fix), ("ftfy.fix_text on every doc", plain_fix)):
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            out = [fn(t) for t in texts]
            best = min(best, time.perf_counter() - t0)
        results[name] = best
        outputs[name] = out
    a, b = outputs["curate clean"], outputs["ftfy.fix_text on every doc"]
    differ = [i for i in range(len(texts)) if a[i] != b[i]]
    changed = sum(1 for t in texts if ftfy.fix_text(t, normalization="NFC", unescape_html=False, uncurl_quotes=False) != t)
    print(f"{len(texts):,} documents, {mb:.1f} MB; plain ftfy changes {changed:,} of them\n")
    print(f"{'method':<28} {'docs/s':>9} {'MB/s':>7} {'speed':>7}")
    base = results["ftfy.fix_text on every doc"]
    rows = []
    for name, s in results.items():
        print(f"{name:<28} {len(texts) / s:>9,.0f} {mb / s:>7.1f} {base / s:>6.1f}x")
        rows.append([name, f"{len(texts) / s:,.0f}", f"{mb / s:.1f}", f"{base / s:.1f}x"])
    same = f"same output: {len(texts) - len(differ):,} of {len(texts):,} documents ({100 * (1 - len(differ) / len(texts)):.2f}%)"
    print(f"\n{same}")
    shown = []
    for i in differ[:5]:
        d = next((k for k in range(min(len(a[i]), len(b[i]))) if a[i][k] != b[i][k]), min(len(a[i]), len(b[i])))
        shown.append(quote(a[i][max(0, d - 30) : d + 30]) + " vs " + quote(b[i][max(0, d - 30) : d + 30]))
        print("  differs:", shown[-1])
    if args.write:
        origin = (
            ", ".join(args.inputs)
            if args.inputs
            else "the Pile sample (`curate download pile`) and the CommonCrawl sample's extract (`curate extract`, before any repair)"
        )
        body = tables.md_table(["method", "docs/s", "MB/s", "speed vs ftfy.fix_text on every doc"], rows) + f"\n\n{same}."
        if shown:
            body += "\n\nWhere they differ (curate clean vs ftfy on every document; first 5):\n\n```\n" + "\n".join(shown) + "\n```"
        note = (
            f"Input: {origin}: {len(texts):,} documents, {mb:.1f} MB of UTF-8 text; plain `ftfy.fix_text` changes "
            f"{changed:,} of them. Both methods run on the same documents in one process, on one core; each time is the "
            f"best of {args.repeat} pass(es) over all documents. `curate clean` sends a document through ftfy only when a "
            "mojibake byte pattern is found; the other row sends every document through `ftfy.fix_text` (then the same "
            f"whitespace and NFC steps). The speed column is the ratio to that row. {tables.versions('ftfy')}."
        )
        tables.write_table("clean", "Unicode repair: curate clean vs ftfy on every document", body, note)


if __name__ == "__main__":
    main()
