"""Quality-classifier training: model size against out-of-fold ROC AUC, for fastText's --bucket, --dim and --quantize.

Runs `curate quality train`'s own function (:func:`curate.stages.quality.train.train_classifier`,
5 folds, cross-fitted) over a grid of settings on two sets, each setting with two seeds (the
seed draws the sample, the folds and fastText's initialisation, so the spread of a setting's two
AUCs is the noise its differences are to be read against):

* **sample**: what ``pipelines/sample`` feeds `quality train` (its Makefile's targets are run
  into the cache: the filtered Pile subsets against the extracted CommonCrawl sample), with the
  demo's ``--epoch 20 --lr 0.5 --valid-fraction 0.2 --threads 1``.
* **debian**: a larger set of real text built here from Debian packages (pinned versions, fetched
  once with ``apt-get download`` into the cache and read with ``dpkg-deb``, nothing installed):
  positives are edited long-form prose (Jane Austen's six novels and Moby-Dick from
  ``r-cran-janeaustenr``/``r-cran-tokenizers``, the Python 3.11 documentation's reST sources,
  the Debian Administrator's Handbook and the Debian Reference); negatives are the terse,
  list-like text shipped around software (the Linux man-pages project's pages and dpkg's, as
  text, and Tcl's C API pages; Python's and dpkg's changelogs; the packages' Debian changelogs and copyright files).
  Both classes are cut into documents of the same length distribution (log-uniform 300-4,000
  characters, at paragraph breaks), so length is no cue. The CLI's defaults otherwise
  (``--epoch 5 --lr 0.1``), ``--threads 1``.

Recorded per run: the out-of-fold AUC, the bytes of one fold model and of all five, the
vocabulary, and the CPU seconds of the training processes (the five fold trainings, two at a
time on two cores) with the wall seconds of the whole call. ``--cpu-lock /tmp/cpu.lock`` takes
the exclusive CPU lock around each training call only (short sections; do not also wrap the
script in ``flock``). Each run's figures are kept in ``CACHE/runs.json`` (by set, setting and
seed), so an interrupted run resumes; ``--fresh`` measures everything again.
"""

from __future__ import annotations

import argparse
import fcntl
import gzip
import hashlib
import html
import json
import math
import random
import re
import resource
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path

import _tables as tables
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "sample_data"))

from build_pile import archive_members, r_character_vectors, rst_to_text  # noqa: E402
from corpus.sources import fetch  # noqa: E402

from curate.stages.quality.data import NEG_LABEL, POS_LABEL, ClassInput  # noqa: E402
from curate.stages.quality.train import TrainConfig, train_classifier  # noqa: E402

DEBS = {  # bookworm main, pinned
    "r-cran-janeaustenr": "1.0.0-1",
    "r-cran-tokenizers": "0.3.0-1",
    "python3.11-doc": "3.11.2-6+deb12u8",
    "debian-handbook": "11.20220922",
    "debian-reference-en": "2.100",
    "manpages": "6.03-2",
    "manpages-dev": "6.03-2",
    "dpkg": "1.21.23",
    "tcl8.6-doc": "8.6.13+dfsg-2",
}
SET_VERSION = 1
SEED = 2026
POS_SOURCES = "pile/Wikipedia,pile/Gutenberg_PG-19,pile/BookCorpus2,pile/OpenWebText2"  # pipelines/sample's QUALITY_POS_SOURCES
SAMPLE_TRAIN = {"epoch": 20, "lr": 0.5, "valid_fraction": 0.2}  # pipelines/sample's QUALITY_TRAIN, less the model's size


# --------------------------------------------------------------------------- the sets


def fold(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs, each's hard wrapping joined."""
    return [p for p in (fold(b) for b in re.split(r"\n\s*\n", text)) if p]


def html_blocks(raw: str, tags: str) -> list[str]:
    """The text of the given elements in document order (outer ones only), tags stripped, entities resolved."""
    raw = re.sub(r"(?s)<(script|style|pre)\b.*?</\1>", " ", raw)
    out = []
    for m in re.finditer(rf"(?s)<({tags})\b[^>]*>(.*?)</\1\s*>", raw):
        text = fold(html.unescape(re.sub(r"<[^>]+>", " ", m.group(2))).replace("\u00b6", ""))  # less Sphinx's heading anchors
        if text:
            out.append(text)
    return out


ROFF_ESC = {r"\(em": "\u2014", r"\(en": "\u2013", r"\(aq": "'", r"\(dq": '"', r"\(lq": "\u201c", r"\(rq": "\u201d", r"\(bu": "\u2022",
            r"\(co": "\u00a9", r"\(rg": "\u00ae", r"\(mu": "\u00d7", r"\(>=": "\u2265", r"\(<=": "\u2264", r"\*(lq": "\u201c",
            r"\*(rq": "\u201d", r"\-": "-", r"\e": "\\", r"\&": "", r"\|": "", r"\^": "", r"\ ": " ", r"\~": " ", r"\c": "", r"\:": ""}  # fmt: skip
ROFF_TEXT = {"B", "I", "BR", "IR", "RB", "RI", "BI", "IB", "SM", "SB", "OP", "UR", "MT"}
ROFF_BREAK = {"PP", "P", "LP", "TP", "HP", "sp", "RS", "RE", "TQ", "EX", "EE", "nf", "fi", "in", "br"}


def roff_to_text(src: str) -> str:
    """A man page's roff source as plain text: section headings and text kept, requests and font escapes dropped."""
    out: list[str] = []
    in_macro = False
    for line in src.splitlines():
        if in_macro or line.startswith((".de ", ".am ")):  # a macro definition, up to its ".."
            in_macro = line.strip() != ".."
            continue
        if line.startswith(('.\\"', "'\\\"", '.\\"')) or line.strip() in (".", "'"):
            continue
        m = re.match(r"^[.'][ \t]*(\w+|\\\})[ \t]*(.*)$", line)
        if m:
            req, arg = m.groups()
            arg = " ".join(a.strip('"') for a in re.findall(r'"[^"]*"|\S+', arg))
            if req in ("SH", "SS"):
                out += ["", arg, ""]
            elif req == "IP":
                out += ["", arg.rsplit(" ", 1)[0] if re.search(r" \d+$", arg) else arg]
            elif req in ROFF_TEXT:
                out.append(arg)
            elif req in ROFF_BREAK:
                out.append("")
            continue  # TH, so, ds, de, ie, if, TS/TE, ...
        out.append(line)
    text = "\n".join(out)
    text = re.sub(r"\\f(\[[^\]]*\]|\(..|.)", "", text)
    text = re.sub(r"\\\*\[[^\]]*\]|\\s[-+]?\d", "", text)
    for k, v in ROFF_ESC.items():
        text = text.replace(k, v)
    text = re.sub(r"\\\[(\w+)\]", "", text)
    return text.replace("\\", "")


def debian_changelog_entries(text: str) -> list[str]:
    """Entries of a Debian changelog (each from its ``package (version) ...`` line to its `` -- maintainer`` line)."""
    parts = re.split(r"(?m)^(?=\S+ \([^)]+\) [^;]*;)", text)
    return [p.strip() for p in parts if p.strip()]


def debian_texts(cache: Path) -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, str]]:
    """(positive source -> paragraphs, negative source -> paragraphs, package -> sha256) from the pinned packages."""
    debs = {n: fetch(cache, "deb", n, v) for n, v in DEBS.items()}
    m = {n: archive_members(p) for n, p in debs.items()}
    pos: dict[str, list[str]] = {}
    neg: dict[str, list[str]] = {}
    novels = r_character_vectors(m["r-cran-janeaustenr"], "janeaustenr")
    pos["hq/austen"] = [p for v in novels for p in paragraphs("\n".join(v)) if not re.match(r"(?i)^(chapter|volume) ", p)]
    moby = r_character_vectors(m["r-cran-tokenizers"], "tokenizers")[0][0].replace("\r\n", "\n")
    moby = moby[moby.index("CHAPTER 1. Loomings.") : moby.index("*** END OF THIS PROJECT GUTENBERG")]
    pos["hq/moby-dick"] = paragraphs(moby)
    src = "./usr/share/doc/python3.11/html/_sources/"
    pos["hq/python-docs"] = [
        p
        for k in sorted(
            k for k in m["python3.11-doc"] if k.startswith(src) and re.match(r"(library|tutorial|howto|reference|faq)/", k[len(src) :])
        )
        for p in paragraphs(rst_to_text(m["python3.11-doc"][k].decode("utf-8")))
    ]
    hb = "./usr/share/doc/debian-handbook/html/en-US/"
    pos["hq/debian-handbook"] = [
        p
        for k in sorted(k for k in m["debian-handbook"] if k.startswith(hb) and k.endswith(".html"))
        for p in html_blocks(re.sub(r'<div class="para">', "<p>", m["debian-handbook"][k].decode("utf-8")).replace("</div>", "</p>"), "p")
    ]
    ref = gzip.decompress(m["debian-reference-en"]["./usr/share/debian-reference/debian-reference.en.txt.gz"]).decode("utf-8")
    pos["hq/debian-reference"] = paragraphs(ref)
    neg["lq/man-pages"] = [
        p
        for name in ("manpages", "manpages-dev", "dpkg", "tcl8.6-doc")
        for k in sorted(k for k in m[name] if re.match(r"\./usr/share/man/man\w+/", k))
        for p in paragraphs(roff_to_text((gzip.decompress(m[name][k]) if k.endswith(".gz") else m[name][k]).decode("utf-8", "replace")))
    ]
    pychangelog = gzip.decompress(m["python3.11-doc"]["./usr/share/doc/python3.11/html/whatsnew/changelog.html.gz"]).decode("utf-8")
    neg["lq/python-changelog"] = html_blocks(pychangelog.split('role="main"', 1)[-1], "h[1-4]|li")
    neg["lq/dpkg-changelog"] = debian_changelog_entries(gzip.decompress(m["dpkg"]["./usr/share/doc/dpkg/changelog.gz"]).decode("utf-8"))
    neg["lq/debian-changelogs"] = [
        e for name in sorted(m) for k in sorted(m[name]) if re.search(r"/changelog\.Debian\.gz$", k)
        for e in debian_changelog_entries(gzip.decompress(m[name][k]).decode("utf-8", "replace"))
    ]  # fmt: skip
    neg["lq/copyright"] = [
        p
        for name in sorted(m)
        for k in sorted(m[name])
        if k.endswith("/copyright")
        for p in paragraphs(m[name][k].decode("utf-8", "replace"))
    ]
    return pos, neg, {f"{n}={DEBS[n]}": hashlib.sha256(p.read_bytes()).hexdigest() for n, p in debs.items()}


def cut_documents(sources: dict[str, list[str]], rng: random.Random, lo: int = 300, hi: int = 4000) -> list[dict[str, str]]:
    """Consecutive paragraphs of each source joined into documents of a log-uniform target length in [lo, hi] characters."""
    docs = []
    for source, paras in sources.items():
        buf: list[str] = []
        size, target = 0, math.exp(rng.uniform(math.log(lo), math.log(hi)))
        for p in paras:
            buf.append(p[: hi * 2])
            size += len(buf[-1]) + 2
            if size >= target:
                docs.append({"id": f"{source}#{len(docs)}", "text": "\n\n".join(buf), "source": source})
                buf, size, target = [], 0, math.exp(rng.uniform(math.log(lo), math.log(hi)))
        if size >= lo:
            docs.append({"id": f"{source}#{len(docs)}", "text": "\n\n".join(buf), "source": source})
    return docs


def build_debian_set(cache: Path) -> dict:
    """The larger set in ``cache/debian-v{SET_VERSION}/{pos,neg}/part-00000.parquet``, built once; its description."""
    out = cache / f"debian-v{SET_VERSION}"
    manifest = out / "manifest.json"
    if manifest.exists():
        return json.loads(manifest.read_text())
    pos, neg, shas = debian_texts(cache)
    rng = random.Random(SEED)
    info: dict = {"packages": shas, "classes": {}}
    for name, sources in (("pos", pos), ("neg", neg)):
        docs = cut_documents(sources, rng)
        (out / name).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(docs), out / name / "part-00000.parquet")
        per = {s: sum(d["source"] == s for d in docs) for s in sources}
        info["classes"][name] = {"docs": len(docs), "chars": sum(len(d["text"]) for d in docs), "per_source": per}
    manifest.write_text(json.dumps(info, indent=1) + "\n")
    return info


def build_sample_inputs(cache: Path) -> Path:
    """pipelines/sample's inputs of `quality train` (its filter and cc_extract stages), run into ``cache/sample``."""
    out = cache / "sample"
    targets = [str(out / "filter" / "_SUCCESS"), str(out / "cc_extract" / "_SUCCESS")]
    if not all(Path(t).exists() for t in targets):
        curate, python = Path(sys.executable).with_name("curate"), sys.executable
        subprocess.run(["make", "-s", "-C", str(ROOT / "pipelines" / "sample"), f"CURATE={curate}", f"PYTHON={python}", f"OUT={out}", *targets],
                       check=True)  # fmt: skip
    return out


# --------------------------------------------------------------------------- the runs


@contextmanager
def cpu_lock(path: str):
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_one(pos: ClassInput, neg: ClassInput, out: Path, config: TrainConfig, lock: str | None) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    with cpu_lock(lock) if lock else nullcontext():
        c0, t0 = child_cpu(), time.perf_counter()
        rec = train_classifier(pos, neg, out, config)
        cpu, wall = child_cpu() - c0, time.perf_counter() - t0
    sizes = [(out / m).stat().st_size for m in rec["models"]]
    shutil.rmtree(out, ignore_errors=True)
    return {"auc": rec["valid"]["roc_auc"], "fold_bytes": max(sizes), "bytes": sum(sizes), "words": rec["vocabulary_words"],
            "docs": rec["valid"]["docs"], "cpu": cpu, "wall": wall}  # fmt: skip


# (label, bucket, dim, quantize, min_count)
GRID = [
    ("1M x 64 (old default)", 1_000_000, 64, False, 1),
    ("200k x 32", 200_000, 32, False, 1),
    ("100k x 64", 100_000, 64, False, 1),
    ("100k x 32", 100_000, 32, False, 1),
    ("100k x 16", 100_000, 16, False, 1),
    ("50k x 32", 50_000, 32, False, 1),
    ("50k x 16", 50_000, 16, False, 1),
    ("20k x 16", 20_000, 16, False, 1),
    ("100k x 32 --quantize", 100_000, 32, True, 1),
    ("100k x 32 --min-count 2", 100_000, 32, False, 2),
]

DEBIAN_SKIP = {
    "200k x 32",
    "100k x 64",
    "50k x 32",
    "100k x 16",
    "50k x 16",
}  # the larger set's runs take longer: rows between measured ones


def mb(n: float) -> str:
    return f"{n / 1e6:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", default="/tmp/bench_quality_train", help="downloads, the built sets, the runs' scratch")
    ap.add_argument("--sets", default="sample,debian", help="comma-separated: sample, debian")
    ap.add_argument("--seeds", default="1,2", help="comma-separated seeds; each setting runs once per seed")
    ap.add_argument("--only", default="", help="run only the grid rows whose label contains one of these (comma-separated)")
    ap.add_argument("--fresh", action="store_true", help="measure every run again (default: reuse CACHE/runs.json)")
    ap.add_argument(
        "--cached",
        action="store_true",
        help="measure nothing: the table of the runs in CACHE/runs.json (rows with a seed missing left out)",
    )
    ap.add_argument("--cpu-lock", default=None, metavar="PATH", help="hold an exclusive flock on PATH around each training call")
    tables.add_write_option(ap)
    args = ap.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    seeds = [int(s) for s in args.seeds.split(",")]
    grid = [g for g in GRID if not args.only or any(o in g[0] for o in args.only.split(","))]
    sets = {}
    for name in args.sets.split(","):
        if name == "sample":
            s = build_sample_inputs(cache)
            sets[name] = (ClassInput(POS_LABEL, [str(s / "filter")], POS_SOURCES), ClassInput(NEG_LABEL, [str(s / "cc_extract")], "cc/*"),
                          SAMPLE_TRAIN, None)  # fmt: skip
        elif name == "debian":
            info = build_debian_set(cache)
            d = cache / f"debian-v{SET_VERSION}"
            sets[name] = (ClassInput(POS_LABEL, [str(d / "pos")]), ClassInput(NEG_LABEL, [str(d / "neg")]), {}, info)
        else:
            raise SystemExit(f"unknown set {name!r}")
    done_path = cache / "runs.json"
    done = {} if args.fresh or not done_path.exists() else json.loads(done_path.read_text())
    results: dict[str, list[tuple[tuple, list[dict]]]] = {}
    for name, (pos, neg, extra, _) in sets.items():
        results[name] = []
        for g in grid:
            label, bucket, dim, quantize, min_count = g
            if name == "debian" and label in DEBIAN_SKIP:
                continue
            runs = []
            for seed in seeds:
                key = f"{name}-v{SET_VERSION}|{bucket}|{dim}|{quantize}|{min_count}|{seed}"
                if key not in done and args.cached:
                    continue
                if key not in done:
                    config = TrainConfig(
                        bucket=bucket, dim=dim, quantize=quantize, min_count=min_count, seed=seed, threads=1, folds=5, **extra
                    )
                    done[key] = run_one(pos, neg, cache / "run", config, args.cpu_lock)
                    done_path.write_text(json.dumps(done, indent=1) + "\n")
                r = done[key]
                runs.append(r)
                print(f"{name:7s} {label:26s} seed {seed}: AUC {r['auc']:.4f}  fold {mb(r['fold_bytes'])} MB  all {mb(r['bytes'])} MB  "
                      f"words {r['words']:,}  cpu {r['cpu']:.1f} s  wall {r['wall']:.1f} s", flush=True)  # fmt: skip
            if len(runs) == len(seeds):
                results[name].append((g, runs))
    head = ["setting", "AUC (seeds)", "mean AUC", "vs old default", "fold model MB", "5 folds MB", "words", "train CPU s", "wall s"]
    body = []
    for name, rows in results.items():
        pos, neg, extra, info = sets[name]
        base = next((sum(r["auc"] for r in runs) / len(runs) for g, runs in rows if g[1:] == (1_000_000, 64, False, 1)), None)
        out_rows = []
        for (label, *_), runs in rows:
            aucs = [r["auc"] for r in runs]
            mean = sum(aucs) / len(aucs)
            out_rows.append([label, " / ".join(f"{a:.4f}" for a in aucs), f"{mean:.4f}", "" if base is None else f"{mean - base:+.4f}",
                             mb(max(r["fold_bytes"] for r in runs)), mb(max(r["bytes"] for r in runs)),
                             f"{max(r['words'] for r in runs):,}", f"{sum(r['cpu'] for r in runs) / len(runs):.1f}",
                             f"{sum(r['wall'] for r in runs) / len(runs):.1f}"])  # fmt: skip
        docs = max(r["docs"] for _, runs in rows for r in runs)
        if name == "sample":
            title = (f"### sample: what pipelines/sample trains on ({docs:,} documents sampled, balanced): the filtered Pile subsets "
                     f"{POS_SOURCES} against the extracted CommonCrawl sample; --epoch 20 --lr 0.5")  # fmt: skip
        else:
            c = info["classes"]
            title = (f"### debian: {docs:,} documents sampled (balanced) of {c['pos']['docs']:,} positive "
                     f"({', '.join(f'{s} {n:,}' for s, n in c['pos']['per_source'].items())}) and {c['neg']['docs']:,} negative "
                     f"({', '.join(f'{s} {n:,}' for s, n in c['neg']['per_source'].items())}); the defaults --epoch 5 --lr 0.1")  # fmt: skip
        body.append(title + "\n\n" + tables.md_table(head, out_rows))
        print("\n" + title + "\n" + tables.text_table(head, out_rows, "  "))
    if args.write:
        pkgs = next((info["packages"] for *_, info in sets.values() if info), {})
        note = (
            __doc__.split("\n\n", 1)[1].split("Recorded per run")[0].strip()
            + "\n\nAUC: out-of-fold ROC AUC of all sampled documents (5 folds), once per seed (seeds "
            + ", ".join(map(str, seeds))
            + "); 'vs old default': the mean's difference from the 1M x 64 row's. Bytes: the model files as written (one fold; "
            "the five). CPU s: user + system seconds of the fastText training processes (one thread each, two at a time), wall s: "
            "the whole call, data preparation and out-of-fold scoring included; under the exclusive CPU lock."
            + ("\n\nPackages (sha256): " + ", ".join(f"`{k}` {v[:12]}" for k, v in pkgs.items()) if pkgs else "")
        )
        tables.write_table("quality_train", "Quality train: model size against out-of-fold AUC", "\n\n".join(body), note)


if __name__ == "__main__":
    main()
