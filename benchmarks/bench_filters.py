"""Language ID and heuristic filters: curate against datatrove, per core, on the same documents.

One run measures, on one core each and on the same documents:

* langid: curate's ``LangIdStage`` (lid.176.ftz, text sampled to 4,000 characters, batched
  prediction; and once more without sampling, the same rule as datatrove's) against
  datatrove's ``LanguageFilter`` (languages=["en"], threshold 0.65) given the same model file;
* each rule set in each of its presets: curate's ``FilterStage`` with only that rule set, over
  Arrow batches of 1,024 documents as the stage runs, against datatrove 0.10.1's
  ``GopherQualityFilter``, ``GopherRepetitionFilter``, ``C4QualityFilter`` and
  ``FineWebQualityFilter`` with their defaults (and ``C4QualityFilter(filter_no_terminal_punct=
  False)``, as FineWeb ran it, for the ``fineweb`` preset of C4), over datatrove ``Document``
  objects;
* the four rule sets chained (FineWeb's order) under each config-wide preset, against the same
  chain of datatrove filters (for ``published`` against datatrove's ``datatrove`` chain: the
  table then shows how far the published definitions are from datatrove's);

and prints docs/s and MB/s per core, the speed ratio, how often the keep/drop decisions agree
and, of the documents both keep, how many keep the same text (C4 removes lines). Every
disagreement is written to benchmarks/_work/filters_disagreements.json with the two reasons
and the document, so each class can be explained; the table goes to docs/benchmarks/filters.md
with the machine, the date and the command.

datatrove runs in its own environment, benchmarks/.env (see benchmarks/requirements.txt),
started by this script as a subprocess (``--peer``). One command sets it up and runs:

    .venv/bin/python benchmarks/bench_filters.py --setup              # creates benchmarks/.env once
    .venv/bin/python benchmarks/bench_filters.py --size 500           # a quick check
    .venv/bin/python benchmarks/bench_filters.py --in out/sample/clean --in out/sample/cc_extract

Documents: the Pile-style sample (sample_data/pile, real prose and code) by default, or the
curate dataset directories given with --in; --size N takes the first N (cycling if needed).
``--repeat N`` times curate N times (alternating the rows) and keeps the best time of each.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

import _tables as tables

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "benchmarks" / "_work"
ENV = ROOT / "benchmarks" / ".env"
MODEL = ROOT / "curate" / "resources" / "lid.176.ftz"
RULE_SETS = ["gopher_quality", "gopher_repetition", "c4", "fineweb"]
CHAIN = ["gopher_repetition", "gopher_quality", "c4", "fineweb"]  # FineWeb's order (datatrove examples/fineweb.py)
#: (row, curate rule set or "chain", curate preset, the datatrove run it is compared with)
ROWS = [
    ("gopher_quality", "gopher_quality", "paper", "gopher_quality"),
    ("gopher_quality", "gopher_quality", "datatrove", "gopher_quality"),
    ("gopher_repetition", "gopher_repetition", "paper", "gopher_repetition"),
    ("gopher_repetition", "gopher_repetition", "datatrove", "gopher_repetition"),
    ("c4", "c4", "tfds", "c4"),
    ("c4", "c4", "datatrove", "c4"),
    ("c4", "c4", "fineweb", "c4_fineweb"),
    ("fineweb", "fineweb", "datatrove", "fineweb"),
    ("all four, chained", "chain", "published", "chain"),
    ("all four, chained", "chain", "datatrove", "chain"),
    ("all four, chained", "chain", "fineweb", "chain_fineweb"),
]
BATCH = 1024
DOC = ROOT / "docs" / "benchmarks" / "filters.md"


def text_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


# --------------------------------------------------------------------------- the datatrove side (runs in benchmarks/.env)


def run_peer(docs_path: Path, out_path: Path) -> None:
    """Time datatrove's filters on the documents; write decisions, kept-text hashes and seconds as JSON."""
    from datatrove.data import Document
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
        LanguageFilter,
    )
    from datatrove.pipeline.filters.base_filter import get_filter_result
    from datatrove.utils.word_tokenizers import load_word_tokenizer
    from fasttext.FastText import _FastText

    texts = [json.loads(line)["text"] for line in docs_path.open(encoding="utf-8")]
    load_word_tokenizer("eng").word_tokenize("warm up the tokenizer")
    lang = LanguageFilter(languages=["en"], language_threshold=0.65)
    lang.model._model = _FastText(model_path=str(MODEL))  # the same model file, no download
    runs = {
        "langid": [lang],
        "gopher_quality": [GopherQualityFilter()],
        "gopher_repetition": [GopherRepetitionFilter()],
        "c4": [C4QualityFilter()],
        "c4_fineweb": [C4QualityFilter(filter_no_terminal_punct=False)],
        "fineweb": [FineWebQualityFilter()],
        "chain": [GopherRepetitionFilter(), GopherQualityFilter(), C4QualityFilter(), FineWebQualityFilter()],
        "chain_fineweb": [
            GopherRepetitionFilter(),
            GopherQualityFilter(),
            C4QualityFilter(filter_no_terminal_punct=False),
            FineWebQualityFilter(),
        ],
    }
    result = {}
    for name, filters in runs.items():
        docs = [Document(text=t, id=str(i)) for i, t in enumerate(texts)]
        decisions, kept = [], []
        t0 = time.perf_counter()
        for d in docs:
            reason = None
            for f in filters:
                keep, why = get_filter_result(f.filter(d))
                if not keep:
                    reason = why or "dropped"
                    break
            decisions.append(reason)
        seconds = time.perf_counter() - t0
        kept = [None if r is not None else text_hash(d.text) for d, r in zip(docs, decisions)]
        result[name] = {"seconds": seconds, "decisions": decisions, "kept": kept}
        print(f"  datatrove {name}: {seconds:.1f} s", file=sys.stderr)
    out_path.write_text(json.dumps(result))


# --------------------------------------------------------------------------- the curate side


def load_documents(inputs: list[str], size: int | None) -> list[dict]:
    """``{"id", "source", "text"}`` from curate dataset directories, or from sample_data/pile."""
    docs: list[dict] = []
    if inputs:
        from curate.dataset import iter_dataset

        for table in iter_dataset(inputs, columns=["id", "source", "text"]):
            docs.extend(table.to_pylist())
    else:
        import zstandard

        for f in sorted((ROOT / "sample_data" / "pile" / "train").glob("*.jsonl.zst")):
            data = zstandard.ZstdDecompressor().decompress(f.read_bytes(), max_output_size=1 << 31)
            for i, line in enumerate(data.decode("utf-8").splitlines()):
                rec = json.loads(line)
                name = rec["meta"]["pile_set_name"]
                docs.append({"id": f"{f.name}:{i}", "source": f"pile/{name}", "text": rec["text"]})
    if not docs:
        sys.exit("no documents")
    if size:
        docs = [docs[i % len(docs)] for i in range(size)]
    return docs


def time_curate(docs: list[dict], repeat: int = 1) -> dict[str, dict]:
    import pyarrow as pa

    from curate.schema import BASE_SCHEMA
    from curate.stages.filters import FilterConfig, FilterStage
    from curate.stages.langid import LangIdStage, load_model

    rows = [{"id": str(i), "text": d["text"], "source": "bench", "url": None, "meta": None} for i, d in enumerate(docs)]
    batches = [pa.Table.from_pylist(rows[i : i + BATCH], schema=BASE_SCHEMA) for i in range(0, len(rows), BATCH)]
    stages = {
        "langid": LangIdStage(keep=["en"], min_score=0.65),
        "langid (unsampled)": LangIdStage(keep=["en"], min_score=0.65, max_chars=1 << 40),
    }
    load_model(str(MODEL))
    for _, rule_set, preset, _ in ROWS:
        if rule_set == "chain":
            config = FilterConfig(default=CHAIN, preset=preset)
        else:
            config = FilterConfig(default=[rule_set], presets={rule_set: preset})
        stages[f"{rule_set}/{preset}"] = FilterStage(config=config)
    result: dict[str, dict] = {}
    for _ in range(repeat):
        for name, stage in stages.items():
            t0 = time.perf_counter()
            results = [stage(b) for b in batches]
            seconds = time.perf_counter() - t0
            if name not in result or seconds < result[name]["seconds"]:
                decisions: list[str | None] = []
                kept: list[str | None] = []
                for b, res in zip(batches, results):
                    reasons = dict(zip(res.rejected.column("id").to_pylist(), res.rejected.column("reason").to_pylist()))
                    texts = dict(zip(res.kept.column("id").to_pylist(), res.kept.column("text").to_pylist()))
                    for i in b.column("id").to_pylist():
                        decisions.append(reasons.get(i))
                        kept.append(text_hash(texts[i]) if i in texts else None)
                result[name] = {"seconds": seconds, "decisions": decisions, "kept": kept}
            del results
            print(f"  curate {name}: {seconds:.2f} s", file=sys.stderr)
    return result


cpu_model = tables.cpu_model


def compare(ours: dict, theirs: dict, docs: list[dict]) -> tuple[dict, list[dict]]:
    """Agreement of two runs: counts, and the disagreement classes with examples."""
    pairs = list(zip(ours["decisions"], theirs["decisions"]))
    agree = sum((a is None) == (b is None) for a, b in pairs)
    both = [(x, y) for (a, b), x, y in zip(pairs, ours["kept"], theirs.get("kept") or ours["kept"]) if a is None and b is None]
    same_text = sum(x == y for x, y in both)
    classes = collections.Counter((a, b) for a, b in pairs if (a is None) != (b is None))
    text_diff = [
        i
        for i, ((a, b), x, y) in enumerate(zip(pairs, ours["kept"], theirs.get("kept") or ours["kept"]))
        if a is None and b is None and x != y
    ]
    examples = collections.defaultdict(list)
    for i, (a, b) in enumerate(pairs):
        if (a is None) != (b is None) and len(examples[(a, b)]) < 5:
            examples[(a, b)].append(
                {"id": docs[i]["id"], "source": docs[i]["source"], "chars": len(docs[i]["text"]), "text": docs[i]["text"][:3000]}
            )
    report = [{"curate": a, "datatrove": b, "docs": n, "examples": examples[(a, b)]} for (a, b), n in classes.most_common()]
    if text_diff:
        report.append({"curate": "kept, other text", "datatrove": "kept", "docs": len(text_diff),
                       "examples": [{"id": docs[i]["id"], "source": docs[i]["source"], "text": docs[i]["text"][:3000]} for i in text_diff[:5]]})  # fmt: skip
    counts = {"agree": agree, "differ": len(pairs) - agree, "both_kept": len(both), "same_text": same_text}
    return counts, report


def setup_env() -> None:
    if not (ENV / "bin" / "python").exists():
        print(f"creating {ENV} ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(ENV)], check=True)
    subprocess.run([str(ENV / "bin" / "pip"), "install", "-q", "-r", str(ROOT / "benchmarks" / "requirements.txt")], check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--in", dest="inputs", action="append", default=[], metavar="DIR", help="curate dataset directory (repeatable)")
    ap.add_argument("--size", type=int, default=None, help="number of documents (default: all of the input)")
    ap.add_argument("--repeat", type=int, default=1, help="time curate this many times, alternating, and keep the best")
    ap.add_argument("--setup", action="store_true", help="create benchmarks/.env with the peers first")
    ap.add_argument("--no-doc", action="store_true", help=f"do not write {DOC.relative_to(ROOT)}")
    ap.add_argument("--peer", nargs=2, metavar=("DOCS", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peer:
        run_peer(Path(args.peer[0]), Path(args.peer[1]))
        return
    if args.setup:
        setup_env()
    if not (ENV / "bin" / "python").exists():
        sys.exit(f"{ENV} is missing: run `.venv/bin/python benchmarks/bench_filters.py --setup` once")
    docs = load_documents(args.inputs, args.size)
    WORK.mkdir(parents=True, exist_ok=True)
    docs_path, peer_out = WORK / "filters_docs.jsonl", WORK / "filters_datatrove.json"
    with docs_path.open("w", encoding="utf-8") as fh:
        for d in docs:
            fh.write(json.dumps({"text": d["text"]}, ensure_ascii=False) + "\n")
    mb = sum(len(d["text"].encode("utf-8")) for d in docs) / 1e6
    print(f"{len(docs):,} documents, {mb:.1f} MB; one core each", file=sys.stderr)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    subprocess.run([str(ENV / "bin" / "python"), __file__, "--peer", str(docs_path), str(peer_out)], check=True, env=env)
    theirs = json.loads(peer_out.read_text())
    ours = time_curate(docs, args.repeat)

    n = len(docs)
    table = [
        "| rule set | curate preset | curate docs/s | MB/s | datatrove docs/s | MB/s | speed | same decision | differ | same kept text |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    report = {}
    for label, key, peer in [
        ("langid (sampled to 4,000 chars)", "langid", "langid"),
        ("langid (unsampled)", "langid (unsampled)", "langid"),
    ]:
        counts, report[key] = compare(ours[key], theirs[peer], docs)
        so, st = ours[key]["seconds"], theirs[peer]["seconds"]
        table.append(
            f"| {label} | | {n / so:,.0f} | {mb / so:.2f} | {n / st:,.0f} | {mb / st:.2f} | {st / so:.1f}x"
            f" | {counts['agree'] / n:.2%} | {counts['differ']} | |"
        )
    for label, rule_set, preset, peer in ROWS:
        key = f"{rule_set}/{preset}"
        counts, report[key] = compare(ours[key], theirs[peer], docs)
        so, st = ours[key]["seconds"], theirs[peer]["seconds"]
        peer_label = {"c4_fineweb": " (no terminal-punct rule)", "chain_fineweb": " (FineWeb's)"}.get(peer, "")
        same_text = f"{counts['same_text'] / counts['both_kept']:.2%}" if counts["both_kept"] else ""
        table.append(
            f"| {label}{peer_label} | `{preset}` | {n / so:,.0f} | {mb / so:.2f} | {n / st:,.0f} | {mb / st:.2f} | {st / so:.1f}x"
            f" | {counts['agree'] / n:.2%} | {counts['differ']} | {same_text} |"
        )
    print(f"\n{n:,} documents, {mb:.1f} MB, one core each (curate vs datatrove 0.10.1)\n")
    print("\n".join(table))
    print("\nspeed: datatrove seconds / curate seconds (higher is faster); same decision: same keep/drop;")
    print("same kept text: of the documents both keep, those with the same text (C4 removes lines)")
    notes = []
    for name, rows in report.items():
        for r in rows[:4]:
            if r["curate"] == "kept, other text":
                notes.append(f"- {name}: both keep, with other text (other lines removed): {r['docs']} documents")
                continue
            ours_, theirs_ = (f"drops ({x})" if x else "keeps" for x in (r["curate"], r["datatrove"]))
            notes.append(f"- {name}: curate {ours_}, datatrove {theirs_}: {r['docs']} documents")
    print("\n".join(notes))
    out = WORK / "filters_disagreements.json"
    out.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    print(f"every disagreement, with examples: {out}")
    if not args.no_doc:
        command = shlex.join([".venv/bin/python", "benchmarks/bench_filters.py", *sys.argv[1:]])
        DOC.parent.mkdir(parents=True, exist_ok=True)
        DOC.write_text(
            "# Heuristic filters and language ID: curate against datatrove\n\n"
            f"Generated by `{command}` on {datetime.date.today().isoformat()}, CPU: {cpu_model()} (one core each;"
            f" curate best of {args.repeat} alternated round(s); Python {platform.python_version()}).\n\n"
            f"Documents: {n:,}, {mb:.1f} MB ({', '.join(args.inputs) or 'sample_data/pile'}). Peer: datatrove 0.10.1 with"
            " spaCy 3.8 (benchmarks/requirements.txt), its filters' defaults; `c4` with the `fineweb` preset is compared with"
            " `C4QualityFilter(filter_no_terminal_punct=False)`, the chained `fineweb` preset with FineWeb's chain"
            " (datatrove examples/fineweb.py), every other row with the defaults. Rows whose preset is not `datatrove`"
            " or `fineweb` follow other published definitions (docs/filters.md) and are expected to differ.\n\n"
            + "\n".join(table)
            + "\n\nspeed: datatrove seconds / curate seconds (higher is faster); same decision: the same keep/drop"
            " decision; same kept text: of the documents both keep, those with the same text (C4 removes lines).\n\n"
            "Disagreement classes (the commonest four per row; all, with examples, in"
            " benchmarks/_work/filters_disagreements.json):\n\n" + ("\n".join(notes) or "- none") + "\n"
        )
        print(f"table written to {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
