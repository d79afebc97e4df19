"""Sub-document dedup: `dedup lines` and `dedup substrings` on a planted corpus, against datatrove's sentence dedup.

The corpus (deterministic, ``--docs`` documents) holds unique sentences, one per line, in
paragraphs, and three kinds of planted repeats: boilerplate lines (a pool of 60, 2-4 per
document), shared paragraphs (a pool of 20, of three sentences, in a fifth of the documents) and
long passages (a pool of 10, 80 words each, inserted in the middle of a unique line of a tenth
of the documents, so that no line break delimits them).

What is measured, in one run:

* recall: of the planted copies a method should remove, the share gone from its output
  (``dedup lines`` and datatrove: every copy of a boilerplate line or shared-paragraph sentence but
  the first; ``dedup substrings``: every copy of a passage, the first too, as Lee et al. define it);
  (``--unit paragraph``: every copy of a shared paragraph but the first);
* unique kept: the share of the unique sentences whose words are all still in the output (1.0:
  nothing unique removed), and precision: of the bytes removed, the share that were planted repeats;
* speed: documents per second, one worker each, curate end to end (a new process, Parquet in
  and out) and datatrove's three-step SentenceDedup (signatures, find, filter; Parquet in and
  out) on lines (``n_sentences=1, split_sentences=False``: the case where it applies) in
  benchmarks/.env (benchmarks/requirements.txt; ``--setup`` creates it);
* memory: the peak RSS of the largest process of each curate run, at a fixed ``--task-memory``, at ``--docs`` and at
  ``--memory`` documents (run this under an exclusive CPU lock: timings).

    .venv/bin/python benchmarks/bench_subdoc.py --docs 4000 --memory 16000 --task-memory 64MB
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import _tables as tables

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "benchmarks" / "_work" / "subdoc"
ENV = ROOT / "benchmarks" / ".env"
VOCAB = ["".join(random.Random(i).choices("abcdefghijklmnopqrstuvwxyz", k=random.Random(i + 7).randint(3, 9))) for i in range(30000)]


def sentence(rng: random.Random, n: int = 14) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(n)).capitalize() + "."


def corpus(n: int, seed: int = 0) -> tuple[list[dict], dict]:
    """The planted documents and the truth: unique sentences per document, the pools."""
    rng = random.Random(seed)
    boiler = [sentence(random.Random(10_000 + i), 8) for i in range(60)]
    shared = ["\n".join(sentence(random.Random(20_000 + 3 * i + k)) for k in range(3)) for i in range(20)]
    passages = [" ".join(random.Random(30_000 + i).choice(VOCAB) for _ in range(80)) for i in range(10)]
    docs, uniques = [], []
    for d in range(n):
        paras, mine = [], []
        for _ in range(rng.randint(3, 6)):
            lines = [sentence(rng) for _ in range(rng.randint(1, 4))]
            mine += lines
            paras.append(lines)
        if d % 10 == 3:  # a passage inside a unique line
            p = paras[0]
            words = p[0].split(" ")
            p[0] = " ".join(words[:7] + [passages[(d // 10) % 10]] + words[7:])
            mine[0] = None  # that line is not unique any more as a whole
        for _ in range(rng.randint(2, 4)):
            paras[rng.randrange(len(paras))].insert(0, rng.choice(boiler))
        text_paras = ["\n".join(p) for p in paras]
        if d % 5 == 1:
            text_paras.insert(rng.randint(0, len(text_paras)), rng.choice(shared))
        docs.append({"id": f"d{d:07d}", "text": "\n\n".join(text_paras), "source": "cc/planted"})
        uniques.append([s for s in mine if s])
    return docs, {
        "uniques": uniques,
        "lines": boiler + [s for p in shared for s in p.split("\n")],
        "passages": passages,
        "paragraphs": shared,
    }


def score(docs: list[dict], out: dict[str, str], truth: dict, mode: str) -> dict[str, float]:
    """Recall of the planted copies, unique sentences kept whole, and precision of the bytes removed."""
    kept_whole = total_unique = lost_unique_bytes = 0
    for d, u in zip(docs, truth["uniques"]):
        text = out.get(d["id"], "")
        total_unique += len(u)
        for s in u:
            if s[:-1] in text:  # its words (a final "." struck beside a repeat is not counted)
                kept_whole += 1
            else:
                lost_unique_bytes += len(s.encode()) + 1
    removed_bytes = sum(len(d["text"].encode()) for d in docs) - sum(len(t.encode()) for t in out.values())
    if mode == "paragraphs":
        want = got = 0
        for para in truth["paragraphs"]:
            before = sum(d["text"].split("\n\n").count(para) for d in docs)
            after = sum(t.split("\n\n").count(para) for t in out.values())
            want += max(0, before - 1)
            got += min(max(0, before - 1), before - after)
    elif mode == "lines":
        want = got = 0
        for line in truth["lines"]:
            before = sum(d["text"].split("\n").count(line) for d in docs)
            after = sum(t.split("\n").count(line) for t in out.values())
            want += max(0, before - 1)
            got += min(max(0, before - 1), before - after)
    else:
        want = sum(d["text"].count(p) for d in docs for p in truth["passages"])
        got = want - sum(t.count(p) for t in out.values() for p in truth["passages"])
    return {"recall": got / max(1, want), "unique_kept": kept_whole / max(1, total_unique),
            "precision": 1 - lost_unique_bytes / max(1, removed_bytes)}  # fmt: skip


# --------------------------------------------------------------------------- runs


WRAP = "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(r.returncode)"


def timed(cmd: list[str], env: dict | None = None) -> tuple[float, int]:
    """Seconds and the peak RSS (bytes) of the largest process of ``cmd`` (run through a small wrapper process)."""
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", WRAP, *cmd], capture_output=True, text=True, env=env)
    if r.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
    return time.perf_counter() - t0, int(r.stdout.strip().splitlines()[-1]) * 1024


def write_parquet(docs: list[dict], path: Path, shards: int = 4) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.mkdir(parents=True, exist_ok=True)
    per = -(-len(docs) // shards)
    for s in range(shards):
        rows = [{**d, "url": None, "meta": None} for d in docs[s * per : (s + 1) * per]]
        pq.write_table(pa.Table.from_pylist(rows), path / f"part-{s:05d}.parquet")


def run_curate(docs: list[dict], name: str, args: list[str]) -> tuple[dict[str, str], float, int]:
    import pandas as pd

    src, out = WORK / f"in-{len(docs)}", WORK / f"{name}-{len(docs)}"
    if not src.exists():
        write_parquet(docs, src)
    shutil.rmtree(out, ignore_errors=True)
    cmd = [str(ROOT / ".venv" / "bin" / "curate"), "--quiet", "dedup", *args, "--in", str(src), "--out", str(out), "--workers", "1",
           "--min-remaining-chars", "0"]  # fmt: skip
    seconds, rss = timed(cmd, {**os.environ, "CURATE_PROGRESS": "off"})
    df = pd.read_parquet(out, columns=["id", "text"])
    return dict(zip(df["id"], df["text"])), seconds, rss


def run_datatrove(docs: list[dict]) -> tuple[dict[str, str], float, int]:
    """datatrove's SentenceDedup on lines (n_sentences=1, split_sentences=False) in benchmarks/.env: its three pipelines."""
    import pandas as pd

    d = WORK / f"datatrove-{len(docs)}"
    shutil.rmtree(d, ignore_errors=True)
    write_parquet(docs, d / "in")
    seconds, rss = timed([str(ENV / "bin" / "python"), __file__, "--peer", str(d)])
    df = pd.read_parquet(d / "out", columns=["id", "text"])
    return dict(zip(df["id"], df["text"])), seconds, rss


def peer(d: Path) -> None:
    """The datatrove side (runs in benchmarks/.env)."""
    from datatrove.executor.local import LocalPipelineExecutor
    from datatrove.pipeline.dedup import SentenceDedupFilter, SentenceDedupSignature, SentenceFindDedups
    from datatrove.pipeline.dedup.sentence_dedup import SentDedupConfig
    from datatrove.pipeline.readers import ParquetReader
    from datatrove.pipeline.writers import ParquetWriter

    cfg = SentDedupConfig(n_sentences=1, split_sentences=False, min_doc_words=0, min_num_sentences=0)
    read = lambda: ParquetReader(str(d / "in"))  # noqa: E731
    for k, steps in enumerate(([read(), SentenceDedupSignature(output_folder=str(d / "sigs"), config=cfg, finder_workers=1)],
                               [SentenceFindDedups(data_folder=str(d / "sigs"), output_folder=str(d / "dups"), config=cfg)],
                               [read(), SentenceDedupFilter(data_folder=str(d / "dups"), config=cfg), ParquetWriter(str(d / "out"))])):  # fmt: skip
        LocalPipelineExecutor(pipeline=steps, tasks=1, workers=1, logging_dir=str(d / "logs" / str(k))).run()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=4000)
    ap.add_argument("--memory", type=int, default=16000, help="the second corpus size for memory (0: skip)")
    ap.add_argument("--task-memory", default="64MB", help="the fixed --task-memory of the memory table's runs (the bound under test)")
    ap.add_argument("--peer", help=argparse.SUPPRESS)
    ap.add_argument("--setup", action="store_true", help="create benchmarks/.env with datatrove first")
    tables.add_write_option(ap)
    args = ap.parse_args()
    if args.peer:
        peer(Path(args.peer))
        return
    if args.setup:
        subprocess.run([sys.executable, "-m", "venv", str(ENV)], check=True)
        subprocess.run([str(ENV / "bin" / "pip"), "install", "-r", str(ROOT / "benchmarks" / "requirements.txt")], check=True)
    WORK.mkdir(parents=True, exist_ok=True)
    docs, truth = corpus(args.docs)
    runs = [("curate dedup lines", "lines", "lines", ["lines", "--min-chars", "20"]),
            ("curate dedup lines --approx", "approx", "lines", ["lines", "--min-chars", "20", "--approx"]),
            ("curate dedup lines --unit paragraph", "para", "paragraphs", ["lines", "--unit", "paragraph", "--min-chars", "20"]),
            ("curate dedup substrings (50 GPT-2 tokens)", "substrings", "substrings", ["substrings", "--min-length", "50"])]  # fmt: skip
    rows, raw = [], {}
    for label, name, mode, a in runs:
        out, sec, rss = run_curate(docs, name, a)
        raw[label] = (score(docs, out, truth, mode), sec, rss)
    have_peer = (ENV / "bin" / "python").exists() and subprocess.run(
        [str(ENV / "bin" / "python"), "-c", "import datatrove"]
    ).returncode == 0
    if have_peer:
        out, sec, rss = run_datatrove(docs)
        raw["datatrove SentenceDedup (lines)"] = (score(docs, out, truth, "lines"), sec, rss)
    base = raw.get("datatrove SentenceDedup (lines)", (None, None, None))[1]
    for label, (s, sec, rss) in raw.items():
        rows.append([label, f"{s['recall']:.3f}", f"{s['unique_kept']:.4f}", f"{s['precision']:.4f}", f"{args.docs / sec:,.0f}",
                     f"{base / sec:.2f}x" if base else "n/a", f"{rss / 2**20:,.0f}"])  # fmt: skip
    head = ["method", "recall", "unique kept", "precision", "docs/s", "speed vs datatrove", "peak RSS MB"]
    print(tables.text_table(head, rows))
    mem_rows = []
    if args.memory:
        big, _ = corpus(args.memory)
        for label, name, _mode, a in runs[:1] + runs[3:]:
            fixed = [*a, "--task-memory", args.task_memory]
            _, s1, r1 = run_curate(docs, name + "-fixed", fixed)
            _, s2, r2 = run_curate(big, name + "-fixed", fixed)
            mem_rows.append([label, f"{r1 / 2**20:,.0f}", f"{r2 / 2**20:,.0f}", f"{args.docs / s1:,.0f}", f"{args.memory / s2:,.0f}"])
        mh = [
            f"method (--task-memory {args.task_memory})",
            f"peak RSS MB, {args.docs:,} docs",
            f"peak RSS MB, {args.memory:,} docs",
            "docs/s (small)",
            "docs/s (large)",
        ]
        print(tables.text_table(mh, mem_rows))
    if args.write:
        peer_v = tables.versions("datatrove") if not have_peer else subprocess.run(
            [str(ENV / "bin" / "python"), "-c", "import importlib.metadata as m; print('datatrove', m.version('datatrove'))"],
            capture_output=True, text=True).stdout.strip()  # fmt: skip
        note = (f"A planted corpus of {args.docs:,} documents (`corpus()` in the script), one worker each; peer: {peer_v or 'not installed'}. "
                "Recall: share of the planted copies each method should remove that are gone (lines and datatrove: all but the "
                "first copy of boilerplate lines and shared-paragraph sentences; substrings: every copy of the 80-word passages). "
                "Paragraphs: every copy of a shared paragraph but the first. Unique kept: share of the unique sentences whose words "
                "all remain (a final '.' struck beside a repeat is not counted). Precision: share of the removed bytes that were planted "
                "repeats. curate's times include process start-up and Parquet in and out; datatrove's its three pipelines and "
                "Parquet in and out. Peak RSS: the largest process of the run.")  # fmt: skip
        body = tables.md_table(head, rows)
        if mem_rows:
            body += "\n\n## Memory at two corpus sizes\n\n" + tables.md_table(mh, mem_rows)
        tables.write_table("subdoc", "Sub-document dedup: planted corpus, against datatrove", body, note)


if __name__ == "__main__":
    main()
