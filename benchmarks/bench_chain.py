"""The whole chain, WARC files to GPT-2 tokens: curate's CLI against datatrove 0.10.1, one core each.

What a user runs, stage by stage, each stage its own process, timed whole (start-up included):

* curate, the real CLI (``.venv/bin/curate``), one subprocess per stage, ``--workers 1``::

      curate extract  --in CORPUS --out R/extract --extractor resiliparse   (datatrove's extractor; --curate-extractor fast: curate's default)
      curate langid   --in R/extract --out R/langid --keep en --min-score 0.65
      curate filter   --in R/langid  --out R/filter --config R/../filters_chain.yaml
      curate dedup fuzzy --in R/filter --out R/dedup --bands 9 --rows 13 --num-perm 117
      curate tokenize --in R/dedup --out R/tokens/corpus                (GPT-2, <|endoftext|> after each document)

  The filter config is a file this script writes: the four rule sets in FineWeb's order
  (gopher_repetition, gopher_quality, c4, fineweb) with datatrove's definitions and C4's
  terminal-punctuation line rule off (the ``fineweb`` preset where curate has presets; else the
  threshold override ``c4: {terminal_punct: false}``).
* datatrove, by ``benchmarks/bench_chain_datatrove.py`` in the peer environment ``benchmarks/.env``
  (three processes: WarcReader -> resiliparse -> LanguageFilter(en, 0.65) -> GopherRepetition ->
  GopherQuality -> C4QualityFilter(filter_no_terminal_punct=False) -> FineWebQuality -> Parquet;
  MinHash 9 buckets x 13 hashes (signatures, buckets, cluster, filter); DocumentTokenizer GPT-2;
  ``LocalPipelineExecutor(tasks=1, workers=1)``; the bucket step runs its 9 tasks one after the other).

Runs alternate (curate, datatrove, datatrove, curate, ...), ``--repeat`` rounds, and each side's best
round (by total wall time) is reported: per stage wall seconds, CPU seconds, docs in and out, docs/s,
peak RSS (``ru_maxrss`` of the stage's process and the processes it waited for, from ``os.wait4``) and
peak PSS of the whole process tree (sampled every 0.1 s), tokens out, and the share of documents both
sides keep after each comparable stage (by WARC-Record-ID: intersection / union). The table goes to
``docs/benchmarks/chain.md`` with the machine, date, command, corpus and versions.

    .venv/bin/python benchmarks/bench_chain.py --pages 2000 --repeat 1 --no-write      # a quick check
    .venv/bin/python benchmarks/bench_chain.py --pages 10000 --repeat 2                  # docs/benchmarks/chain.md
    .venv/bin/python benchmarks/bench_chain.py --scale 10000,100000,1000000 --only curate   # docs/benchmarks/chain_scale.md
    .venv/bin/python benchmarks/bench_chain.py --from-results benchmarks/_work/chain/results-10000.json --cluster-cores 1024

Corpora come from ``benchmarks/bench_chain_corpus.py`` (cached under ``benchmarks/_work/chain/corpus-<pages>-s<seed>``)
or ``--corpus DIR``. ``--scale`` runs the chain at each size (curate only with ``--only curate``) and writes
throughput and peak memory per stage at each size, and the memory each stage adds per document.

Every report ends with a projection of the MT-NLG CommonCrawl part (CC-MAIN-2020-50 and CC-MAIN-2021-04)
from curate's measured per-core speed of each stage: core-hours, disk and wall time on a Ray cluster of
``--cluster-cores`` cores, with its assumptions (WARC files per snapshot, pages and bytes per WARC file)
as options and named in the table. ``--from-results`` redoes only the report from a saved run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import _tables as tables

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
DEFAULT_WORK = BENCH / "_work" / "chain"
ENV = BENCH / ".env"
PEER_PY = ENV / "bin" / "python"
CURATE = Path(sys.executable).parent / "curate"
DOCS = ROOT / "docs" / "benchmarks"
BANDS, ROWS = 9, 13
CURATE_STAGES = ["extract", "langid", "filter", "dedup", "tokenize"]
DT_PROCESSES = ["extract_filter", "minhash", "tokenize"]
#: the peer environment's modules the datatrove chain imports (benchmarks/requirements.txt)
PEER_MODULES = ["datatrove", "resiliparse", "warcio", "cchardet", "magic", "tokenizers", "xxhash", "spacy", "fasttext"]
PEER_DISTS = ["datatrove", "resiliparse", "warcio", "faust-cchardet", "python-magic", "tokenizers", "xxhash", "spacy",
              "fasttext-numpy2-wheel", "pyarrow"]  # fmt: skip
#: what one stage run writes, per byte of WARC input (measured at 2,000 pages: curate 0.8, datatrove 0.5), with margin
OUTPUT_PER_WARC_BYTE = 1.5
WARC_BYTES_PER_PAGE = 23_100  # bench_chain_corpus.py: 230.5 MB per 10k pages since issue 26 (used before a corpus exists)

# projection defaults (assumptions, named in every table)
SNAPSHOTS = "CC-MAIN-2020-50=80000,CC-MAIN-2021-04=80000"
PAGES_PER_WARC = 42_500
GB_PER_WARC = 1.0


class ChainError(SystemExit):
    pass


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------- measuring a process


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from /proc/<pid>/task/<tid>/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                try:
                    with open(f"/proc/{p}/task/{tid}/children") as fh:
                        todo.extend(int(c) for c in fh.read().split())
                except OSError:
                    pass
        except OSError:
            pass
    return out


def _pss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


class TreeSampler(threading.Thread):
    """Peak PSS of a process tree, sampled every ``interval`` seconds (PSS: shared pages counted once)."""

    def __init__(self, pid: int, interval: float = 0.1):
        super().__init__(daemon=True)
        self.pid, self.interval, self.peak = pid, interval, 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.peak = max(self.peak, sum(_pss(p) for p in _tree(self.pid)))
            self._stop_event.wait(self.interval)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


def measure(argv: list[str], log: Path, env: dict[str, str]) -> dict:
    """Run one stage's process; wall and CPU seconds, peak RSS (its own and its reaped children's) and tree PSS."""
    with open(log, "wb") as fh:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        sampler = TreeSampler(proc.pid)
        sampler.start()
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        sampler.stop()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-5:]
        raise ChainError(f"chain: `{shlex.join(argv)}` failed (exit {proc.returncode}); its log: {log}\n  " + "\n  ".join(tail))
    return {
        "wall": wall,
        "cpu": ru.ru_utime + ru.ru_stime,
        "rss_mb": ru.ru_maxrss / 1024,
        "pss_mb": sampler.peak / 2**20,
    }


def child_env() -> dict[str, str]:
    """One core each: no thread pools (Arrow, BLAS, OpenMP, HF tokenizers)."""
    env = dict(os.environ)
    env.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "RAYON_NUM_THREADS": "1",
                "TOKENIZERS_PARALLELISM": "false", "PYTHONHASHSEED": "0"})  # fmt: skip
    return env


def data_bytes(path: Path) -> int:
    """Bytes of a stage's data: files not starting with ``_`` (a directory's parts; a prefix's .bin/.idx)."""
    if path.is_file():
        return path.stat().st_size
    if not path.exists():
        return 0
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file() and not f.name.startswith(("_", ".")))


def tree_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


# ------------------------------------------------------------------------------------------- corpus


def warc_files(corpus: Path) -> list[Path]:
    pats = ("*.warc.gz", "*.warc", "*.arc.gz", "*.arc", "*.warc.zst")
    return sorted({f for p in pats for f in corpus.rglob(p)})


def corpus_info(corpus: Path) -> dict:
    files = warc_files(corpus)
    if not files:
        raise ChainError(f"chain: no WARC files under {corpus}")
    info = {"path": str(corpus), "files": len(files), "warc_bytes": sum(f.stat().st_size for f in files), "pages": None}
    manifest = corpus / "manifest.json"
    if manifest.exists():
        m = json.loads(manifest.read_text())
        info["pages"] = m["params"]["pages"]
        info["generator"] = m.get("generator")
        info["seed"] = m["params"].get("seed")
        info["html_200"] = m["counts"]["expect"].get("doc")
        info["english_share_html"] = m["counts"]["lang_html"].get("en", 0) / max(1, info["html_200"] or 1)
    return info


def corpus_dir(work: Path, pages: int, seed: int) -> Path:
    return work / f"corpus-{pages}-s{seed}"


def disk_check(work: Path, needs: list[tuple[str, int]]) -> None:
    """Stop with a clear message when what is to be written does not fit on the disk of ``work``."""
    work.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(work).free
    total = sum(n for _, n in needs)
    if total > free:
        parts = ", ".join(f"{what} ~{n / 1e9:,.1f} GB" for what, n in needs if n)
        raise ChainError(
            f"chain: not enough disk under {work}: needs ~{total / 1e9:,.1f} GB ({parts}), {free / 1e9:,.1f} GB free "
            f"(df {work}). Free space, or give --work DIR on a larger disk (and --corpus DIR for a corpus built elsewhere)."
        )


def ensure_corpus(work: Path, pages: int, seed: int, workers: int) -> Path:
    out = corpus_dir(work, pages, seed)
    if (out / "manifest.json").exists():
        return out
    say(f"chain: building a {pages:,}-page corpus in {out} (benchmarks/bench_chain_corpus.py, cached for later runs)")
    argv = [sys.executable, str(BENCH / "bench_chain_corpus.py"), "--pages", str(pages), "--seed", str(seed), "--out", str(out),
            "--workers", str(workers), "--overwrite"]  # fmt: skip
    r = subprocess.run(argv, cwd=ROOT)
    if r.returncode != 0:
        raise ChainError(f"chain: building the corpus failed: {shlex.join(argv)}")
    return out


# ------------------------------------------------------------------------------------------- the curate side


def filter_config(path: Path) -> dict:
    """Write the filter config equivalent to the datatrove side; return what it says."""
    from curate.stages.filters import PRESETS

    rules = ["gopher_repetition", "gopher_quality", "c4", "fineweb"]
    if "fineweb" in PRESETS:  # datatrove's definitions, C4's terminal-punctuation line rule off
        text = ("# written by benchmarks/bench_chain.py: datatrove 0.10.1's filters as FineWeb ran them\n"
                f"preset: fineweb\ndefault: [{', '.join(rules)}]\nsources: {{}}\n")  # fmt: skip
        how = "preset fineweb"
    else:
        text = ("# written by benchmarks/bench_chain.py: C4 without the terminal-punctuation rule\n"
                f"default: [{', '.join(rules)}]\nsources: {{}}\nthresholds:\n  c4: {{terminal_punct: false}}\n")  # fmt: skip
        how = "thresholds c4.terminal_punct: false"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return {"path": str(path), "rules": rules, "how": how, "text": text}


#: curate's extractor in the chain (``--curate-extractor``): resiliparse, as datatrove's side, unless asked
CURATE_EXTRACTOR = "resiliparse"


def curate_commands(corpus: Path, run: Path, config: Path) -> list[tuple[str, list[str], Path]]:
    c = str(CURATE)
    w = ["--workers", "1"]
    return [
        ("extract", [c, "extract", "--in", str(corpus), "--out", str(run / "extract"), "--extractor", CURATE_EXTRACTOR, *w],
         run / "extract"),
        ("langid", [c, "langid", "--in", str(run / "extract"), "--out", str(run / "langid"), "--keep", "en", "--min-score", "0.65", *w],
         run / "langid"),
        ("filter", [c, "filter", "--in", str(run / "langid"), "--out", str(run / "filter"), "--config", str(config), *w], run / "filter"),
        ("dedup", [c, "dedup", "fuzzy", "--in", str(run / "filter"), "--out", str(run / "dedup"), "--bands", str(BANDS), "--rows",
                   str(ROWS), "--num-perm", str(BANDS * ROWS), *w], run / "dedup"),
        ("tokenize", [c, "tokenize", "--in", str(run / "dedup"), "--out", str(run / "tokens" / "corpus"), *w], run / "tokens" / "corpus"),
    ]  # fmt: skip


def run_curate(corpus: Path, run: Path, config: Path, env: dict[str, str]) -> dict:
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    stages = []
    for name, argv, out in curate_commands(corpus, run, config):
        m = measure(argv, run / f"{name}.log", env)
        if name == "tokenize":
            rec = json.loads(Path(str(out) + ".stats.json").read_text())
            docs_in = docs_out = rec["documents"]
            out_bytes = data_bytes(Path(str(out) + ".bin")) + data_bytes(Path(str(out) + ".idx"))
            extra = {"tokens": rec["tokens"]}
        else:
            rec = json.loads((out / "_SUCCESS").read_text())
            docs_in, docs_out = rec["docs_in"], rec["docs_out"]
            out_bytes = data_bytes(out)
            extra = {}
            if name == "dedup":
                extra = {"phase_seconds": rec["dedup"].get("phase_seconds", {}), "scratch_bytes": tree_bytes(out / "_work"),
                         "clusters": rec["dedup"].get("clusters"), "edges": rec["dedup"].get("unique_edges")}  # fmt: skip
        stages.append({"stage": name, **m, "in_stage": rec.get("wall_seconds"), "docs_in": docs_in, "docs_out": docs_out,
                       "out_bytes": out_bytes, "command": shlex.join(argv), **extra})  # fmt: skip
        say(f"  curate {name}: {m['wall']:.2f} s, {docs_in:,} -> {docs_out:,} docs, peak RSS {m['rss_mb']:,.0f} MB")
    return {"side": "curate", "stages": stages, "total": sum(s["wall"] for s in stages), "cpu": sum(s["cpu"] for s in stages),
            "tokens": stages[-1]["tokens"]}  # fmt: skip


# ------------------------------------------------------------------------------------------- the datatrove side


def _peer_installers() -> list[int]:
    """Processes that are installing into benchmarks/.env right now (another engineer's --setup)."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(ENV) in cmd and ("pip" in cmd or " -m venv" in cmd):
            pids.append(int(d.name))
    return pids


def wait_for_peer_setup(limit: float = 1800) -> None:
    """Wait while another process creates or installs into benchmarks/.env, rather than racing it."""
    t0 = time.monotonic()
    while pids := _peer_installers():
        if time.monotonic() - t0 > limit:
            raise ChainError(f"chain: {ENV} is still being set up by process(es) {pids} after {limit:.0f} s")
        say(f"chain: waiting for process(es) {pids} setting up {ENV} ...")
        time.sleep(10)


def setup_peer() -> None:
    """Create benchmarks/.env if missing and install benchmarks/requirements.txt (as benchmarks/bench_filters.py --setup does)."""
    if not PEER_PY.exists():
        say(f"chain: creating {ENV} ...")
        subprocess.run([sys.executable, "-m", "venv", str(ENV)], check=True)
    subprocess.run([str(ENV / "bin" / "pip"), "install", "-q", "-r", str(BENCH / "requirements.txt")], check=True)


def check_peer() -> None:
    if not PEER_PY.exists():
        raise ChainError(f"chain: {ENV} is missing: run with --setup once (or --only curate)")
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\nimport xxhash\nassert xxhash.VERSION < '4', xxhash.VERSION"
    r = subprocess.run([str(PEER_PY), "-c", code, *PEER_MODULES], capture_output=True, text=True)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        raise ChainError(f"chain: {ENV} lacks what the datatrove chain needs ({last}): run with --setup once "
                         "(it installs benchmarks/requirements.txt)")  # fmt: skip


def _step(steps: list[dict], *needles: str) -> dict:
    for s in steps:
        if all(n in s["name"] for n in needles):
            return s
    raise ChainError(f"chain: datatrove's stats have no step {' '.join(needles)!r}: {[s['name'] for s in steps]}")


def run_datatrove(corpus: Path, run: Path, env: dict[str, str]) -> dict:
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    script = str(BENCH / "bench_chain_datatrove.py")
    prep = subprocess.run([str(PEER_PY), script, "--stage", "prepare", "--work", str(run)], capture_output=True, text=True, env=env)
    if prep.returncode != 0:
        raise ChainError(f"chain: datatrove preparation failed:\n{prep.stderr[-2000:]}")
    procs = {}
    for name in DT_PROCESSES:
        argv = [str(PEER_PY), script, "--stage", name, "--work", str(run)] + (["--corpus", str(corpus)] if name == "extract_filter" else [])
        m = measure(argv, run / f"{name}.log", env)
        procs[name] = {**m, "command": shlex.join(argv), **json.loads((run / f"{name}.json").read_text())}
        say(f"  datatrove {name}: {m['wall']:.2f} s, peak RSS {m['rss_mb']:,.0f} MB")
    ef = procs["extract_filter"]["executors"]["extract_filter"]
    reader, extractor, lang = _step(ef, "READER"), _step(ef, "Resiliparse"), _step(ef, "Language ID")
    filters = [_step(ef, "Gopher Repetition"), _step(ef, "Gopher Quality"), _step(ef, "C4 Quality"), _step(ef, "FineWeb Quality")]
    writer = _step(ef, "WRITER")
    mh = procs["minhash"]["executors"]
    sig_reader = _step(mh["minhash_signatures"], "READER")
    mh_filter = _step(mh["minhash_filter"], "stage 4")
    tok = procs["tokenize"]["executors"]["tokenize"]
    tok_reader = _step(tok, "READER")
    p_ef, p_mh, p_tok = procs["extract_filter"], procs["minhash"], procs["tokenize"]

    def stage(name, seconds, docs_in, docs_out, proc, out_bytes, **extra):
        return {"stage": name, "wall": seconds, "cpu": None, "rss_mb": proc["rss_mb"], "pss_mb": proc["pss_mb"],
                "docs_in": docs_in, "docs_out": docs_out, "out_bytes": out_bytes, **extra}  # fmt: skip

    ef_steps = reader["seconds"] + extractor["seconds"] + lang["seconds"] + sum(f["seconds"] for f in filters) + writer["seconds"]
    stages = [
        stage("extract", reader["seconds"] + extractor["seconds"], reader["stats"].get("documents", 0), extractor["stats"].get("forwarded", 0),
              p_ef, 0, shared="extract_filter"),
        stage("langid", lang["seconds"], lang["stats"].get("total", 0), lang["stats"].get("forwarded", 0), p_ef, 0, shared="extract_filter"),
        stage("filter", sum(f["seconds"] for f in filters) + writer["seconds"], filters[0]["stats"].get("total", 0),
              writer["stats"].get("total", 0), p_ef, data_bytes(run / "filtered"), shared="extract_filter"),
        stage("dedup", p_mh["wall"], sig_reader["stats"].get("documents", 0), mh_filter["stats"].get("forwarded", 0), p_mh,
              data_bytes(run / "dedup"), scratch_bytes=tree_bytes(run / "minhash"), process=True),
        stage("tokenize", p_tok["wall"], tok_reader["stats"].get("documents", 0), tok_reader["stats"].get("documents", 0), p_tok,
              tree_bytes(run / "tokens"), tokens=p_tok.get("tokens", 0), process=True),
    ]  # fmt: skip
    for s in stages:
        if s.get("process"):
            s["cpu"] = procs[{"dedup": "minhash", "tokenize": "tokenize"}[s["stage"]]]["cpu"]
    steps = []  # datatrove's own accounting, for the breakdown table
    for proc_name, execs in (("extract_filter", procs["extract_filter"]["executors"]), ("minhash", mh), ("tokenize", {"tokenize": tok})):
        for ex_name, ex_steps in execs.items():
            for s in ex_steps:
                if "TAP" in s["name"]:
                    continue
                st = s["stats"]
                steps.append({"process": proc_name, "executor": ex_name, "step": s["name"].split(": ", 1)[-1], "seconds": s["seconds"],
                              "docs_in": st.get("total", st.get("documents")), "docs_out": st.get("forwarded")})  # fmt: skip
    return {
        "side": "datatrove",
        "stages": stages,
        "processes": {k: {x: v[x] for x in ("wall", "cpu", "rss_mb", "pss_mb", "command")} for k, v in procs.items()},
        "extract_filter_overhead": p_ef["wall"] - ef_steps,
        "steps": steps,
        "total": sum(p["wall"] for p in procs.values()),
        "cpu": sum(p["cpu"] for p in procs.values()),
        "tokens": p_tok.get("tokens", 0),
    }


# ------------------------------------------------------------------------------------------- agreement


def _ids_parquet(path: Path) -> set[str]:
    import pyarrow.parquet as pq

    if not path.exists() or not any(path.glob("*.parquet")):
        return set()
    return {str(i).strip("<>") for i in pq.read_table(path, columns=["id"]).column("id").to_pylist()}


def _ids_text(path: Path) -> set[str]:
    return {line.strip().strip("<>") for line in path.read_text().splitlines() if line.strip()} if path.exists() else set()


def agreement(cur_run: Path, dt_run: Path) -> list[dict]:
    """Per comparable stage: the documents each side keeps, both keep, intersection / union (by WARC-Record-ID), and,
    of the documents both sides gave the stage, how many got the same keep/drop decision."""
    pairs = [
        ("extract", _ids_parquet(cur_run / "extract"), _ids_text(dt_run / "ids_extract.txt")),
        ("langid", _ids_parquet(cur_run / "langid"), _ids_text(dt_run / "ids_langid.txt")),
        ("filter", _ids_parquet(cur_run / "filter"), _ids_parquet(dt_run / "filtered")),
        ("dedup (final documents)", _ids_parquet(cur_run / "dedup"), _ids_parquet(dt_run / "dedup")),
    ]
    out = []
    prev = None
    for name, a, b in pairs:
        both, union = len(a & b), len(a | b)
        row = {"stage": name, "curate": len(a), "datatrove": len(b), "both": both, "only_curate": len(a - b),
               "only_datatrove": len(b - a), "jaccard": both / union if union else 1.0}  # fmt: skip
        if prev is not None:
            shared = prev[0] & prev[1]
            row["shared_in"] = len(shared)
            row["same_decision"] = sum((i in a) == (i in b) for i in shared)
        out.append(row)
        prev = (a, b)
    return out


# ------------------------------------------------------------------------------------------- formatting


def f0(x) -> str:
    return "" if x is None else f"{x:,.0f}"


def f1(x) -> str:
    return "" if x is None else f"{x:,.1f}"


def f2(x) -> str:
    return "" if x is None else f"{x:,.2f}"


def md(head, rows) -> str:
    return tables.md_table(head, rows)


def versions_curate() -> str:
    from importlib import metadata

    out = []
    for d in ("curate", "resiliparse", "fasttext-numpy2-wheel", "pyarrow", "tiktoken"):
        try:
            out.append(f"{d} {metadata.version(d)}")
        except metadata.PackageNotFoundError:
            pass
    return ", ".join(out)


def versions_peer() -> str:
    if not PEER_PY.exists():
        return "(benchmarks/.env missing)"
    code = ("from importlib import metadata\nimport sys\nout=[]\nfor d in sys.argv[1:]:\n    try: out.append(f'{d} {metadata.version(d)}')\n"
            "    except metadata.PackageNotFoundError: pass\nprint(', '.join(out))")  # fmt: skip
    r = subprocess.run([str(PEER_PY), "-c", code, *PEER_DISTS], capture_output=True, text=True)
    return r.stdout.strip() or "?"


def corpus_line(c: dict) -> str:
    pages = f"{c['pages']:,} pages" if c.get("pages") else "pages: see extract's docs in"
    extra = ""
    if c.get("html_200"):
        extra = f"; {c['html_200']:,} HTML pages with status 200, {c['english_share_html']:.0%} of them English"
    src = f"benchmarks/bench_chain_corpus.py, seed {c['seed']}" if c.get("generator") else c["path"]
    return f"{pages} in {c['files']} WARC file(s), {c['warc_bytes'] / 1e6:,.1f} MB of WARC.gz ({src}{extra})"


def side_by_side(res: dict) -> tuple[str, str]:
    """(markdown body, terminal summary) of a side-by-side run."""
    cur, dt = res["best"].get("curate"), res["best"].get("datatrove")
    c = res["corpus"]
    pages = c["pages"] or (cur["stages"][0]["docs_in"] if cur else None)
    parts, term = [], []
    # --- totals
    head = ["side", "wall s (whole chain)", "CPU s", "pages/s per core", "peak RSS MB (largest stage)", "documents out", "tokens out"]
    rows = []
    for r in (cur, dt):
        if not r:
            continue
        rows.append([r["side"], f2(r["total"]), f1(r["cpu"]), f0(pages / r["total"]) if pages else "",
                     f0(max(s["rss_mb"] for s in r["stages"])), f0(r["stages"][-1]["docs_out"]), f0(r["tokens"])])  # fmt: skip
    if cur and dt:
        rows.append(["datatrove / curate", f"{dt['total'] / cur['total']:.1f}x", f"{dt['cpu'] / cur['cpu']:.1f}x", "", "", "", ""])
    parts += ["### The whole chain", "", md(head, rows), ""]
    term.append(md(head, rows))
    # --- per stage
    head = ["stage", "curate s", "(start-up)", "docs in -> out", "docs/s", "peak RSS MB", "datatrove s", "docs in -> out", "docs/s",
            "peak RSS MB", "speed"]  # fmt: skip
    rows = []
    for i, name in enumerate(CURATE_STAGES):
        a = cur["stages"][i] if cur else None
        b = dt["stages"][i] if dt else None
        row = [name]
        if a:
            start = a["wall"] - a["in_stage"] if a.get("in_stage") is not None else None
            row += [f2(a["wall"]), f2(start), f"{a['docs_in']:,} -> {a['docs_out']:,}", f0(a["docs_in"] / a["wall"]), f0(a["rss_mb"])]
        else:
            row += [""] * 5
        if b:
            rss = f0(b["rss_mb"]) + (" (one process)" if b.get("shared") else "")
            row += [f2(b["wall"]), f"{b['docs_in']:,} -> {b['docs_out']:,}", f0(b["docs_in"] / b["wall"]) if b["wall"] else "", rss]
        else:
            row += [""] * 4
        row.append(f"{b['wall'] / a['wall']:.1f}x" if a and b and a["wall"] else "")
        rows.append(row)
    if dt:
        rows.append(["(datatrove: start-up, imports, executor, untimed reading of its first process)", "", "", "", "", "",
                     f2(dt["extract_filter_overhead"]), "", "", "", ""])  # fmt: skip
    if cur or dt:
        rows.append(["total", f2(cur["total"]) if cur else "", "", "", "", "", f2(dt["total"]) if dt else "", "", "", "",
                     f"{dt['total'] / cur['total']:.1f}x" if cur and dt else ""])  # fmt: skip
    parts += ["### Per stage", "", md(head, rows), ""]
    term.append(md(head, rows))
    parts += [
        "curate: each stage is its own process (`curate <stage> --workers 1`); *s* is its wall time, start-up included, and "
        "*(start-up)* the part before and after the stage's own work (interpreter, imports, checks, the record). datatrove: "
        "extract, langid and filter are steps of one process, so their seconds are datatrove's own per-step timers "
        "(`stats.json`) and the rest of that process is the row in parentheses; dedup and tokenize are whole processes. "
        "docs/s: documents into the stage per second of the stage (for extract: WARC response records into curate, HTML "
        "records that datatrove's WarcReader passes on). Peak RSS: the largest resident set of the stage's process and the "
        "helper processes it waited for (`ru_maxrss`); for datatrove's first process one figure for its three stages. "
        "speed: datatrove seconds / curate seconds.",
        "",
    ]
    # --- where curate's time goes
    if cur:
        head = ["curate stage", "process wall s", "the stage's own work s", "CPU s", "cores used", "peak RSS MB", "peak PSS MB (all its processes)",
                "output MB"]  # fmt: skip
        rows = []
        for s in cur["stages"]:
            out = f1(s["out_bytes"] / 1e6) + (f" (+{s['scratch_bytes'] / 1e6:,.1f} scratch)" if s.get("scratch_bytes") else "")
            rows.append([s["stage"], f2(s["wall"]), f2(s.get("in_stage")), f2(s["cpu"]), f2(s["cpu"] / s["wall"]), f0(s["rss_mb"]),
                         f0(s["pss_mb"]), out])  # fmt: skip
        ph = cur["stages"][3].get("phase_seconds") or {}
        note = ""
        if ph:
            removal = (cur["stages"][3].get("in_stage") or 0) - sum(ph.values())
            note = "dedup's phases: " + ", ".join(f"{k} {v:.2f} s" for k, v in ph.items()) + f", removal pass {max(0.0, removal):.2f} s. "
        parts += ["### Where curate's time goes", "", md(head, rows), "",
                  note + "cores used = CPU s / wall s (one worker; extract's per-record time limit is a helper process).", ""]  # fmt: skip
    # --- datatrove's breakdown
    if dt:
        head = ["datatrove process", "step", "seconds", "docs in", "docs out"]
        rows = [[s["process"] + ("" if s["executor"] == s["process"] else f" / {s['executor'].removeprefix('minhash_')}"), s["step"],
                 f2(s["seconds"]), f0(s["docs_in"]), f0(s["docs_out"])] for s in dt["steps"]]  # fmt: skip
        for k, p in dt["processes"].items():
            rows.append([k, "(whole process, wall)", f2(p["wall"]), "", ""])
        parts += ["### datatrove's own per-step timers", "", md(head, rows), "",
                  "The reader's timer covers turning a WARC record into a document, not the reading and decompression around it; "
                  "MinHash's four executors run in one process (the bucket step as 9 tasks, one after the other).", ""]  # fmt: skip
    # --- agreement
    if res.get("agreement"):
        head = ["after", "curate keeps", "datatrove keeps", "both", "only curate", "only datatrove", "both / either",
                "same decision on the documents both gave it"]  # fmt: skip
        rows = []
        for a in res["agreement"]:
            same = ""
            if a.get("shared_in"):
                same = f"{a['same_decision'] / a['shared_in']:.1%} of {a['shared_in']:,}"
            rows.append([a["stage"], f0(a["curate"]), f0(a["datatrove"]), f0(a["both"]), f0(a["only_curate"]), f0(a["only_datatrove"]),
                         f"{a['jaccard']:.1%}", same])  # fmt: skip
        tok = ""
        if cur and dt:
            tok = (f" Tokens out: curate {cur['tokens']:,} ({cur['tokens'] / max(1, cur['stages'][-1]['docs_out']):,.0f} per document), "
                   f"datatrove {dt['tokens']:,} ({dt['tokens'] / max(1, dt['stages'][-1]['docs_out']):,.0f} per document); both GPT-2 "
                   "with `<|endoftext|>` after each document.")  # fmt: skip
        parts += ["### Documents both keep", "", md(head, rows), "",
                  "By WARC-Record-ID, after each stage (both sides' outputs of the best round). Where they part: curate extracts "
                  "only HTTP 200 HTML responses and decodes with the declared charset; datatrove's WarcReader takes every record "
                  "whose WARC-Identified-Payload-Type is HTML whatever its HTTP status (so error pages and redirects with a body "
                  "are documents there), and decodes UTF-8, else the charset cchardet detects, and drops the record when that "
                  "detection says UTF-8 too, which it does for most windows-1252 / ISO-8859-1 pages of mostly ASCII English. "
                  "Both use curate's lid.176.ftz; curate's langid samples long text to 4,000 characters; MinHash differs in "
                  "shingling (datatrove: spaCy words of normalised text) and seeds, so near-threshold pairs differ." + tok, ""]  # fmt: skip
        term.append(md(head, rows))
    return "\n".join(parts), "\n\n".join(term)


# ------------------------------------------------------------------------------------------- projection


def parse_snapshots(text: str) -> dict[str, int]:
    out = {}
    for item in text.split(","):
        name, _, n = item.partition("=")
        if not n:
            raise ChainError(f"chain: --warc-files wants SNAPSHOT=COUNT,..., got {item!r}")
        out[name.strip()] = int(n.replace("_", ""))
    return out


def projection(run: dict, corpus: dict, args: argparse.Namespace, dedup_bytes_per_doc: float | None, slope_from: str) -> str:
    """What the MT-NLG CommonCrawl part would take, from curate's measured per-core speed of each stage.

    Two scalings: *by bytes* (this corpus's seconds per byte of WARC x the snapshots' bytes) and *by
    pages* (seconds per page x pages). The headline uses bytes for extract (its work grows with the
    HTML, and real pages are larger than these) and pages for the stages after it (they read
    extracted text, whose size per page depends far less on the HTML around it); both are shown.
    """
    snaps = parse_snapshots(args.warc_files)
    n_files = sum(snaps.values())
    pages_per_file, bytes_per_file = args.pages_per_warc, args.gb_per_warc * 1e9
    pages = corpus["pages"] or run["stages"][0]["docs_in"]
    wbytes = corpus["warc_bytes"]
    total_pages, total_bytes = n_files * pages_per_file, n_files * bytes_per_file
    by_bytes = total_bytes / wbytes  # how many times this corpus, by bytes
    by_pages = total_pages / pages
    cores = args.cluster_cores
    head = ["stage", "s per 1k pages", "s per GB of WARC", "one WARC file: s", "output MB", "peak RSS MB (measured)",
            "core-hours by pages", "by bytes", "**core-hours**", "**wall h**", "output TB"]  # fmt: skip
    rows = []
    tot = {"cb": 0.0, "cp": 0.0, "ch": 0.0, "wall": 0.0, "out": 0.0, "file_s": 0.0}
    for s in run["stages"]:
        sec = s.get("in_stage") or s["wall"]
        core_b, core_p = sec * by_bytes / 3600, sec * by_pages / 3600
        factor = by_bytes if s["stage"] == "extract" else by_pages
        core_h = sec * factor / 3600
        wall_h = core_h / cores  # every stage, dedup's phases included, is tasks over partitions
        out_tb = s["out_bytes"] * by_pages / 1e12
        file_s = sec * (bytes_per_file / wbytes if s["stage"] == "extract" else pages_per_file / pages)
        for k, v in (("cb", core_b), ("cp", core_p), ("ch", core_h), ("wall", wall_h), ("out", out_tb), ("file_s", file_s)):
            tot[k] += v
        rows.append([s["stage"], f2(sec / pages * 1000), f1(sec / (wbytes / 1e9)), f0(file_s), f0(s["out_bytes"] * pages_per_file / pages / 1e6),
                     f0(s["rss_mb"]), f0(core_p), f0(core_b), f"**{core_h:,.0f}**", f"**{wall_h:,.1f}**", f2(out_tb)])  # fmt: skip
    rows.append(["total", "", "", f0(tot["file_s"]), "", "", f0(tot["cp"]), f0(tot["cb"]), f"**{tot['ch']:,.0f}**", f"**{tot['wall']:,.1f}**",
                 f2(tot["out"])])  # fmt: skip
    dd = next(s for s in run["stages"] if s["stage"] == "dedup")
    dedup_docs = dd["docs_in"] / pages * total_pages
    if dedup_bytes_per_doc is not None:
        mem = (
            f" Dedup's peak memory grows by {dedup_bytes_per_doc:,.0f} bytes per document entering it ({slope_from}); the "
            f"~{dedup_docs / 1e9:,.2f} billion documents that would enter it (this corpus's share per page) make "
            f"~{dedup_bytes_per_doc * dedup_docs / 2**30:,.0f} GiB if that growth stayed in one process; it does not: every dedup phase is tasks over partitions bounded by "
            "--task-memory, and docs/benchmarks/dedup_scale.md measures its largest process flat from 1M to 16M documents."
        )
    else:
        mem = " Dedup's memory per document: run `--scale` (chain_scale.md measures it between sizes)."
    notes = [
        f"Assumptions (options of this script): WARC files per snapshot {', '.join(f'{k} {v:,}' for k, v in snaps.items())} "
        f"(`--warc-files`; an assumption: the real count is the length of each snapshot's warc.paths.gz, which `curate download cc` "
        f"records as `listed`); {pages_per_file:,} pages (`--pages-per-warc`) and {args.gb_per_warc:g} GB (`--gb-per-warc`) per WARC "
        f"file, CommonCrawl's usual ~40-45k responses in ~1 GB compressed: {total_pages / 1e9:,.2f} billion pages, "
        f"{total_bytes / 1e12:,.0f} TB of WARC in; a Ray cluster of {cores:,} cores (`--cluster-cores`).",
        f"Measured: curate's stages on one core each at {pages:,} pages ({wbytes / 1e6:,.1f} MB of WARC, {wbytes / pages / 1e3:,.1f} KB "
        "per page); each stage's own work (its record's wall seconds; process start-up left out, as at full scale one process "
        "handles many files). Peak RSS is that run's, per worker process.",
        f"Scaling: the synthetic pages against real CommonCrawl's ({wbytes / pages / 1e3:,.1f} KB vs "
        f"~{bytes_per_file / pages_per_file / 1e3:,.1f} KB of WARC.gz per page: by bytes is {by_bytes / by_pages:,.1f}x by pages). "
        "**Bold** figures use bytes for extract (its work grows with the HTML) and pages for the stages after it (they read "
        "extracted text, which grows far less with the HTML around it), and outputs by pages; both scalings are shown. Real "
        f"CommonCrawl is ~45% English where this corpus is {corpus.get('english_share_html', 0.83):.0%}: langid keeps fewer "
        "there, so the stages after it are over-estimated here.",
        f"Wall time: core-hours / cores for every stage ({n_files:,} files, many more than cores; dedup's phases are tasks "
        f"over partitions of documents, bands and hash ranges, edges and components, as many as the cores).{mem}",
        f"Disk: {total_bytes / 1e12:,.0f} TB of WARC in, each stage's output as in the table (dedup's scratch adds "
        f"{(dd.get('scratch_bytes') or 0) * by_pages / 1e12:,.2f} TB while it runs); tokens as uint16 (.bin) plus the index.",
    ]
    return "\n".join(["### Projection: the MT-NLG CommonCrawl part (CC-MAIN-2020-50 and CC-MAIN-2021-04) with curate", "",
                      md(head, rows), "", *(f"- {n}" for n in notes), ""])  # fmt: skip


# ------------------------------------------------------------------------------------------- scale


def scale_report(res: dict, args: argparse.Namespace) -> str:
    sizes = res["sizes"]
    parts = []
    for side in ("curate", "datatrove"):
        runs = [(n, r["best"].get(side), r["corpus"]) for n, r in sizes.items()]
        runs = [(int(n), b, c) for n, b, c in runs if b]
        if not runs:
            continue
        names = [s["stage"] for s in runs[0][1]["stages"]]
        head = ["stage"] + [f"{n:,} pages" for n, _, _ in runs]
        rows = []
        for i, name in enumerate(names):
            rows.append(
                [name] + [f0(b["stages"][i]["docs_in"] / b["stages"][i]["wall"]) if b["stages"][i]["wall"] else "" for _, b, _ in runs]
            )
        rows.append(["total (pages/s)"] + [f0((c["pages"] or b["stages"][0]["docs_in"]) / b["total"]) for _, b, c in runs])
        if side == "curate":
            rows.append(
                ["(process start-ups, s)"]
                + [f2(sum(s["wall"] - (s.get("in_stage") or s["wall"]) for s in b["stages"])) for _, b, _ in runs]
            )
        parts += [f"### {side}: throughput, documents into each stage per second (one core, whole process)", "", md(head, rows), ""]
        head = ["stage"] + [f"{n:,} pages" for n, _, _ in runs] + ["bytes per extra document"]
        rows = []
        for i, name in enumerate(names):
            cells = [f0(b["stages"][i]["rss_mb"]) for _, b, _ in runs]
            slope = ""
            if len(runs) >= 2:
                slopes = []
                for (_, b1, _), (_, b2, _) in zip(runs, runs[1:]):
                    dd = b2["stages"][i]["docs_in"] - b1["stages"][i]["docs_in"]
                    if dd > 0:
                        slopes.append((b2["stages"][i]["rss_mb"] - b1["stages"][i]["rss_mb"]) * 2**20 / dd)
                slope = " / ".join(f0(x) for x in slopes)
            rows.append([name] + cells + [slope])
        parts += [f"### {side}: peak RSS per stage, MB", "", md(head, rows), "",
                  "bytes per extra document: (peak RSS at the larger size - at the smaller) / (documents into the stage at the larger "
                  "- at the smaller), for each pair of consecutive sizes. A stage whose memory is flat shows ~0; dedup holds "
                  "per-document state (signatures per band, the edges' components).", ""]  # fmt: skip
    return "\n".join(parts)


def dedup_slope(res: dict, min_pages: int = 0) -> float | None:
    """Bytes of dedup's peak RSS per extra document, between the two largest sizes of a scale result
    (None when the smaller of them has fewer than ``min_pages`` pages: below that, noise)."""
    runs = sorted(((int(n), r["best"].get("curate")) for n, r in res.get("sizes", {}).items()), key=lambda x: x[0])
    runs = [(n, b) for n, b in runs if b]
    if len(runs) < 2:
        return None
    (n_a, a), (_, b) = runs[-2], runs[-1]
    if n_a < min_pages:
        return None
    da, db = a["stages"][3], b["stages"][3]
    if db["docs_in"] <= da["docs_in"]:
        return None
    return max(0.0, (db["rss_mb"] - da["rss_mb"]) * 2**20 / (db["docs_in"] - da["docs_in"]))


# ------------------------------------------------------------------------------------------- main


def run_rounds(corpus: Path, work: Path, label: str, sides: list[str], repeat: int, env: dict[str, str]) -> dict:
    config = filter_config(work / "filters_chain.yaml") if "curate" in sides else None
    runs: dict[str, list[dict]] = {s: [] for s in sides}
    best: dict[str, dict] = {}
    dirs = {"curate": work / f"run-{label}-curate", "datatrove": work / f"run-{label}-datatrove"}
    keep = {}
    for r in range(repeat):
        order = sides if r % 2 == 0 else list(reversed(sides))
        for side in order:
            say(f"chain: round {r + 1}/{repeat}, {side}")
            tmp = dirs[side].with_name(dirs[side].name + "-try")
            res = run_curate(corpus, tmp, Path(config["path"]), env) if side == "curate" else run_datatrove(corpus, tmp, env)
            runs[side].append({"total": res["total"], "cpu": res["cpu"]})
            say(f"chain: {side} round {r + 1}: {res['total']:.2f} s")
            if side not in best or res["total"] < best[side]["total"]:
                best[side] = res
                shutil.rmtree(dirs[side], ignore_errors=True)
                tmp.rename(dirs[side])
                keep[side] = dirs[side]
            else:
                shutil.rmtree(tmp, ignore_errors=True)
    out = {"best": best, "rounds": runs, "filter_config": config, "dirs": {k: str(v) for k, v in keep.items()}}
    if "curate" in best and "datatrove" in best:
        out["agreement"] = agreement(keep["curate"], keep["datatrove"])
    return out


def meta(args: argparse.Namespace, sides: list[str]) -> dict:
    return {
        "date": datetime.date.today().isoformat(),
        "command": " ".join([".venv/bin/python", "benchmarks/bench_chain.py", *(shlex.quote(a) for a in sys.argv[1:])]),
        "argv": sys.argv[1:],
        "cpu": f"{tables.cpu_model()} ({os.cpu_count()} cores)",
        "python": platform.python_version(),
        "curate_versions": versions_curate(),
        "datatrove_versions": versions_peer() if "datatrove" in sides else None,
        "repeat": args.repeat,
        "sides": sides,
        "curate_extractor": CURATE_EXTRACTOR,
    }


def measured(m: dict, args: argparse.Namespace) -> str:
    """Where a re-rendered page's figures come from (a fresh run's header already says it)."""
    if not getattr(args, "from_results", None):
        return ""
    return (f"Figures measured on {m['date']} by `{m['command']}` on {m['cpu']}; this page re-rendered from "
            f"{args.from_results} by `{' '.join(['.venv/bin/python', 'benchmarks/bench_chain.py', *map(shlex.quote, sys.argv[1:])])}` "
            "(projection options as given there). ")  # fmt: skip


def render(res: dict, args: argparse.Namespace) -> tuple[str, str, str, str]:
    """(doc name, title, note, body) of a result."""
    m = res["meta"]
    vers = f"curate side: {m['curate_versions']}" + (
        f"; datatrove side (benchmarks/.env): {m['datatrove_versions']}" if m.get("datatrove_versions") else ""
    )
    if res["mode"] == "scale":
        sizes = res["sizes"]
        largest = max(sizes, key=int)
        big = sizes[largest]
        note = (f"{measured(m, args)}One worker per stage, best of {m['repeat']} round(s) at each size. "
                f"Corpora: " + "; ".join(corpus_line(sizes[n]["corpus"]) for n in sorted(sizes, key=int)) + f". Versions: {vers}. "
                "The chain and its settings are those of [chain.md](chain.md).")  # fmt: skip
        body = scale_report(res, args)
        if big["best"].get("curate"):
            body += "\n" + projection(
                big["best"]["curate"], big["corpus"], args, dedup_slope(res), "measured here, between the two largest sizes"
            )
        return "chain_scale", "The whole chain at 10k to 1M pages: throughput and memory per stage", note, body
    cfg = (res.get("filter_config") or {}).get("how", "")
    ex = m.get("curate_extractor", "resiliparse")
    extraction = (
        "resiliparse main-content extraction"
        if ex == "resiliparse"
        else (f"main-content extraction (curate: `--extractor {ex}`, its default; datatrove: resiliparse)")
    )
    note = (f"{measured(m, args)}One worker per stage, each stage a "
            f"whole process (start-up included), runs alternating curate and datatrove, best of {m['repeat']} round(s) per side. "
            f"Corpus: {corpus_line(res['corpus'])}. Versions: {vers}. The chain on both sides: {extraction}, fastText lid.176 English >= 0.65, Gopher repetition and quality, C4 without the terminal-punctuation "
            f"line rule, FineWeb (datatrove's definitions; curate: filter config {cfg}), MinHash 5-grams 9 bands x 13 rows, "
            "GPT-2 tokens (curate: Megatron .bin/.idx; datatrove: its own .ds format, unshuffled). Commands and datatrove's "
            "pipeline: the docstrings of benchmarks/bench_chain.py and benchmarks/bench_chain_datatrove.py.")  # fmt: skip
    if res["corpus"].get("pages") and res["corpus"]["pages"] < 10_000:
        note = "**Development run at a small size**: the published table is the 10,000-page run.\n\n" + note
    body, _ = side_by_side(res)
    if res["best"].get("curate"):
        slope, src = None, ""
        scale_file = Path(args.work) / "results-scale.json"
        if scale_file.exists():
            scale = json.loads(scale_file.read_text())
            slope = dedup_slope(scale, min_pages=10_000)
            src = f"measured by `{scale['meta']['command']}` on {scale['meta']['date']}, chain_scale.md"
        body += "\n" + projection(res["best"]["curate"], res["corpus"], args, slope, src)
    pages = res["corpus"].get("pages") or 0
    name = "chain" if pages in (0, 10_000) or pages < 10_000 else f"chain_{pages // 1000}k"  # 10k: the published table
    if ex != "resiliparse":
        name += f"_{ex}"  # its own table: chain.md stays the same-extractor comparison
    return name, f"The whole chain, WARC to tokens: curate against datatrove{'' if name == 'chain' else f' at {pages:,} pages'}", note, body


def write_doc(name: str, title: str, note: str, body: str, write: bool, argv: list[str] | None = None) -> None:
    if not write:
        return
    argv = sys.argv[1:] if argv is None else argv
    tables.write_table(name, title, body, note, argv=argv, script="chain")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=10_000, help="corpus size in pages (response records) (default 10000)")
    ap.add_argument("--seed", type=int, default=1, help="corpus seed (default 1)")
    ap.add_argument("--corpus", type=Path, help="use this WARC corpus (a directory) instead of building one")
    ap.add_argument("--repeat", type=int, default=None, help="rounds per side, alternating; the best is reported (default 2; --scale: 1)")
    ap.add_argument("--only", choices=["curate", "datatrove"], help="run one side only")
    ap.add_argument("--curate-extractor", default="resiliparse",
                    help="curate's --extractor (default resiliparse, datatrove's; e.g. fast, curate's default: "
                         "then the table is docs/benchmarks/chain_fast.md)")  # fmt: skip
    ap.add_argument("--scale", metavar="N,N,...", help="run the chain at each corpus size (e.g. 10000,100000,1000000)")
    ap.add_argument("--work", type=Path, default=DEFAULT_WORK, help=f"corpora, runs and results (default {DEFAULT_WORK.relative_to(ROOT)})")
    ap.add_argument("--corpus-workers", type=int, default=os.cpu_count() or 1, help="processes building a corpus (default: all cores)")
    ap.add_argument("--cluster-cores", type=int, default=512, help="projection: cores of the Ray cluster (default 512)")
    ap.add_argument("--warc-files", default=SNAPSHOTS, help=f"projection: WARC files per snapshot, an assumption (default {SNAPSHOTS})")
    ap.add_argument(
        "--pages-per-warc", type=int, default=PAGES_PER_WARC, help=f"projection: pages per WARC file (default {PAGES_PER_WARC:,})"
    )
    ap.add_argument(
        "--gb-per-warc", type=float, default=GB_PER_WARC, help=f"projection: GB per WARC file, compressed (default {GB_PER_WARC})"
    )
    ap.add_argument(
        "--from-results", type=Path, metavar="JSON", help="no run: redo the report (and its projection) from a saved results file"
    )
    ap.add_argument(
        "--setup", action="store_true", help="create or complete benchmarks/.env first (pip install -r benchmarks/requirements.txt)"
    )
    tables.add_write_option(ap)
    args = ap.parse_args(argv)
    args.work = args.work.resolve()
    global CURATE_EXTRACTOR
    CURATE_EXTRACTOR = args.curate_extractor

    if args.from_results:
        res = json.loads(args.from_results.read_text())
        args.repeat = res["meta"]["repeat"]
        name, title, note, body = render(res, args)
        print(body)
        orig = res["meta"].get("argv") or shlex.split(res["meta"]["command"])[2:]
        write_doc(name, title, note, body, args.write, orig)
        return

    sides = [args.only] if args.only else ["curate", "datatrove"]
    if "datatrove" in sides or args.setup:
        wait_for_peer_setup()
    if args.setup:
        setup_peer()
    if "datatrove" in sides:
        check_peer()
    env = child_env()
    if args.scale:
        sizes = sorted({int(x.replace("_", "")) for x in args.scale.split(",") if x.strip()})
        args.repeat = args.repeat or 1
        if args.corpus:
            raise ChainError("chain: --scale builds its corpora; --corpus is for one size")
        per_page = WARC_BYTES_PER_PAGE
        missing = [n for n in sizes if not (corpus_dir(args.work, n, args.seed) / "manifest.json").exists()]
        needs = [(f"corpus of {n:,} pages", int(n * per_page)) for n in missing]
        needs.append((f"stage outputs at {max(sizes):,} pages", int(max(sizes) * per_page * OUTPUT_PER_WARC_BYTE * len(sides))))
        disk_check(args.work, needs)
        res = {"mode": "scale", "meta": meta(args, sides), "sizes": {}}
        for n in sizes:
            corpus = ensure_corpus(args.work, n, args.seed, args.corpus_workers)
            info = corpus_info(corpus)
            disk_check(args.work, [(f"stage outputs at {n:,} pages", int(info["warc_bytes"] * OUTPUT_PER_WARC_BYTE * len(sides)))])
            say(f"chain: {corpus_line(info)}")
            r = run_rounds(corpus, args.work, f"scale-{n}", sides, args.repeat, env)
            res["sizes"][str(n)] = {"corpus": info, **r}
            (args.work / "results-scale.json").write_text(json.dumps(res, indent=1))  # after each size: a partial result survives
        out = args.work / "results-scale.json"
    else:
        args.repeat = args.repeat or 2
        if args.corpus:
            corpus = args.corpus.resolve()
        else:
            if not (corpus_dir(args.work, args.pages, args.seed) / "manifest.json").exists():
                disk_check(args.work, [(f"corpus of {args.pages:,} pages", args.pages * WARC_BYTES_PER_PAGE)])
            corpus = ensure_corpus(args.work, args.pages, args.seed, args.corpus_workers)
        info = corpus_info(corpus)
        disk_check(args.work, [("stage outputs", int(info["warc_bytes"] * OUTPUT_PER_WARC_BYTE * len(sides) * 2))])
        say(f"chain: {corpus_line(info)}")
        label = str(info["pages"] or corpus.name) + ("" if CURATE_EXTRACTOR == "resiliparse" else f"-{CURATE_EXTRACTOR}")
        res = {"mode": "chain", "meta": meta(args, sides), "corpus": info, **run_rounds(corpus, args.work, label, sides, args.repeat, env)}
        out = args.work / f"results-{label}{'-' + args.only if args.only else ''}.json"
        out.write_text(json.dumps(res, indent=1))
        if not res["corpus"]["pages"] and res["best"].get("curate"):
            res["corpus"]["pages"] = res["best"]["curate"]["stages"][0]["docs_in"]
    say(f"chain: results in {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    name, title, note, body = render(res, args)
    print(body)
    write_doc(name, title, note, body, args.write)


if __name__ == "__main__":
    main()
