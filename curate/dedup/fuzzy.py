"""Fuzzy deduplication across the whole corpus: MinHash, LSH, components, removal.

Phases, each sharded, resumable, and leaving Parquet to inspect under ``OUT/_work/``:

a. ``signatures/part-S.parquet`` (doc, id, source, rank, length, shingles) per input
   shard, with the signatures themselves in ``part-S.sig.npy`` (memory-mapped later) and
   ``bands/part-S.parquet`` (doc, band_00, band_01, ...: each band's hash);
b. ``candidates/band-BB.parquet``: per band, candidate pairs from runs of equal band
   hashes (sorting, no in-memory dictionary); ``pairs/chunk-C.parquet``: their union
   without repeats; ``edges/chunk-C.parquet``: the pairs whose Jaccard (estimated from
   the signatures, or exact from ``shingles/``) reaches the threshold, with ``--verify``;
c. ``components.parquet``: connected components of the edges (a vectorised union-find);
d. ``OUT/_clusters.parquet`` (id, cluster, source, kept), then the removal pass writing
   the kept documents with ``dup_cluster`` and the dropped ones with ``dup_of``.

A job whose output file exists is skipped, so a killed run resumes where it stopped.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.dataset import iter_tables
from curate.dedup import minhash
from curate.dedup.clusters import ApplyClusters, choose_survivors, cluster_size_histogram, connected_components, doc_key, row_of, shard_of
from curate.dedup.lsh import ShingleStore, SignatureStore, candidate_pairs, unique_pairs, verify_pairs
from curate.dedup.minhash import MinHasher, band_hashes, optimal_bands
from curate.errors import CurateError
from curate.formats.parquet import write_table_atomic
from curate.registry import stage
from curate.runtime import MAP_OPTIONS, Context, Stage, param
from curate.schema import source_rank
from curate.storage import read_parquet, save_npy_atomic, write_json_atomic
from curate.targets import shard_name

log = logging.getLogger("curate")


@dataclass
class FuzzyConfig:
    """Parameters of fuzzy dedup; ``bands``/``rows`` None means datasketch's optimum."""

    threshold: float = 0.8
    ngram: int = 5
    num_perm: int = 128
    bands: int | None = None
    rows: int | None = None
    seed: int = 42
    verify: str = "none"  # none | signature | exact
    priority: list[str] = field(default_factory=list)

    def resolved(self) -> FuzzyConfig:
        """Fill in bands and rows; with verification the choice leans towards recall."""
        if not 0.0 < self.threshold <= 1.0:
            raise CurateError(f"--threshold must be in (0, 1], got {self.threshold}")
        if self.ngram < 1 or self.num_perm < 2:
            raise CurateError("--ngram must be >= 1 and --num-perm >= 2")
        if self.verify not in ("none", "signature", "exact"):
            raise CurateError(f"--verify must be none, signature or exact, got {self.verify!r}")
        b, r = self.bands, self.rows
        if (b is None) != (r is None):
            raise CurateError("give both --bands and --rows, or neither")
        if b is None:
            weights = (0.5, 0.5) if self.verify == "none" else (0.1, 0.9)
            b, r = optimal_bands(self.threshold, self.num_perm, *weights)
        if b * r > self.num_perm:
            raise CurateError(f"--bands {b} x --rows {r} = {b * r} exceeds --num-perm {self.num_perm}")
        return FuzzyConfig(self.threshold, self.ngram, self.num_perm, b, r, self.seed, self.verify, list(self.priority))


# --------------------------------------------------------------------------- phase a


@dataclass
class _SigJob:
    index: int
    path: Path
    work: Path
    cfg: FuzzyConfig


def _signature_job(job: _SigJob) -> dict[str, Any]:
    cfg = job.cfg
    sig_dir = job.work / "signatures"
    meta_path = sig_dir / f"part-{job.index:05d}.parquet"
    if meta_path.exists():
        return {"skipped": 1}
    t0 = time.perf_counter()
    hasher = MinHasher(cfg.num_perm, cfg.ngram, cfg.seed)
    rank = source_rank(cfg.priority)
    metas, sigs, bands_list, sh_list, sh_off = [], [], [], [], [0]
    row = 0
    for table in iter_tables(job.path, ["id", "text", "source"]):
        n = table.num_rows
        if n == 0:
            continue
        sig, counts, sh, off = hasher.signatures(table.column("text"))
        keys = doc_key(job.index, np.arange(row, row + n))
        row += n
        sources = table.column("source").to_pylist()
        metas.append(
            pa.table(
                {
                    "doc": keys,
                    "id": table.column("id"),
                    "source": table.column("source"),
                    "rank": pa.array([rank(s) for s in sources], pa.int32()),
                    "length": pc.utf8_length(table.column("text")).cast(pa.int64()),
                    "shingles": pa.array(counts.astype(np.int32)),
                }
            )
        )
        sigs.append(sig)
        bh = band_hashes(sig, cfg.bands, cfg.rows)
        has = counts > 0
        bands_list.append((bh[has], keys[has]))
        if cfg.verify == "exact":
            # 32 bits of each shingle hash, in document order: verification reads back only the
            # documents in candidate pairs (ShingleStore.load) and compares them as sets
            sh_list.append(sh.astype(np.uint32))
            sh_off.extend((sh_off[-1] + off[1:]).tolist())
    schema = pa.schema(
        [
            ("doc", pa.int64()),
            ("id", pa.string()),
            ("source", pa.string()),
            ("rank", pa.int32()),
            ("length", pa.int64()),
            ("shingles", pa.int32()),
        ]
    )
    meta = pa.concat_tables(metas).cast(schema) if metas else schema.empty_table()
    sig_all = np.concatenate(sigs) if sigs else np.zeros((0, cfg.num_perm), np.uint32)
    bh_all = np.concatenate([b for b, _ in bands_list]) if bands_list else np.zeros((0, cfg.bands), np.uint64)
    keys_all = np.concatenate([k for _, k in bands_list]) if bands_list else np.zeros(0, np.int64)
    by_band = np.ascontiguousarray(bh_all.T)
    write_table_atomic(
        job.work / "bands" / f"part-{job.index:05d}.parquet",
        pa.table({"doc": keys_all, **{_band_column(b): by_band[b] for b in range(cfg.bands)}}),
        compression="none",  # random hashes do not compress
    )
    if cfg.verify == "exact":
        flat = np.concatenate(sh_list) if sh_list else np.zeros(0, np.uint32)
        save_npy_atomic(job.work / "shingles" / f"part-{job.index:05d}.npy", flat)
        save_npy_atomic(job.work / "shingles" / f"part-{job.index:05d}.off.npy", np.asarray(sh_off, np.int64))
    save_npy_atomic(sig_dir / f"part-{job.index:05d}.sig.npy", sig_all)
    write_table_atomic(meta_path, meta)  # last: marks the job done
    return {"docs": meta.num_rows, "no_shingles": int((meta.column("shingles").to_numpy() == 0).sum()), "seconds": time.perf_counter() - t0}


# --------------------------------------------------------------------------- phase b


def _band_column(band: int) -> str:
    return f"band_{band:02d}"


@dataclass
class _BandJob:
    band: int
    work: Path
    shards: int


def _band_job(job: _BandJob) -> dict[str, Any]:
    """Candidate pairs of one band: its (hash, doc) column pair from every shard, sorted; runs of equal hashes pair up."""
    out = job.work / "candidates" / f"band-{job.band:02d}.parquet"
    if out.exists():
        return {"skipped": 1}
    hs, ds = [], []
    for s in range(job.shards):
        t = read_parquet(job.work / "bands" / f"part-{s:05d}.parquet", columns=[_band_column(job.band), "doc"])
        hs.append(t.column(0).to_numpy())
        ds.append(t.column(1).to_numpy())
    h = np.concatenate(hs) if hs else np.zeros(0, np.uint64)
    d = np.concatenate(ds) if ds else np.zeros(0, np.int64)
    a, b = candidate_pairs(h, d)
    write_table_atomic(out, pa.table({"a": a, "b": b}))
    return {"candidates": len(a), "docs": len(h)}


@dataclass
class _VerifyJob:
    chunk: int
    work: Path
    cfg: FuzzyConfig


VERIFY_CHUNK = 100_000  # candidate pairs per verification job (bounds the shingle sets it loads)


def _verify_job(job: _VerifyJob) -> dict[str, Any]:
    """Jaccard of each unique candidate pair of one chunk; keep those at the threshold."""
    out = job.work / "edges" / f"chunk-{job.chunk:05d}.parquet"
    if out.exists():
        return {"skipped": 1}
    t = read_parquet(job.work / "pairs" / f"chunk-{job.chunk:05d}.parquet")
    a, b = t.column("a").to_numpy(), t.column("b").to_numpy()
    sigs = SignatureStore(job.work / "signatures")
    shingles = ShingleStore(job.work / "shingles") if job.cfg.verify == "exact" else None
    a, b, j = verify_pairs(a, b, job.cfg.threshold, sigs, shingles)
    write_table_atomic(out, pa.table({"a": a, "b": b, "jaccard": j}))
    return {"pairs": t.num_rows, "edges": len(a)}


def _unique_candidates(work: Path, bands: int) -> int:
    """Union of every band's candidates, without repeats, cut into chunks for verification."""
    done = work / "pairs" / "_chunks.json"
    if done.exists():
        import json

        return int(json.loads(done.read_text())["chunks"])
    a_all, b_all = [], []
    for band in range(bands):
        t = read_parquet(work / "candidates" / f"band-{band:02d}.parquet")
        a_all.append(t.column("a").to_numpy())
        b_all.append(t.column("b").to_numpy())
    a, b = unique_pairs(np.concatenate(a_all), np.concatenate(b_all))
    chunks = max(1, -(-len(a) // VERIFY_CHUNK))
    for c in range(chunks):
        sl = slice(c * VERIFY_CHUNK, (c + 1) * VERIFY_CHUNK)
        write_table_atomic(work / "pairs" / f"chunk-{c:05d}.parquet", pa.table({"a": a[sl], "b": b[sl]}))
    write_json_atomic(done, {"chunks": chunks, "pairs": int(len(a))})
    return chunks


# --------------------------------------------------------------------------- phases c, d


def _components(work: Path, chunks: int, verified: bool) -> pa.Table:
    out = work / "components.parquet"
    if out.exists():
        return read_parquet(out)
    a_all, b_all = [], []
    for c in range(chunks):
        f = work / ("edges" if verified else "pairs") / f"chunk-{c:05d}.parquet"
        t = read_parquet(f, columns=["a", "b"])
        a_all.append(t.column("a").to_numpy())
        b_all.append(t.column("b").to_numpy())
    a, b = np.concatenate(a_all), np.concatenate(b_all)
    nodes, labels = connected_components(a, b)
    table = pa.table({"doc": nodes, "component": labels})
    write_table_atomic(out, table)
    write_json_atomic(work / "components.json", {"edges": int(len(a)), "docs_in_edges": int(len(nodes))})
    return table


def _members(work: Path, comps: pa.Table, shards: int) -> pa.Table:
    """Join components with each document's id, source, rank and length (only docs in edges)."""
    keys = comps.column("doc").to_numpy()
    comp = comps.column("component").to_numpy()
    sh = shard_of(keys)
    parts = []
    for s in np.unique(sh):
        m = sh == s
        meta = read_parquet(work / "signatures" / f"part-{int(s):05d}.parquet", columns=["id", "source", "rank", "length"])
        rows = row_of(keys[m])
        sub = meta.take(pa.array(rows))
        parts.append(sub.append_column("doc", pa.array(keys[m])).append_column("component", pa.array(comp[m])))
    if not parts:
        return pa.table({"id": pa.array([], pa.string()), "source": pa.array([], pa.string()), "rank": pa.array([], pa.int32()),
                         "length": pa.array([], pa.int64()), "doc": pa.array([], pa.int64()), "component": pa.array([], pa.int64())})  # fmt: skip
    return pa.concat_tables(parts)


def write_clusters(work: Path, out: Path, clusters: pa.Table, shards: int) -> None:
    """``OUT/_clusters.parquet`` and this shard-by-shard view of it for the removal pass."""
    docs = clusters.column("doc").to_numpy()
    sh = shard_of(docs)
    for s in range(shards):
        m = sh == s
        sub = clusters.filter(pa.array(m))
        write_table_atomic(
            work / "members" / f"part-{s:05d}.parquet",
            pa.table({"row": pa.array(row_of(docs[m])), "cluster": sub.column("cluster"), "kept": sub.column("kept")}),
        )
    write_table_atomic(out / "_clusters.parquet", clusters.select(["id", "cluster", "source", "kept"]))


PRIORITY_HELP = (
    "Ordered sources or globs, best first (e.g. 'pile/Wikipedia,pile/*,cc/*'): a cluster keeps its document from the best source."
)
DEDUP_OPTION_HELP = {
    "inputs": "Input dataset directory (repeatable: all inputs are deduplicated together).",
    "out": "Output dataset directory (work files under OUT/_work/).",
    "keep_rejected": "Write removed duplicates to OUT/_rejected/ with reason and dup_of.",
}
DEDUP_OPTIONS = tuple(o for o in MAP_OPTIONS if o != "only_sources")


@stage("dedup fuzzy", section="deduplicate", order=20)
@dataclass
class FuzzyDedup(Stage):
    """MinHash-LSH near-duplicate removal across all inputs (MT-NLG: Jaccard >= 0.8).

    Phases (each resumable, Parquet under OUT/_work/): signatures, LSH candidate pairs per
    band, connected components, removal. From each cluster the document of the best
    --priority source is kept (ties: the longest, then the smallest id); the others are
    rejected with reason fuzzy_dup and dup_of. Kept cluster members get dup_cluster.

    \b
    Example:
      curate dedup fuzzy --in out/exact --out out/fuzzy --priority 'pile/*,cc/*' --verify exact
    """

    name: ClassVar[str] = "dedup_fuzzy"
    sections: ClassVar[dict[str, str]] = {"dedup": "dedup"}
    kind: ClassVar[str] = "global"
    options: ClassVar[tuple[str, ...]] = DEDUP_OPTIONS
    option_help: ClassVar[dict[str, str]] = DEDUP_OPTION_HELP
    priority: list[str] = param([], PRIORITY_HELP, metavar="SRC,...", multiple=True, split=True)
    threshold: float = param(0.8, "Jaccard similarity of word n-gram sets at which two documents are duplicates.", min=0.0, max=1.0,
                             min_open=True)  # fmt: skip
    ngram: int = param(5, "Words per shingle.", min=1)
    num_perm: int = param(128, "MinHash permutations.", min=2)
    bands: int | None = param(None, "LSH bands [default: datasketch's optimum for the threshold].", min=1)
    rows: int | None = param(None, "Rows per band (with --bands).", min=1)
    verify: str = param("none", "Check each candidate pair's Jaccard before it joins a cluster: 'signature' estimates it from the "
                        "full signature (--verify alone), 'exact' computes it from the shingle sets.",
                        choices=("none", "signature", "exact"), flag_value="signature")  # fmt: skip
    seed: int = param(42, "MinHash permutation seed.")

    def __post_init__(self) -> None:
        if isinstance(self.priority, str):
            self.priority = [p.strip() for p in self.priority.split(",") if p.strip()]
        self.cfg = FuzzyConfig(self.threshold, self.ngram, self.num_perm, self.bands, self.rows, self.seed, self.verify,
                               list(self.priority)).resolved()  # fmt: skip

    def derived_params(self) -> dict[str, Any]:
        return asdict(self.cfg)  # bands and rows resolved

    def summary(self, record: dict[str, Any]) -> list[str]:
        d = record.get("dedup", {})
        return [
            *super().summary(record),
            f"  {d.get('bands')} bands x {d.get('rows')} rows, verify {d.get('verify')}: {d.get('unique_edges', 0):,} edges, "
            f"{d.get('clusters', 0):,} clusters, sizes {d.get('cluster_sizes', {})}",
        ]

    def run(self, ctx: Context) -> dict[str, Any]:
        """The phases over all inputs, then the removal pass."""
        cfg = self.cfg
        files = ctx.files
        work = ctx.work
        timings: dict[str, float] = {}
        log.info(
            "dedup fuzzy: %d shard(s), %d permutations, %d bands x %d rows, threshold %.2f, verify %s, shingling %s",
            len(files),
            cfg.num_perm,
            cfg.bands,
            cfg.rows,
            cfg.threshold,
            cfg.verify,
            minhash.SHINGLING,
        )

        t = time.perf_counter()
        jobs = [_SigJob(i, f, work, cfg) for i, f in enumerate(files)]
        ctx.map(_signature_job, jobs, labels=[shard_name(i) for i in range(len(files))], desc="dedup fuzzy: signatures")
        timings["signatures"] = time.perf_counter() - t

        t = time.perf_counter()
        band_jobs = [_BandJob(b, work, len(files)) for b in range(cfg.bands)]
        ctx.map(_band_job, band_jobs, labels=[f"band-{b:02d}" for b in range(cfg.bands)], desc="dedup fuzzy: LSH bands", unit="band")
        chunks = _unique_candidates(work, cfg.bands)
        timings["lsh"] = time.perf_counter() - t

        if cfg.verify != "none":
            t = time.perf_counter()
            vjobs = [_VerifyJob(c, work, cfg) for c in range(chunks)]
            ctx.map(_verify_job, vjobs, labels=[f"chunk-{c:05d}" for c in range(chunks)], desc="dedup fuzzy: verify", unit="chunk")
            timings["verify"] = time.perf_counter() - t

        t = time.perf_counter()
        comps = _components(work, chunks, cfg.verify != "none")
        clusters_path = ctx.out / "_clusters.parquet"
        if not clusters_path.exists():
            clusters = choose_survivors(_members(work, comps, len(files)), tie_break_longest=True)
            write_clusters(work, ctx.out, clusters, len(files))
        clusters = read_parquet(clusters_path)
        timings["clusters"] = time.perf_counter() - t

        import json

        comp_info = json.loads((work / "components.json").read_text())
        candidates = json.loads((work / "pairs" / "_chunks.json").read_text())["pairs"]

        def finish(merged: dict[str, Any]) -> dict[str, Any]:
            return {
                "dedup": {
                    "bands": cfg.bands,
                    "rows": cfg.rows,
                    "num_perm": cfg.num_perm,
                    "threshold": cfg.threshold,
                    "verify": cfg.verify,
                    "candidate_pairs": candidates,
                    "unique_edges": comp_info["edges"],
                    "docs_in_edges": comp_info["docs_in_edges"],
                    "clusters": int(clusters.filter(clusters.column("kept")).num_rows),
                    "cluster_sizes": cluster_size_histogram(clusters),
                    "phase_seconds": {k: round(v, 3) for k, v in timings.items()},
                }
            }

        members = work / "members"
        return ctx.map_pass(per_shard=lambda i, f: ApplyClusters(str(members / f"part-{i:05d}.parquet"), "fuzzy_dup"), finish=finish)
