"""Reading dataset directories: inputs and their fingerprints, documents checked and repaired on the way in.

Layout of a stage's output (docs/design.md; written through ``targets.OutputDir.shard``):

    OUT/part-00000.parquet           kept documents, one shard per input shard
    OUT/_rejected/part-00000.parquet dropped documents with ``reason`` (--keep-rejected;
                                     the underscore keeps pandas.read_parquet(OUT) to kept rows)
    OUT/_stats/part-00000.json       per-shard counters
    OUT/_params.json                 the stage's parameters and its inputs' fingerprint, written first
    OUT/_SUCCESS                     written last: merged stats, parameters and the output's fingerprint

Reading checks what a stage relies on (document columns of text type, ids and sources not
null, ids unique in inputs curate did not write) and repairs what Arrow does not check
(invalid UTF-8, counted); a null text is read as "" and counted. This module imports
neither the runtime, the executor nor any stage.
"""

from __future__ import annotations

import hashlib
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

from curate.errors import CurateError
from curate.schema import REQUIRED_COLUMNS, conform
from curate.stats import merge_counts
from curate.storage import AnyPath, RemotePath, as_path, glob_paths
from curate.targets import PARAMS, STATS_DIR, SUCCESS

log = logging.getLogger("curate")

BATCH_ROWS = int(os.environ.get("CURATE_BATCH_ROWS", "1024"))


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
                if not files and any(True for _ in p.glob("part-*.jsonl*")):
                    raise CurateError(
                        f"{p}: its shards are JSON lines (written with --format jsonl, for other tools); curate's stages read "
                        "Parquet: write it again without --format, or read it back with `curate import`"
                    )
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
    path: AnyPath,
    columns: list[str] | None = None,
    batch_rows: int = BATCH_ROWS,
    counters: dict[str, Any] | None = None,
    rows: tuple[int, int] | None = None,
) -> Iterator[pa.Table]:
    """Stream one shard (or its rows ``rows = (start, stop)``) as tables of at most ``batch_rows`` rows (at least one, maybe empty).

    A row range reads only the row groups that hold it, so a task can take part of a large file.

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
        for batch, row in _batches(pf, batch_rows, columns, rows):
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
            yield table
    except (OSError, pa.ArrowException) as exc:
        raise CurateError(f"{path}: cannot read ({exc})") from exc
    if not emitted:
        sel = schema if columns is None else pa.schema([schema.field(c) for c in columns])
        yield conform(sel.empty_table())


def _batches(
    pf: pq.ParquetFile, batch_rows: int, columns: list[str] | None, rows: tuple[int, int] | None
) -> Iterator[tuple[pa.RecordBatch, int]]:
    """``(batch, its first row in the file)``, of the whole file or of the rows ``[start, stop)``."""
    if rows is None:
        row = 0
        for batch in pf.iter_batches(batch_size=batch_rows, columns=columns, use_threads=False):
            yield batch, row
            row += batch.num_rows
        return
    start, stop = rows
    meta = pf.metadata
    groups, first, at = [], None, 0
    for g in range(meta.num_row_groups):
        n = meta.row_group(g).num_rows
        if at + n > start and at < stop:
            groups.append(g)
            first = at if first is None else first
        at += n
    if not groups:
        return
    row = first
    for batch in pf.iter_batches(batch_size=batch_rows, row_groups=groups, columns=columns, use_threads=False):
        lo, hi = max(start - row, 0), min(stop - row, batch.num_rows)
        if hi > lo:
            yield batch.slice(lo, hi - lo), row + lo
        row += batch.num_rows
        if row >= stop:
            return


#: Ids checked in memory at once (16 bytes each); more are bucketed by hash range on disk first.
ID_CHECK_ROWS = int(os.environ.get("CURATE_ID_CHECK_ROWS", "4000000"))


def check_ids(files: list[AnyPath], ids: bool = True) -> int:
    """Raise a clear error when an id (or a source) is null or an id appears twice across ``files``; returns the rows checked.

    For inputs curate did not write (a user's Parquet files): their ids enter the pipeline
    here. Each id becomes 16 bytes (a 64-bit hash and its position); up to ``ID_CHECK_ROWS``
    are checked in memory, more are written in buckets by hash range to a temporary directory
    and checked one bucket at a time, so the check's memory does not grow with the inputs.
    """
    import tempfile

    import numpy as np

    total = sum(open_parquet(f).metadata.num_rows for f in files) if ids else 0
    if total <= ID_CHECK_ROWS:
        parts = list(_id_hashes(files, ids))
        if not parts:
            return 0
        _check_sorted(files, np.concatenate([h for h, _ in parts]), np.concatenate([w for _, w in parts]))
        return total if ids else 0
    from curate.partitions import range_partition, read_buckets, write_buckets

    buckets = 1 << max(1, int(np.ceil(np.log2(total / ID_CHECK_ROWS))))
    with tempfile.TemporaryDirectory(prefix="curate-ids-") as tmp:
        spill: list[AnyPath] = []
        pend_h: list[np.ndarray] = []
        pend_w: list[np.ndarray] = []

        def flush() -> None:
            h, w = np.concatenate(pend_h), np.concatenate(pend_w)
            path = as_path(tmp) / f"s{len(spill):06d}"
            write_buckets(path, {"h": h, "w": w}, range_partition(h, buckets), buckets)
            spill.append(path)
            pend_h.clear()
            pend_w.clear()

        held = 0
        for h, w in _id_hashes(files, ids):
            pend_h.append(h)
            pend_w.append(w)
            held += len(h)
            if held >= ID_CHECK_ROWS:
                flush()
                held = 0
        if pend_h:
            flush()
        for b in range(buckets):  # buckets in hash order: the first duplicate found is the one a single sort finds
            c = read_buckets(spill, [b], ["h", "w"])
            _check_sorted(files, c["h"].astype(np.uint64), c["w"].astype(np.int64))
    return total


def _id_hashes(files: list[AnyPath], ids: bool) -> Iterator[tuple[Any, Any]]:
    """(xxh64 of each id, its file << 40 | row), batch by batch; null ids and sources are errors on the way."""
    import numpy as np
    import xxhash

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
            yield (np.fromiter((xxhash.xxh64_intdigest(b) for b in raw), np.uint64, len(raw)),
                   (np.int64(i) << np.int64(40)) | np.arange(row, row + len(raw), dtype=np.int64))  # fmt: skip
            row += len(raw)


def _check_sorted(files: list[AnyPath], h: Any, w: Any) -> None:
    """The first repeated id among these hashes (a hash collision is not a duplicate: the ids themselves are compared)."""
    import numpy as np

    order = np.argsort(h, kind="stable")
    hs = h[order]
    for k in np.nonzero(hs[1:] == hs[:-1])[0]:
        a, b = (int(w[order[k]]), int(w[order[k + 1]]))
        ida, idb = _id_at(files, a), _id_at(files, b)
        if ida == idb:
            fa, ra = files[a >> 40], a & ((1 << 40) - 1)
            fb, rb = files[b >> 40], b & ((1 << 40) - 1)
            at = f"{fa} row {ra} and row {rb}" if fa == fb else f"{fa} row {ra} and {fb} row {rb}"
            raise CurateError(f"duplicate id {ida!r}: {at} (ids must be unique across the inputs)")


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
