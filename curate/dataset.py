"""Dataset directories: Parquet shards, per-shard stats, reading documents, output directories.

Layout of a stage's output (docs/design.md):

    OUT/part-00000.parquet           kept documents, one shard per input shard
    OUT/_rejected/part-00000.parquet dropped documents with ``reason`` (--keep-rejected;
                                     the underscore keeps pandas.read_parquet(OUT) to kept rows)
    OUT/_stats/part-00000.json       per-shard counters
    OUT/_params.json                 the stage's parameters and its inputs' fingerprint, written first
    OUT/_SUCCESS                     written last: merged stats, parameters and the output's fingerprint

A shard's files are written in the order rejected, stats, kept (each atomically, see
``storage.py``), so an existing ``part-*.parquet`` means the whole shard is complete.
Reading repairs what Arrow does not check (invalid UTF-8) and fills null text with "".
This module imports neither the executor nor any stage; ``runtime.py`` runs stages over it.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.errors import CurateError, OutputError, output_error
from curate.schema import REQUIRED_COLUMNS, conform
from curate.storage import (
    AnyPath,
    RemotePath,
    as_path,
    glob_paths,
    read_texts,
    rmtree,
    tmp_path,
    unlink_quietly,
    write_bytes_atomic,
    write_json_atomic,
)

log = logging.getLogger("curate")

SUCCESS = "_SUCCESS"
PARAMS = "_params.json"
STATS_DIR = "_stats"
REJECTED_DIR = "_rejected"
ERRORS_DIR = "_errors"
WORK_DIR = "_work"
BATCH_ROWS = int(os.environ.get("CURATE_BATCH_ROWS", "1024"))
_DICT_COLUMNS = ("source", "lang", "reason")


def shard_name(index: int) -> str:
    """The file stem of shard ``index``: ``part-00000``."""
    return f"part-{index:05d}"


# --------------------------------------------------------------------------- writing shards


class ShardWriter:
    """Streams tables into one Parquet file (zstd) under a temporary name; ``close`` renames it.

    The schema is fixed by the first table (or ``schema``); later tables are cast to it.
    ``abort`` removes the temporary file, so a failed shard leaves nothing under its name.
    On an object store (a :class:`RemotePath`) the file is uploaded straight to its final
    key without committing (a multipart upload); ``close`` completes the upload, and only
    then does the object exist, whole; ``abort`` (or a killed process) never completes it.
    ``in_memory`` (small files written whole, remote only): build the file in memory and
    upload it in one request.
    """

    def __init__(self, path: AnyPath, schema: pa.Schema | None = None, compression: str = "zstd", in_memory: bool = False) -> None:
        self.path = as_path(path)
        self.tmp = tmp_path(self.path) if isinstance(self.path, Path) else None
        self.schema = schema
        self.compression = compression
        self.rows = 0
        self.in_memory = in_memory and self.tmp is None
        self._writer: pq.ParquetWriter | None = None
        self._fh: Any = None  # the uncommitted upload of a remote file (or its bytes, in_memory)

    def _open(self, schema: pa.Schema) -> None:
        self.schema = schema
        dict_cols = [c for c in _DICT_COLUMNS if c in schema.names]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.tmp is None:
                self._fh = io.BytesIO() if self.in_memory else self.path.open("wb", autocommit=False)
            self._writer = pq.ParquetWriter(
                self.tmp if self.tmp is not None else self._fh,
                schema,
                compression=self.compression,
                use_dictionary=dict_cols or False,
                write_statistics=["id"] if "id" in schema.names else False,
            )
        except OSError as exc:
            self.abort()
            raise output_error(self.path, exc) from exc

    def write(self, table: pa.Table) -> None:
        if self._writer is None:
            self._open(self.schema or table.schema)
        assert self.schema is not None and self._writer is not None
        if table.schema != self.schema:
            table = table.select(self.schema.names).cast(self.schema)
        if table.num_rows:
            try:
                self._writer.write_table(table)
            except OSError as exc:
                self.abort()
                raise output_error(self.path, exc) from exc
            self.rows += table.num_rows

    def close(self) -> None:
        if self._writer is None:
            if self.schema is None:
                raise ValueError("ShardWriter.close() before any table or schema")
            self._open(self.schema)
        assert self._writer is not None
        try:
            self._writer.close()
            if self.in_memory:
                write_bytes_atomic(self.path, self._fh.getvalue())
                self._fh = None
                return
            if self.tmp is None:
                self._fh.close()
                self._fh.commit()  # the object appears now, whole
                self._fh = None
                return
            with open(self.tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            os.replace(self.tmp, self.path)
        except OSError as exc:
            self.abort()
            raise output_error(self.path, exc) from exc

    def abort(self) -> None:
        if self._writer is not None:
            try:
                self._writer.close()
            except Exception:  # noqa: BLE001 - best effort while failing
                pass
        self._writer = None
        if self.tmp is not None:
            unlink_quietly(self.tmp)
        elif self._fh is not None and not self.in_memory:
            try:
                self._fh.discard()  # never committed: no object appears
            except Exception:  # noqa: BLE001
                pass
            self._fh.closed = True  # or garbage collection would flush it into a new upload
            self._fh = None


def write_table_atomic(path: AnyPath, table: pa.Table, compression: str = "zstd") -> None:
    """One whole table as a Parquet file, atomically (``compression="none"`` for random hashes)."""
    w = ShardWriter(path, table.schema, compression, in_memory=True)
    w.write(table)
    w.close()


# --------------------------------------------------------------------------- stats


def text_bytes(table: pa.Table) -> int:
    """UTF-8 bytes of the ``text`` column."""
    if table.num_rows == 0 or "text" not in table.column_names:
        return 0
    col = table.column("text")
    return int(pc.sum(pc.binary_length(col)).as_py() or 0)


_ALL_ROWS = pc.CountOptions(mode="all")


def _per_source(table: pa.Table) -> dict[str, tuple[int, int]]:
    if table.num_rows == 0:
        return {}
    if "source" not in table.column_names:
        return {"": (table.num_rows, text_bytes(table))}
    t = pa.table({"source": pc.fill_null(table.column("source"), ""), "b": pc.binary_length(table.column("text"))})
    g = t.group_by("source").aggregate([("b", "count", _ALL_ROWS), ("b", "sum")])  # every row, null text included
    return {s: (int(n), int(b or 0)) for s, n, b in zip(g["source"].to_pylist(), g["b_count"].to_pylist(), g["b_sum"].to_pylist())}


def merge_counts(into: dict, other: dict) -> dict:
    """Add ``other``'s numbers into ``into``, recursively through nested dicts."""
    for key, value in other.items():
        if isinstance(value, dict):
            merge_counts(into.setdefault(key, {}), value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            into[key] = into.get(key, 0) + value
        else:
            into.setdefault(key, value)
    return into


@dataclass
class ShardStats:
    """Counters of one shard: documents and bytes in and out, per reason, per source."""

    shard: str
    inputs: list[str] = field(default_factory=list)
    docs_in: int = 0
    bytes_in: int = 0
    docs_out: int = 0
    bytes_out: int = 0
    rejected: dict[str, dict[str, int]] = field(default_factory=dict)
    per_source: dict[str, dict[str, Any]] = field(default_factory=dict)
    counters: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def _src(self, source: str) -> dict[str, Any]:
        return self.per_source.setdefault(source, {"docs_in": 0, "bytes_in": 0, "docs_out": 0, "bytes_out": 0, "rejected": {}})

    def add_in(self, table: pa.Table) -> None:
        for src, (n, b) in _per_source(table).items():
            self.docs_in += n
            self.bytes_in += b
            s = self._src(src)
            s["docs_in"] += n
            s["bytes_in"] += b

    def add_out(self, table: pa.Table) -> None:
        for src, (n, b) in _per_source(table).items():
            self.docs_out += n
            self.bytes_out += b
            s = self._src(src)
            s["docs_out"] += n
            s["bytes_out"] += b

    def add_rejected(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        t = pa.table(
            {
                "reason": table.column("reason"),
                "source": pc.fill_null(table.column("source"), "")
                if "source" in table.column_names
                else pa.nulls(table.num_rows, pa.string()).fill_null(""),
                "b": pc.binary_length(table.column("text")),
            }
        )
        g = t.group_by(["reason", "source"]).aggregate([("b", "count", _ALL_ROWS), ("b", "sum")])
        for reason, src, n, b in zip(g["reason"].to_pylist(), g["source"].to_pylist(), g["b_count"].to_pylist(), g["b_sum"].to_pylist()):
            r = self.rejected.setdefault(reason, {"docs": 0, "bytes": 0})
            r["docs"] += int(n)
            r["bytes"] += int(b or 0)
            s = self._src(src)["rejected"]
            s[reason] = s.get(reason, 0) + int(n)

    def count(self, counters: dict[str, Any]) -> None:
        merge_counts(self.counters, counters)

    def to_dict(self) -> dict[str, Any]:
        return {
            "shard": self.shard,
            "inputs": self.inputs,
            "docs_in": self.docs_in,
            "bytes_in": self.bytes_in,
            "docs_out": self.docs_out,
            "bytes_out": self.bytes_out,
            "rejected": self.rejected,
            "per_source": self.per_source,
            "counters": self.counters,
            "seconds": round(self.seconds, 3),
        }


def merge_stats(shards: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Merge per-shard stats dicts into one (sums; ``seconds`` becomes CPU seconds)."""
    total: dict[str, Any] = {
        "shards": 0,
        "docs_in": 0,
        "bytes_in": 0,
        "docs_out": 0,
        "bytes_out": 0,
        "rejected": {},
        "per_source": {},
        "counters": {},
        "seconds": 0.0,
    }
    for s in shards:
        total["shards"] += 1
        merge_counts(total, {k: v for k, v in s.items() if k not in ("shard", "inputs")})
    total["cpu_seconds"] = round(total.pop("seconds"), 3)
    return total


def summary_line(stage: str, stats: dict[str, Any], seconds: float) -> str:
    """One line: docs in -> out, bytes, seconds, top reasons."""
    din, dout = stats.get("docs_in", 0), stats.get("docs_out", 0)
    pct = f" ({100.0 * dout / din:.1f}%)" if din else ""
    reasons = sorted(stats.get("rejected", {}).items(), key=lambda kv: -kv[1]["docs"])
    top = ", ".join(f"{r} {v['docs']:,}" for r, v in reasons[:4])
    more = f" +{len(reasons) - 4} more" if len(reasons) > 4 else ""
    line = f"{stage}: {din:,} -> {dout:,} docs{pct}, {_mb(stats.get('bytes_in', 0))} -> {_mb(stats.get('bytes_out', 0))}, {seconds:.1f} s"
    return line + (f"; rejected: {top}{more}" if top else "")


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


# --------------------------------------------------------------------------- the text column


def decode_texts(column: pa.ChunkedArray | pa.Array) -> list[str | None]:
    """The column as Python strings; ``None`` for a value that is not valid UTF-8, ``""`` for a null.

    Arrow does not validate strings read from Parquet, so a shard can hold bytes such as an
    encoded surrogate (``ED A0 80``) that ``to_pylist`` cannot decode. The fast path converts
    the whole column; only when that fails is each value decoded on its own.
    """
    try:
        values = column.to_pylist()
        return [("" if v is None else v) for v in values] if column.null_count else values
    except UnicodeDecodeError:
        pass
    raw = column.cast(pa.large_binary()) if not pa.types.is_large_binary(column.type) else column
    out: list[str | None] = []
    for b in raw.to_pylist():
        if b is None:
            out.append("")
            continue
        try:
            out.append(b.decode("utf-8"))
        except UnicodeDecodeError:
            out.append(None)
    return out


def is_text_type(t: pa.DataType) -> bool:
    """Arrow string or large string."""
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def repair_utf8(table: pa.Table) -> tuple[pa.Table, dict[str, int]]:
    """Replace invalid UTF-8 in every string column with U+FFFD; returns the table and, per column, how many values changed.

    Arrow validates UTF-8 at about 4 GB/s, so a clean batch costs a scan and no copy; only a
    column that fails is decoded value by value (``errors="replace"``).
    """
    counts: dict[str, int] = {}
    for i, f in enumerate(table.schema):
        if not is_text_type(f.type):
            continue
        col = table.column(i)
        try:
            col.validate(full=True)
            continue
        except pa.ArrowInvalid:
            pass
        binary = pa.large_binary() if pa.types.is_large_string(f.type) else pa.binary()
        values: list[str | None] = []
        bad = 0
        for b in col.cast(binary).to_pylist():
            if b is None:
                values.append(None)
                continue
            try:
                values.append(b.decode("utf-8"))
            except UnicodeDecodeError:
                values.append(b.decode("utf-8", errors="replace"))
                bad += 1
        table = table.set_column(i, f, pa.array(values, f.type))
        counts[f.name] = bad
    return table, counts


# --------------------------------------------------------------------------- inputs


def is_curate_dir(path: AnyPath) -> bool:
    """Whether a directory was (or is being) written by a curate stage."""
    return (path / PARAMS).exists() or (path / SUCCESS).exists() or (path / STATS_DIR).is_dir()


def sha256_json(obj: Any) -> str:
    """A stable digest of a JSON-able value (key order does not matter)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str, separators=(",", ":")).encode()).hexdigest()


def files_fingerprint(files: Iterable[AnyPath], root: AnyPath | None = None) -> str:
    """A digest of raw input files by name (relative to ``root``), size and modification time (no reading)."""
    parts = []
    for f in files:
        st = f.stat()
        name = str(f.relative_to(root)) if root is not None and _is_under(f, root) else str(f)
        parts.append([name, st.st_size, st.st_mtime_ns])
    return sha256_json(parts)


def record_fingerprint(path: AnyPath) -> str:
    """What a finished curate output was made from and holds: its ``_SUCCESS`` ``fingerprint`` (older ones: the file's digest)."""
    marker = path / SUCCESS
    raw = marker.read_bytes()
    try:
        fp = json.loads(raw).get("fingerprint")
    except (ValueError, AttributeError):
        fp = None
    return fp if isinstance(fp, str) and fp else hashlib.sha256(raw).hexdigest()


def _is_under(path: AnyPath, root: AnyPath) -> bool:
    try:
        return path.is_relative_to(root)  # type: ignore[arg-type]
    except (TypeError, AttributeError):
        return False


def _glob_root(pattern: str) -> AnyPath:
    """The directory part of a glob before its first wildcard (``data/*/x.parquet`` -> ``data``)."""
    return as_path(os.path.dirname(re.split(r"[*?\[]", pattern, maxsplit=1)[0]) or ".")


@dataclass
class Inputs:
    """What a stage reads: the names recorded in ``_params.json``, the files, and what identifies their content.

    ``fingerprints`` has one entry per name. ``locations`` are the paths the output must
    neither equal, lie inside, nor contain. ``foreign`` are Parquet files not written by a
    curate stage: their ids are checked (non-null, unique) before a stage uses them.
    """

    names: list[str]
    files: list[AnyPath]
    fingerprints: list[str]
    locations: list[AnyPath] = field(default_factory=list)
    foreign: list[AnyPath] = field(default_factory=list)


def input_name(raw: str | os.PathLike | RemotePath) -> str:
    """An input path as recorded: ``out/pile/`` and ``out/pile`` are the same input."""
    return str(as_path(raw))


def dataset_inputs(paths: Iterable[str | os.PathLike]) -> Inputs:
    """Parquet shard files of the given dataset directories, files or globs, in a stable order, and their fingerprint.

    A directory gives its ``part-*.parquet`` shards (or any ``*.parquet`` when it was not
    written by curate); a directory a curate stage is still writing (no ``_SUCCESS``) is
    an error, as is a path that does not exist or holds no Parquet. Paths may be fsspec
    URLs (``s3://bucket/out/clean``). A finished curate directory is identified by its
    ``_SUCCESS`` fingerprint; other files by name, size and modification time.
    """
    names: list[str] = []
    out: list[AnyPath] = []
    prints: list[str] = []
    locations: list[AnyPath] = []
    foreign: list[AnyPath] = []
    for raw in paths:
        p = as_path(raw)
        names.append(input_name(raw))
        if p.is_dir():
            locations.append(p)
            if is_curate_dir(p):
                if not (p / SUCCESS).exists():
                    raise CurateError(f"{p}: the stage that writes it has not finished (no {SUCCESS}); run it to completion first")
                files = sorted(p.glob("part-*.parquet"))
                out.extend(files)
                prints.append(record_fingerprint(p))
                continue
            files = sorted(p.glob("part-*.parquet")) or sorted(f for f in p.glob("*.parquet") if not f.name.startswith((".", "_")))
            if not files:
                raise CurateError(f"{p}: no Parquet shards in this directory")
        elif p.is_file():
            if p.suffix != ".parquet":
                raise CurateError(f"{p}: not a Parquet file or dataset directory")
            files = [p]
            locations.append(p)
        elif any(ch in str(raw) for ch in "*?["):
            files = [f for f in glob_paths(str(raw)) if f.name.endswith(".parquet")]
            if not files:
                raise CurateError(f"{raw}: no Parquet files match")
            locations.append(_glob_root(str(raw)))
        else:
            raise CurateError(f"{raw}: no such file or directory")
        out.extend(files)
        foreign.extend(files)
        prints.append(files_fingerprint(files))
    seen: set[str] = set()
    unique = []
    for f in out:
        r = str(f.resolve())
        if r not in seen:
            seen.add(r)
            unique.append(f)
    return Inputs(names, unique, prints, locations, [f for f in foreign if f in unique])


def resolve_inputs(paths: Iterable[str | os.PathLike]) -> list[AnyPath]:
    """The Parquet shard files of dataset directories, files or globs (see :func:`dataset_inputs`)."""
    return dataset_inputs(paths).files


def open_parquet(path: AnyPath) -> pq.ParquetFile:
    """Open one shard, turning a corrupt or unreadable file into a one-line error."""
    try:
        return pq.ParquetFile(path if isinstance(path, Path) else path.open("rb"))
    except (OSError, pa.ArrowException) as exc:
        raise CurateError(f"{path}: not a readable Parquet file ({exc})") from exc


def check_columns(path: AnyPath, schema: pa.Schema, required: Iterable[str] = REQUIRED_COLUMNS) -> None:
    """Error naming the file when a required column is missing, or a document column has a type that is not text.

    ``id`` may be a string or an integer (it is read as a string); ``text``, ``source``,
    ``url`` and ``meta`` must be strings: a number where text belongs is a mistake upstream,
    not something to stringify quietly.
    """
    missing = [c for c in required if c not in schema.names]
    if missing:
        raise CurateError(f"{path}: missing column(s) {', '.join(missing)} (has: {', '.join(schema.names)})")
    for name in ("id", "text", "source", "url", "meta"):
        if name not in schema.names:
            continue
        t = schema.field(name).type
        ok = is_text_type(t) or pa.types.is_null(t) or (name == "id" and pa.types.is_integer(t))
        if not ok:
            want = "a string or integer" if name == "id" else "a string"
            raise CurateError(f"{path}: column {name!r} has type {t}; it must be {want}")


def _first_null(col: pa.ChunkedArray) -> int:
    return int(pc.index(pc.is_null(col), True).as_py())


def iter_tables(
    path: AnyPath, columns: list[str] | None = None, batch_rows: int = BATCH_ROWS, counters: dict[str, Any] | None = None
) -> Iterator[pa.Table]:
    """Stream one shard as tables of at most ``batch_rows`` rows (at least one, maybe empty).

    Checks on the way (a clear error naming the file and row): document columns have text
    types (:func:`check_columns`), ``id`` and ``source`` are never null. A null ``text`` is
    read as ``""`` and counted (``counters["null_text"]``), so every row is counted in and
    out. Arrow does not validate the UTF-8 of strings it reads from Parquet: invalid bytes
    in a string column are replaced with U+FFFD, logged, and counted per column in
    ``counters["invalid_utf8_repaired"]``, so no stage crashes on them.
    """
    pf = open_parquet(path)
    schema = pf.schema_arrow
    check_columns(path, schema, columns if columns is not None else ())
    emitted = False
    row = 0
    try:
        for batch in pf.iter_batches(batch_size=batch_rows, columns=columns, use_threads=False):
            emitted = True
            table, repaired = repair_utf8(conform(pa.Table.from_batches([batch])))
            for name in ("id", "source"):
                if name in table.column_names and table.column(name).null_count:
                    at = row + _first_null(table.column(name))
                    raise CurateError(f"{path}: row {at}: {name} is null (every document needs an {name})")
            if "text" in table.column_names and table.column("text").null_count:
                n = table.column("text").null_count
                i = table.schema.get_field_index("text")
                table = table.set_column(i, table.schema.field(i), pc.fill_null(table.column(i), ""))
                if counters is not None:
                    counters["null_text"] = counters.get("null_text", 0) + n
            if repaired:
                what = ", ".join(f"{n} {c} value(s)" for c, n in repaired.items())
                log.warning("%s: invalid UTF-8 replaced with U+FFFD in %s", path, what)
                if counters is not None:
                    merge_counts(counters, {"invalid_utf8_repaired": repaired})
            row += table.num_rows
            yield table
    except (OSError, pa.ArrowException) as exc:
        raise CurateError(f"{path}: cannot read ({exc})") from exc
    if not emitted:
        sel = schema if columns is None else pa.schema([schema.field(c) for c in columns])
        yield conform(sel.empty_table())


def check_ids(files: list[AnyPath], ids: bool = True) -> int:
    """Raise a clear error when an id (or a source) is null or an id appears twice across ``files``; returns the rows checked.

    For inputs curate did not write (a user's Parquet files): their ids enter the pipeline
    here. Memory: 16 bytes per row (a 64-bit hash of the id and its position), only for such inputs.
    """
    import numpy as np
    import xxhash

    hashes, where = [], []
    for i, f in enumerate(files):
        pf = open_parquet(f)
        names = pf.schema_arrow.names
        check_columns(f, pf.schema_arrow, ["id"] if ids else [])
        cols = [c for c in (["id"] if ids else []) + ["source"] if c in names]
        if not cols:
            continue
        row = 0
        for batch in pf.iter_batches(batch_size=65536, columns=cols, use_threads=False):
            if "source" in cols and batch.column(cols.index("source")).null_count:
                at = row + _first_null(pa.chunked_array([batch.column(cols.index("source"))]))
                raise CurateError(f"{f}: row {at}: source is null (every document needs a source)")
            if not ids:
                row += batch.num_rows
                continue
            col = batch.column(0)
            if col.null_count:
                raise CurateError(f"{f}: row {row + _first_null(pa.chunked_array([col]))}: id is null (every document needs an id)")
            col = col.cast(pa.string()) if not is_text_type(col.type) else col
            raw = col.cast(pa.large_binary() if pa.types.is_large_string(col.type) else pa.binary()).to_pylist()  # bytes: no UTF-8 check
            hashes.append(np.fromiter((xxhash.xxh64_intdigest(b) for b in raw), np.uint64, len(raw)))
            where.append((np.int64(i) << np.int64(40)) | np.arange(row, row + len(raw), dtype=np.int64))
            row += len(raw)
    if not hashes:
        return 0
    h = np.concatenate(hashes)
    w = np.concatenate(where)
    order = np.argsort(h, kind="stable")
    hs = h[order]
    dup = np.nonzero(hs[1:] == hs[:-1])[0]
    for k in dup:  # a hash collision is not a duplicate: compare the ids themselves
        a, b = (int(w[order[k]]), int(w[order[k + 1]]))
        ida, idb = _id_at(files, a), _id_at(files, b)
        if ida == idb:
            fa, ra = files[a >> 40], a & ((1 << 40) - 1)
            fb, rb = files[b >> 40], b & ((1 << 40) - 1)
            at = f"{fa} row {ra} and row {rb}" if fa == fb else f"{fa} row {ra} and {fb} row {rb}"
            raise CurateError(f"duplicate id {ida!r}: {at} (ids must be unique across the inputs)")
    return len(h)


def _id_at(files: list[AnyPath], where: int) -> str:
    f, row = files[where >> 40], where & ((1 << 40) - 1)
    t = pq.read_table(f if isinstance(f, Path) else f.open("rb"), columns=["id"]).column(0)
    if is_text_type(t.type):
        return t.cast(pa.large_binary())[row].as_py().decode("utf-8", "replace")
    return str(t[row].as_py())


def iter_dataset(paths: Iterable[str | os.PathLike], columns: list[str] | None = None, batch_rows: int = BATCH_ROWS) -> Iterator[pa.Table]:
    """Stream every shard of the given dataset directories as tables."""
    for f in resolve_inputs(paths):
        yield from iter_tables(f, columns, batch_rows)


def read_table(paths: str | os.PathLike | Iterable[str | os.PathLike], columns: list[str] | None = None) -> pa.Table:
    """Read a (small) dataset whole; for tests and inspection, never inside a stage."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    tables = [t for t in iter_dataset(paths, columns) if t.num_rows]
    if not tables:
        return next(iter_dataset(paths, columns))
    return pa.concat_tables(tables, promote_options="permissive")


def read_success(path: str | os.PathLike) -> dict[str, Any]:
    """The ``_SUCCESS`` record of a finished stage."""
    p = as_path(path) / SUCCESS
    if not p.exists():
        raise CurateError(f"{path}: no {SUCCESS}; the stage has not finished")
    return json.loads(p.read_text())


def read_json(path: AnyPath) -> dict[str, Any] | None:
    """A JSON object from a file, or None when it is missing or unreadable."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


# --------------------------------------------------------------------------- outputs

#: Files whose names and sizes make an output's fingerprint (data, not logs or timings).
_DATA_SUFFIXES = (".parquet", ".bin", ".idx", ".txt", ".gz", ".npy")
_NOT_DATA_DIRS = {STATS_DIR, ERRORS_DIR, WORK_DIR, "_download"}


class Target:
    """Where a stage writes, as the runtime sees it: parameters, completion marker, ownership.

    The runtime (``runtime.run_stage``) reads the parameters an earlier run recorded to
    decide between resuming, reporting a finished output, starting again and refusing;
    ``clear`` deletes only what curate wrote. Subclasses: a dataset directory
    (:class:`OutputDir`), a tokenized prefix, a download directory's snapshot.
    """

    path: AnyPath

    def locations(self) -> list[AnyPath]:
        """The paths that must not overlap the inputs."""
        return [self.path]

    def exists(self) -> bool:
        raise NotImplementedError

    def owned(self) -> bool:
        """Whether what exists was written by curate (its parameters file is there)."""
        raise NotImplementedError

    def read_params(self) -> dict[str, Any] | None:
        raise NotImplementedError

    def write_params(self, params: dict[str, Any]) -> None:
        raise NotImplementedError

    def read_record(self) -> dict[str, Any] | None:
        """The completion record, or None while the output is unfinished."""
        raise NotImplementedError

    def write_record(self, record: dict[str, Any]) -> None:
        raise NotImplementedError

    def invalidate(self) -> None:
        """Remove the completion record before more work is done."""
        raise NotImplementedError

    def create(self) -> None:
        raise NotImplementedError

    def clear(self) -> None:
        """Delete what an earlier run wrote (never anything else)."""
        raise NotImplementedError

    def touch(self) -> None:
        """Mark a finished output as current (for make) without changing it."""

    def outputs(self) -> list[list[Any]]:
        """``[name, size]`` of the files holding the output's data, for its fingerprint."""
        return []


def _data_files(root: AnyPath) -> list[list[Any]]:
    out: list[list[Any]] = []
    if isinstance(root, Path):
        for dirpath, dirnames, filenames in os.walk(root):
            rel_dir = os.path.relpath(dirpath, root)
            if rel_dir == ".":
                dirnames[:] = [d for d in dirnames if d not in _NOT_DATA_DIRS]
            for fn in filenames:
                if fn.endswith(_DATA_SUFFIXES) and not fn.startswith("."):
                    p = Path(dirpath) / fn
                    out.append([os.path.normpath(os.path.join(rel_dir, fn)), p.stat().st_size])
    else:
        try:
            found = root.fs.find(root.path, detail=True)
        except FileNotFoundError:
            found = {}
        for name, info in found.items():
            rel = name[len(root.path) :].lstrip("/")
            if rel.split("/", 1)[0] in _NOT_DATA_DIRS or not rel.endswith(_DATA_SUFFIXES) or rel.rsplit("/", 1)[-1].startswith("."):
                continue
            out.append([rel, int(info.get("size") or 0)])
    return sorted(out)


class OutputDir(Target):
    """A stage's output directory: ``_params.json`` (first), shards and stats, ``_SUCCESS`` (last)."""

    def __init__(self, path: str | os.PathLike | RemotePath) -> None:
        self.path = as_path(path)

    # -- paths
    def shard_path(self, name: str) -> AnyPath:
        return self.path / f"{name}.parquet"

    def rejected_path(self, name: str) -> AnyPath:
        return self.path / REJECTED_DIR / f"{name}.parquet"

    def stats_path(self, name: str) -> AnyPath:
        return self.path / STATS_DIR / f"{name}.json"

    @property
    def work(self) -> AnyPath:
        return self.path / WORK_DIR

    def is_done(self, name: str) -> bool:
        return self.shard_path(name).exists()

    def done(self, names: list[str]) -> set[str]:
        """Which of ``names`` are finished shards (one listing on an object store, not a request per shard)."""
        if isinstance(self.path, Path):
            return {n for n in names if self.is_done(n)}
        have = {p.name for p in self.path.glob("part-*.parquet")} if self.path.exists() else set()
        return {n for n in names if f"{n}.parquet" in have}

    # -- Target
    def exists(self) -> bool:
        p = self.path
        if p.exists() and not p.is_dir():
            raise CurateError(f"{p}: exists and is not a directory")
        return p.exists() and any(True for _ in p.iterdir())

    def owned(self) -> bool:
        return (self.path / PARAMS).exists()

    def read_params(self) -> dict[str, Any] | None:
        return read_json(self.path / PARAMS)

    def write_params(self, params: dict[str, Any]) -> None:
        write_json_atomic(self.path / PARAMS, params)

    def read_record(self) -> dict[str, Any] | None:
        return read_json(self.path / SUCCESS) if (self.path / SUCCESS).exists() else None

    def write_record(self, record: dict[str, Any]) -> None:
        write_json_atomic(self.path / SUCCESS, record)

    def invalidate(self) -> None:
        (self.path / SUCCESS).unlink(missing_ok=True)

    def create(self) -> None:
        p = self.path
        try:
            p.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot create {p}: {exc.strerror or exc}") from exc
        if isinstance(p, Path):  # an object store has no temporary files (uploads complete or never appear)
            for stale in list(p.rglob(".*.tmp.*")):  # left by a killed run, phase files under _work/ included
                stale.unlink(missing_ok=True)

    def clear(self) -> None:
        rmtree(self.path)

    def touch(self) -> None:
        marker = self.path / SUCCESS
        if isinstance(marker, Path):
            try:
                os.utime(marker)
            except OSError:
                pass

    def outputs(self) -> list[list[Any]]:
        return _data_files(self.path)

    # -- shards
    def write_shard_stats(self, stats: ShardStats) -> None:
        write_json_atomic(self.stats_path(stats.shard), stats.to_dict())

    def merged_stats(self, names: list[str]) -> dict[str, Any]:
        """The merged stats of the shards ``names`` (every one must have its stats file)."""
        shard_stats = []
        if isinstance(self.path, Path):
            for name in names:
                f = self.stats_path(name)
                if not f.exists():
                    raise CurateError(f"{self.path}: shard {name} has no stats; re-run the stage")
                shard_stats.append(json.loads(f.read_text()))
        else:
            try:
                shard_stats = [json.loads(t) for t in read_texts([self.stats_path(n) for n in names])]
            except FileNotFoundError as exc:
                raise CurateError(f"{self.path}: shard {as_path(str(exc)).stem} has no stats; re-run the stage") from exc
        return merge_stats(shard_stats)
