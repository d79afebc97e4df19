"""How the largest process of each global stage grows with the corpus: dedup exact, decontam, quality train, tokenize, blend.

Each stage runs on two corpora of the scale benchmark's short documents (64 words,
``bench_dedup_scale.py``: planted near-duplicates, copies and a boilerplate page), in a fresh
process tree; the peak of its largest process is the largest anonymous resident memory of
the command and its workers (``RssAnon``, sampled every 50 ms: the data it holds, not the page
cache of files it maps). "Bytes per extra document" is the growth between the two sizes divided by the
documents added: a stage whose memory does not follow the corpus shows about 0.

    .venv/bin/python benchmarks/bench_global_memory.py --sizes 250000,1000000 --task-memory 256MB

The table goes to docs/benchmarks/global_memory.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import _tables as tables
import bench_dedup_scale as scale
import pyarrow.parquet as pq

WORK = scale.WORK.parent / "global_memory"


def eval_set(corpus: Path, path: Path) -> Path:
    """An evaluation set of 200 items: 100 passages of the corpus (so decontam has work), 100 of its own."""
    first = pq.read_table(next(corpus.glob("part-*.parquet")), columns=["text"]).column("text").to_pylist()
    items = [{"text": " ".join(t.split()[5:40])} for t in first[:100]]
    items += [{"text": " ".join(f"q{i}w{k}" for k in range(30))} for i in range(100)]
    path.write_text("".join(json.dumps(x) + "\n" for x in items))
    return path


def blend_config(tokenized: Path, path: Path) -> Path:
    path.write_text(f"total_tokens: auto\nsources:\n  - {{name: web, path: {tokenized}/pile_Web, weight: 0.4}}\n"
                    f"  - {{name: cc, path: {tokenized}/cc_CC-MAIN-2020-50, weight: 0.6}}\n")  # fmt: skip
    return path


def stages(corpus: Path, out: Path, task_memory: str, workers: int) -> list[tuple[str, list[str]]]:
    w = ["--workers", str(workers)]
    ev = eval_set(corpus, out / "eval.jsonl")
    return [
        ("dedup exact", ["dedup", "exact", "--in", str(corpus), "--out", str(out / "exact"), "--task-memory", task_memory, *w]),
        (
            "decontam",
            ["decontam", "--in", str(corpus), "--out", str(out / "decontam"), "--eval", str(ev), "--task-memory", task_memory, *w],
        ),  # fmt: skip
        (
            "quality train",
            [
                "quality",
                "train",
                "--pos",
                str(corpus),
                "--pos-sources",
                "pile/*",
                "--neg",
                str(corpus),
                "--neg-sources",
                "cc/*",
                "--out",
                str(out / "quality"),
                "--max-docs-per-class",
                "50000",
                "--threads",
                "1",
                "--folds",
                "2",
            ],
        ),  # fmt: skip
        ("tokenize", ["tokenize", "--in", str(corpus), "--out", str(out / "tokenized"), "--per-source", *w]),
        ("blend", ["blend", "--config", str(blend_config(out / "tokenized", out / "blend.yaml")), "--out", str(out / "blend"), *w]),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="250000,1000000")
    ap.add_argument("--task-memory", default="256MB")
    ap.add_argument("--workers", type=int, default=2)
    tables.add_write_option(ap)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    peaks: dict[str, list[int]] = {}
    for n in sizes:
        corpus = scale.build(n, a.workers)
        out = WORK / f"run-{n}"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        for name, args in stages(corpus, out, a.task_memory, a.workers):
            wall, rss, _ = scale.run_curate(["--quiet", *args])
            peaks.setdefault(name, []).append(rss)
            print(f"{n:>10,}  {name:<14} {wall:7.1f} s  peak {rss / (1 << 20):,.0f} MB", flush=True)
        shutil.rmtree(out, ignore_errors=True)
    head = ["stage", *[f"peak memory MB (RssAnon), {n:,} docs" for n in sizes], "bytes per extra document", "what a process holds"]
    holds = {
        "dedup exact": "one chunk of an input shard (hash tasks), one hash range (bucket tasks), one partition of groups; partitioned by --task-memory",
        "decontam": "the evaluation index, one shard's matches (count), one bucket of keys (merge), one shard's documents to cut",
        "quality train": "the sample: at most --max-docs-per-class documents per class (a bottom-k by hash), whatever the corpus",
        "tokenize": "one piece of an input shard and its tokens; the merge streams the pieces",
        "blend": "one chunk of each source's order (a Feistel bijection, computed) and one output chunk",
    }
    rows = []
    for name, p in peaks.items():
        slope = (p[-1] - p[0]) / max(1, sizes[-1] - sizes[0])
        rows.append([name, *[f"{x / (1 << 20):,.0f}" for x in p], f"{slope:,.1f}", holds[name]])
    body = tables.md_table(head, rows)
    print(body)
    if a.write:
        tables.write_table("global_memory", "Global stages: the largest process as the corpus grows", body,
                           note=(__doc__ or "").split("\n\n")[1])  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
