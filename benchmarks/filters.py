"""Language ID and heuristic filters: curate against datatrove, per core, on the same documents.

One run measures, on one core each and on the same documents:

* langid: curate's ``LangIdStage`` (lid.176.ftz, text sampled to 4,000 characters, batched
  prediction; and once more without sampling, the same rule as datatrove's) against
  datatrove's ``LanguageFilter`` (languages=["en"], threshold 0.65) given the same model file;
* each rule set: curate's ``FilterStage`` with only that rule set, over Arrow batches of
  1,024 documents as the stage runs, against datatrove's ``GopherQualityFilter``,
  ``GopherRepetitionFilter``, ``C4QualityFilter`` and ``FineWebQualityFilter`` with their
  defaults (the same published thresholds), over datatrove ``Document`` objects;

and prints docs/s and MB/s per core, the speed ratio, and how often the keep/drop decisions
agree; every disagreement is written to benchmarks/_work/filters_disagreements.json with the
two reasons and the document, so each class can be explained.

datatrove runs in its own environment, benchmarks/.env (see benchmarks/requirements.txt),
started by this script as a subprocess (``--peer``). One command sets it up and runs:

    .venv/bin/python benchmarks/filters.py --setup              # creates benchmarks/.env once
    .venv/bin/python benchmarks/filters.py --size 500           # a quick check
    .venv/bin/python benchmarks/filters.py --in out/sample/cc_extract --in out/sample/clean

Documents: the Pile-style sample (sample_data/pile, real prose and code) by default, or the
curate dataset directories given with --in; --size N takes the first N (cycling if needed).
"""

from __future__ import annotations

import sys

# benchmarks/ must not shadow standard modules (benchmarks/tokenize.py vs the stdlib tokenize).
sys.path[:] = [p for p in sys.path if not p.rstrip("/").endswith("benchmarks")]
sys.modules.pop("tokenize", None)

import argparse  # noqa: E402
import collections  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "benchmarks" / "_work"
ENV = ROOT / "benchmarks" / ".env"
MODEL = ROOT / "curate" / "resources" / "lid.176.ftz"
RULE_SETS = ["gopher_quality", "gopher_repetition", "c4", "fineweb"]
BATCH = 1024


# --------------------------------------------------------------------------- the datatrove side (runs in benchmarks/.env)


def run_peer(docs_path: Path, out_path: Path) -> None:
    """Time datatrove's filters on the documents; write decisions and seconds as JSON."""
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
    filters = {
        "langid": lang,
        "gopher_quality": GopherQualityFilter(),
        "gopher_repetition": GopherRepetitionFilter(),
        "c4": C4QualityFilter(),
        "fineweb": FineWebQualityFilter(),
    }
    result = {}
    for name, f in filters.items():
        docs = [Document(text=t, id=str(i)) for i, t in enumerate(texts)]
        decisions = []
        t0 = time.perf_counter()
        for d in docs:
            keep, reason = get_filter_result(f.filter(d))
            decisions.append(None if keep else (reason or "dropped"))
        result[name] = {"seconds": time.perf_counter() - t0, "decisions": decisions}
        print(f"  datatrove {name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
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


def time_curate(docs: list[dict]) -> dict[str, dict]:
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
    for name in RULE_SETS:
        stages[name] = FilterStage(config=FilterConfig(default=[name]))
    result = {}
    for name, stage in stages.items():
        decisions: list[str | None] = []
        t0 = time.perf_counter()
        for b in batches:
            res = stage(b)
            reasons = dict(zip(res.rejected.column("id").to_pylist(), res.rejected.column("reason").to_pylist()))
            decisions.extend(reasons.get(i) for i in b.column("id").to_pylist())
        result[name] = {"seconds": time.perf_counter() - t0, "decisions": decisions}
        print(f"  curate {name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return result


def setup_env() -> None:
    if not (ENV / "bin" / "python").exists():
        print(f"creating {ENV} ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(ENV)], check=True)
    subprocess.run([str(ENV / "bin" / "pip"), "install", "-q", "-r", str(ROOT / "benchmarks" / "requirements.txt")], check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--in", dest="inputs", action="append", default=[], metavar="DIR", help="curate dataset directory (repeatable)")
    ap.add_argument("--size", type=int, default=None, help="number of documents (default: all of the input)")
    ap.add_argument("--setup", action="store_true", help="create benchmarks/.env with the peers first")
    ap.add_argument("--peer", nargs=2, metavar=("DOCS", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peer:
        run_peer(Path(args.peer[0]), Path(args.peer[1]))
        return
    if args.setup:
        setup_env()
    if not (ENV / "bin" / "python").exists():
        sys.exit(f"{ENV} is missing: run `.venv/bin/python benchmarks/filters.py --setup` once")
    sys.path.insert(0, str(ROOT))
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
    ours = time_curate(docs)

    print(f"\n{len(docs):,} documents, {mb:.1f} MB, one core each (curate vs datatrove 0.10.1)\n")
    head = f"{'stage':19s} {'curate docs/s':>14s} {'MB/s':>7s} {'datatrove docs/s':>17s} {'MB/s':>7s} {'speed':>7s} {'agree':>8s} {'differ':>7s}"
    print(head)
    print("-" * len(head))
    report = {}
    for name in ["langid", "langid (unsampled)", *RULE_SETS]:
        o, t = ours[name], theirs[name.split(" ")[0]]
        pairs = list(zip(o["decisions"], t["decisions"]))
        agree = sum((a is None) == (b is None) for a, b in pairs)
        classes = collections.Counter((a, b) for a, b in pairs if (a is None) != (b is None))
        examples = collections.defaultdict(list)
        for i, (a, b) in enumerate(pairs):
            if (a is None) != (b is None) and len(examples[(a, b)]) < 5:
                examples[(a, b)].append(
                    {"id": docs[i]["id"], "source": docs[i]["source"], "chars": len(docs[i]["text"]), "text": docs[i]["text"][:3000]}
                )
        report[name] = [{"curate": a, "datatrove": b, "docs": n, "examples": examples[(a, b)]} for (a, b), n in classes.most_common()]
        so, st = o["seconds"], t["seconds"]
        print(
            f"{name:19s} {len(docs) / so:14,.0f} {mb / so:7.2f} {len(docs) / st:17,.0f} {mb / st:7.2f} {st / so:6.1f}x"
            f" {agree / len(docs):8.2%} {len(docs) - agree:7d}"
        )
    print("\nspeed: datatrove seconds / curate seconds (higher is faster); agree: same keep/drop decision")
    for name, rows in report.items():
        for r in rows[:4]:
            ours_, theirs_ = (f"drops ({x})" if x else "keeps" for x in (r["curate"], r["datatrove"]))
            print(f"  {name}: curate {ours_}, datatrove {theirs_}: {r['docs']} documents")
    out = WORK / "filters_disagreements.json"
    out.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    print(f"every disagreement, with examples: {out}")


if __name__ == "__main__":
    main()
