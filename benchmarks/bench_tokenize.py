"""Tokenization speed: `curate tokenize` end to end against plain tiktoken and Hugging Face tokenizers.

All rows tokenize the same text with GPT-2 BPE:

- tiktoken `encode_ordinary_batch` over the texts already in memory (1 and 2 threads): the
  limit, with no reading or writing;
- Hugging Face `tokenizers` `encode_batch` with a GPT-2 tokenizer.json built from the same
  encoder.json/vocab.bpe (1 and 2 Rayon threads, in a subprocess each so the thread count holds);
- `curate tokenize` as a user runs it (a new process: start-up, tokenizer load, Parquet
  reading, encoding, .bin/.idx writing, merge) with --workers 1 and 2.

MB are UTF-8 bytes of text. Goals: 1 worker within 80% of plain tiktoken on 1 thread;
2 workers faster than plain tiktoken on 1 thread.

    .venv/bin/python benchmarks/bench_tokenize.py --size 100        # the measurement (lead)
    .venv/bin/python benchmarks/bench_tokenize.py --size 2          # does it run

The table goes to docs/benchmarks/tokenize.md (``--no-write``: print only).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import _tables as tables

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CHUNK = 2048  # documents per encode call for the in-memory rows (keeps the Python token lists small)


def source_texts() -> tuple[list[str], str]:
    """Real text: the Pile-style sample if present, else Python's own documentation topics."""
    import zstandard

    files = sorted((ROOT / "sample_data" / "pile").rglob("*.jsonl.zst"))
    texts = []
    for f in files:
        raw = zstandard.ZstdDecompressor().stream_reader(open(f, "rb")).read()  # noqa: SIM115
        for line in raw.decode("utf-8").splitlines():
            try:
                t = json.loads(line).get("text")
            except ValueError:
                continue
            if t:
                texts.append(t)
    if texts:
        return texts, "sample_data/pile"
    import pydoc_data.topics

    return [t for t in pydoc_data.topics.topics.values() if t.strip()], "pydoc_data.topics"


def build_dataset(out: Path, size_mb: float, shards: int) -> str:
    """A dataset directory of about ``size_mb`` MB of text in ``shards`` shards (row groups of 1024)."""
    import pyarrow as pa

    from curate.formats.parquet import ParquetWriter
    from curate.schema import BASE_SCHEMA
    from curate.storage import write_json_atomic

    texts, origin = source_texts()
    marker = out / "_SUCCESS"
    want = {"size_mb": size_mb, "shards": shards, "origin": origin, "texts": len(texts)}
    if marker.exists() and json.loads(marker.read_text()).get("bench") == want:
        return origin
    shutil.rmtree(out, ignore_errors=True)
    rng = random.Random(8)
    target = int(size_mb * 1e6)
    docs, total, i = [], 0, 0
    while total < target:
        if i % len(texts) == 0:
            rng.shuffle(texts)
        t = texts[i % len(texts)]
        docs.append(t)
        total += len(t.encode())
        i += 1
    per = -(-len(docs) // shards)
    for s in range(shards):
        part = docs[s * per : (s + 1) * per]
        w = ParquetWriter(out / f"part-{s:05d}.parquet", BASE_SCHEMA)
        for k in range(0, len(part), 1024):
            rows = [
                {"id": f"b{s}-{k + j}", "text": t, "source": "bench/text", "url": None, "meta": None}
                for j, t in enumerate(part[k : k + 1024])
            ]
            w.write(pa.Table.from_pylist(rows, schema=BASE_SCHEMA))
        w.close()
    write_json_atomic(marker, {"bench": want})
    return origin


def load_texts(dataset: Path) -> list[str]:
    from curate.dataset import iter_dataset

    return [t for tab in iter_dataset([dataset], ["text"]) for t in tab.column("text").to_pylist()]


def time_tiktoken(texts: list[str], threads: int) -> tuple[float, int]:
    from curate.tokenizer import load_tokenizer

    enc = load_tokenizer("gpt2").backend()
    t0 = time.perf_counter()
    n = 0
    for i in range(0, len(texts), CHUNK):
        n += sum(map(len, enc.encode_ordinary_batch(texts[i : i + CHUNK], num_threads=threads)))
    return time.perf_counter() - t0, n


def hf_worker(dataset: Path, tokenizer_json: Path) -> None:
    """Runs in a subprocess whose RAYON_NUM_THREADS is set; prints seconds and tokens as JSON."""
    from tokenizers import Tokenizer

    texts = load_texts(dataset)
    tok = Tokenizer.from_file(str(tokenizer_json))
    tok.encode_special_tokens = True
    t0 = time.perf_counter()
    n = 0
    for i in range(0, len(texts), CHUNK):
        n += sum(len(e.ids) for e in tok.encode_batch(texts[i : i + CHUNK], add_special_tokens=False))
    print(json.dumps({"seconds": time.perf_counter() - t0, "tokens": n}))


def hf_tokenizer_json(path: Path) -> Path:
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    from curate.tokenizer import RESOURCES

    tok = Tokenizer(models.BPE.from_file(str(RESOURCES / "encoder.json"), str(RESOURCES / "vocab.bpe")))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken("<|endoftext|>", special=True)])
    tok.save(str(path))
    return path


def time_hf(dataset: Path, tokenizer_json: Path, threads: int) -> tuple[float, int]:
    env = {**os.environ, "RAYON_NUM_THREADS": str(threads), "RAYON_RS_NUM_CPUS": str(threads), "TOKENIZERS_PARALLELISM": "true"}
    out = subprocess.run(
        [sys.executable, __file__, "--hf-worker", str(dataset), str(tokenizer_json)], env=env, capture_output=True, text=True, check=True
    )
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return r["seconds"], r["tokens"]


def time_curate(dataset: Path, work: Path, workers: int) -> tuple[float, int]:
    prefix = work / f"curate_w{workers}"
    for suffix in (".bin", ".idx", ".stats.json"):
        Path(f"{prefix}{suffix}").unlink(missing_ok=True)
    env = {**os.environ, "CURATE_PROGRESS": "log"}
    cmd = [
        str(BIN / "curate"),
        "--quiet",
        "tokenize",
        "--in",
        str(dataset),
        "--out",
        str(prefix),
        "--workers",
        str(workers),
        "--no-append-eod",
    ]
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    seconds = time.perf_counter() - t0
    stats = json.loads(Path(f"{prefix}.stats.json").read_text())
    return seconds, stats["tokens"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=float, default=100.0, help="MB of text [default: 100]")
    ap.add_argument("--shards", type=int, default=4, help="input shards [default: 4]")
    ap.add_argument("--input", type=Path, default=None, help="use this dataset directory instead of building one")
    ap.add_argument("--repeat", type=int, default=1, help="runs per row; the best is reported [default: 1]")
    ap.add_argument("--work", type=Path, default=ROOT / "benchmarks" / "_work" / "tokenize")
    ap.add_argument("--hf-worker", nargs=2, metavar=("DATASET", "TOKENIZER_JSON"), help=argparse.SUPPRESS)
    tables.add_write_option(ap)
    args = ap.parse_args()
    if args.hf_worker:
        hf_worker(Path(args.hf_worker[0]), Path(args.hf_worker[1]))
        return

    args.work.mkdir(parents=True, exist_ok=True)
    if args.input:
        dataset, origin = args.input, str(args.input)
    else:
        dataset = args.work / "data"
        origin = build_dataset(dataset, args.size, args.shards)
    texts = load_texts(dataset)
    mb = sum(len(t.encode()) for t in texts) / 1e6
    tj = hf_tokenizer_json(args.work / "gpt2-tokenizer.json")
    print(f"text: {mb:.1f} MB, {len(texts):,} documents from {origin}; {os.cpu_count()} CPUs; best of {args.repeat}")

    def best(fn, *a):
        runs = [fn(*a) for _ in range(args.repeat)]
        return min(runs, key=lambda r: r[0])

    rows = [
        ("tiktoken encode_ordinary_batch", "1 thread, in memory", *best(time_tiktoken, texts, 1)),
        ("tiktoken encode_ordinary_batch", "2 threads, in memory", *best(time_tiktoken, texts, 2)),
        ("HF tokenizers encode_batch", "1 thread, in memory", *best(time_hf, dataset, tj, 1)),
        ("HF tokenizers encode_batch", "2 threads, in memory", *best(time_hf, dataset, tj, 2)),
        ("curate tokenize", "--workers 1, end to end", *best(time_curate, dataset, args.work, 1)),
        ("curate tokenize", "--workers 2, end to end", *best(time_curate, dataset, args.work, 2)),
    ]
    limit = rows[0][2]
    tokens = {r[3] for r in rows}
    head = ["tool", "setting", "seconds", "MB/s", "vs tiktoken 1 thread"]
    cells = [[name, setting, f"{secs:.2f}", f"{mb / secs:.2f}", f"{limit / secs:.2f}x"] for name, setting, secs, _n in rows]
    print()
    print(tables.text_table(head, cells, left=2))
    print()
    agree = f"tokens: {', '.join(f'{t:,}' for t in sorted(tokens))} ({'all rows agree' if len(tokens) == 1 else 'rows DISAGREE'})"
    print(agree)
    w1, w2 = rows[4][2], rows[5][2]
    goal1 = f"goal 1: curate --workers 1 at {100 * limit / w1:.0f}% of plain tiktoken on 1 thread (goal: at least 80%): {'met' if limit / w1 >= 0.8 else 'NOT met'}"
    goal2 = f"goal 2: curate --workers 2 at {limit / w2:.2f}x plain tiktoken on 1 thread (goal: above 1x): {'met' if limit / w2 > 1 else 'NOT met'}"
    print(goal1)
    print(goal2)
    if args.write:
        md_cells = [[f"`{c[0]}`" if c[0] == "curate tokenize" else c[0], *c[1:]] for c in cells]
        body = tables.md_table(head, md_cells) + "\n\n" + "\n".join(f"- {line}" for line in (agree, goal1, goal2))
        note = (
            f"Text: {mb:.1f} MB (UTF-8 bytes) in {len(texts):,} documents from {origin}"
            + ("" if args.input else f", shuffled (repeated as needed) into {args.shards} Parquet shards")
            + ", all rows GPT-2 BPE. tiktoken `encode_ordinary_batch` and Hugging Face `tokenizers` `encode_batch` (a GPT-2 "
            "tokenizer.json built from the same encoder.json/vocab.bpe, in a subprocess per thread count) run on the texts "
            "already in memory, without reading or writing: the limit. `curate tokenize` runs as a user runs it: a new "
            "process (start-up, tokenizer load, Parquet reading, encoding, .bin/.idx writing, merge) with `--workers 1` and 2, "
            f"`--no-append-eod` so that the token counts compare. Each row is the best of {args.repeat} run(s); the last column "
            f"is the speed relative to tiktoken on one thread. {tables.versions('tiktoken', 'tokenizers')}."
        )
        tables.write_table("tokenize", "Tokenization: curate tokenize vs tiktoken and Hugging Face tokenizers", body, note)


if __name__ == "__main__":
    main()
