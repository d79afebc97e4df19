"""Fuzzy dedup, phase a: MinHash signatures and LSH band hashes, one task per chunk of an input shard.

A chunk is ``chunk_rows`` consecutive rows of one input shard (the plan chooses the size from
``--task-memory``, so a task's memory does not follow the input's shard size). Each task writes,
under ``_work/sig/``:

- ``c-K.sig.npy`` with ``--verify signature``: the chunk's signatures (``num_perm`` uint32 per document), memory-mapped later;
- ``c-K.sh.npy`` and ``c-K.shoff.npy`` with ``--verify exact``: 32 bits of each shingle hash, per document;
- ``_work/lsh/in/c-K``: every (band hash, doc) row, bucketed by LSH partition (band, hash range);
- ``c-K.meta.parquet`` (doc, id, source, rank, length, shingles, weight), written last: it marks the task done.

Documents are addressed by their doc key (``shard << 32 | row``); ``weight`` is the number of
documents a document already stands for (an input ``dup_count`` from ``dedup exact``, else 1).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.dataset import iter_tables, open_parquet
from curate.dedup.clusters import doc_key, row_of, shard_of
from curate.dedup.minhash import MinHasher, band_hashes, ranges
from curate.formats.parquet import write_table_atomic
from curate.partitions import range_partition, write_buckets
from curate.schema import source_rank
from curate.storage import as_path, np_load, save_npy_atomic

#: Bytes a signature task holds per document of its chunk: the signature, band hashes and their
#: sort, the meta row, the text of one batch; used to size chunks from --task-memory.
SIG_BYTES_PER_DOC = 2048

META_SCHEMA = pa.schema([("doc", pa.int64()), ("id", pa.string()), ("source", pa.string()), ("rank", pa.int32()),
                         ("length", pa.int64()), ("shingles", pa.int32()), ("weight", pa.int64())])  # fmt: skip


def plan_chunks(files: list[Any], chunk_rows: int) -> tuple[list[list[int]], list[int]]:
    """``([[shard, start, stop], ...], first chunk of each shard)`` cutting every input shard into chunks of ``chunk_rows``."""
    chunks: list[list[int]] = []
    first: list[int] = []
    for s, f in enumerate(files):
        n = open_parquet(f).metadata.num_rows
        first.append(len(chunks))
        for start in range(0, max(n, 1), chunk_rows):
            chunks.append([s, start, min(n, start + chunk_rows)])
    return chunks, first


@dataclass
class SigJob:
    chunk: int
    shard: int
    start: int
    stop: int
    path: str
    work: str
    num_perm: int
    ngram: int
    seed: int
    bands: int
    rows: int
    lsh_parts: int  # per band (a power of two)
    verify: str
    priority: list[str]


def sig_path(work: Path, chunk: int, what: str) -> Path:
    return as_path(work) / "sig" / f"c-{chunk:06d}.{what}"


def signature_job(job: SigJob) -> dict[str, Any]:
    """Signatures, band hashes and meta of one chunk (skipped when its meta file exists)."""
    work = as_path(job.work)
    meta_path = sig_path(work, job.chunk, "meta.parquet")
    if meta_path.exists():
        return {"skipped": 1}
    t0 = time.perf_counter()
    hasher = MinHasher(job.num_perm, job.ngram, job.seed)
    rank = source_rank(job.priority)
    names = [c for c in ("id", "text", "source", "dup_count") if c in open_parquet(as_path(job.path)).schema_arrow.names]
    keep_sigs = job.verify == "signature"  # only signature verification reads them back
    sig_all = np.zeros((job.stop - job.start if keep_sigs else 0, job.num_perm), np.uint32)
    metas: list[pa.Table] = []
    bands_h: list[np.ndarray] = []
    bands_d: list[np.ndarray] = []
    bands_b: list[np.ndarray] = []
    sh_list: list[np.ndarray] = []
    sh_off = [0]
    at = 0
    for table in iter_tables(as_path(job.path), names, rows=(job.start, job.stop)):
        n = table.num_rows
        if n == 0:
            continue
        sig, counts, sh, off = hasher.signatures(table.column("text"))
        if keep_sigs:
            sig_all[at : at + n] = sig
        keys = doc_key(job.shard, np.arange(job.start + at, job.start + at + n))
        at += n
        sources = table.column("source").to_pylist()
        weight = table.column("dup_count").cast(pa.int64()).fill_null(1) if "dup_count" in names else pa.array(np.ones(n, np.int64))
        metas.append(pa.table({"doc": keys, "id": table.column("id"), "source": table.column("source"),
                               "rank": pa.array([rank(s) for s in sources], pa.int32()),
                               "length": pc.utf8_length(table.column("text")).cast(pa.int64()),
                               "shingles": pa.array(counts.astype(np.int32)), "weight": weight}).cast(META_SCHEMA))  # fmt: skip
        has = counts > 0
        if has.any():
            bh = band_hashes(sig[has], job.bands, job.rows)  # (docs, bands)
            k = keys[has]
            bands_h.append(bh.T.ravel())
            bands_d.append(np.tile(k, job.bands))
            bands_b.append(np.repeat(np.arange(job.bands, dtype=np.int64), len(k)))
        if job.verify == "exact":
            # 32 bits of each shingle hash, in document order: verification reads back only the
            # documents in candidate pairs and compares them as sets
            sh_list.append(sh.astype(np.uint32))
            sh_off.extend((sh_off[-1] + off[1:]).tolist())
    h = np.concatenate(bands_h) if bands_h else np.zeros(0, np.uint64)
    d = np.concatenate(bands_d) if bands_d else np.zeros(0, np.int64)
    b = np.concatenate(bands_b) if bands_b else np.zeros(0, np.int64)
    part = b * job.lsh_parts + range_partition(h, job.lsh_parts)
    write_buckets(work / "lsh" / "in" / f"c-{job.chunk:06d}", {"h": h, "d": d}, part, job.bands * job.lsh_parts)
    if job.verify == "exact":
        flat = np.concatenate(sh_list) if sh_list else np.zeros(0, np.uint32)
        save_npy_atomic(sig_path(work, job.chunk, "sh.npy"), flat)
        save_npy_atomic(sig_path(work, job.chunk, "shoff.npy"), np.asarray(sh_off, np.int64))
    if keep_sigs:
        save_npy_atomic(sig_path(work, job.chunk, "sig.npy"), sig_all[:at])
    meta = pa.concat_tables(metas) if metas else META_SCHEMA.empty_table()
    write_table_atomic(meta_path, meta)  # last: marks the job done
    no_sh = int((meta.column("shingles").to_numpy() == 0).sum()) if meta.num_rows else 0
    return {"docs": meta.num_rows, "band_rows": int(len(h)), "no_shingles": no_sh, "seconds": time.perf_counter() - t0}


class ChunkIndex:
    """Where a doc key's rows live: chunk ``first[shard] + row // chunk_rows``, at ``row % chunk_rows``."""

    def __init__(self, first_chunk: list[int], chunk_rows: int) -> None:
        self.first = np.asarray(first_chunk, np.int64)
        self.chunk_rows = int(chunk_rows)

    def locate(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rows = row_of(keys)
        return self.first[shard_of(keys)] + rows // self.chunk_rows, rows % self.chunk_rows


class SignatureStore:
    """Signatures of every chunk, memory-mapped from ``_work/sig/c-K.sig.npy`` (one file open per chunk in use)."""

    def __init__(self, work: Path, index: ChunkIndex) -> None:
        self.work = as_path(work)
        self.index = index
        self._maps: dict[int, np.ndarray] = {}

    def _chunk(self, c: int) -> np.ndarray:
        if c not in self._maps:
            self._maps[c] = np_load(sig_path(self.work, c, "sig.npy"))
        return self._maps[c]

    def get(self, keys: np.ndarray) -> np.ndarray:
        """Signature rows of doc ``keys`` (any order), as one array."""
        chunks, rows = self.index.locate(keys)
        if len(keys) == 0:
            return np.zeros((0, 0), np.uint32)
        first = self._chunk(int(chunks[0]))
        out = np.empty((len(keys), first.shape[1]), np.uint32)
        for c in np.unique(chunks):
            m = chunks == c
            out[m] = self._chunk(int(c))[rows[m]]
        return out


class ShingleStore:
    """Shingle hashes per document (32 bits each, for ``--verify exact``), gathered for the documents verification needs.

    Memory holds the shingles of the documents asked for (4 bytes each), never a whole chunk's
    file: each file is mapped, the rows copied out, and the map closed.
    """

    def __init__(self, work: Path, index: ChunkIndex) -> None:
        self.work = as_path(work)
        self.index = index

    def load(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(the sorted unique ``keys``, their shingle hashes concatenated, int64 offsets per key)."""
        keys = np.unique(keys)
        chunks, rows = self.index.locate(keys)
        parts, counts = [], []
        for c in np.unique(chunks):  # sorted keys come chunk by chunk
            r = rows[chunks == c]
            flat = np_load(sig_path(self.work, int(c), "sh.npy"))
            off = np_load(sig_path(self.work, int(c), "shoff.npy"))
            n_sh = np.asarray(off[r + 1] - off[r])
            parts.append(np.asarray(flat[ranges(np.asarray(off[r]), n_sh)]))
            counts.append(n_sh)
            del flat, off  # unmap: the pages read no longer count against the process
        offsets = np.zeros(len(keys) + 1, np.int64)
        if counts:
            np.cumsum(np.concatenate(counts), out=offsets[1:])
        return keys, (np.concatenate(parts) if parts else np.zeros(0, np.uint32)), offsets
