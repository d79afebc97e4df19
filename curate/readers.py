"""Raw input files the source stages read: finding them, opening them (bounded decompression), their JSON lines, the hub.

``curate download pile`` and ``curate import`` read the same kinds of files: JSON lines
(plain, ``.gz``, ``.zst``) and Parquet, given as a file, a directory or a glob (local or an
fsspec URL), and Hugging Face datasets (streamed from the hub, or saved with
``save_to_disk``), and check the ids they keep unique. What they share lives here; what a
record means is each stage's own.
This module imports no stage, no runtime and no executor.
"""

from __future__ import annotations

import glob
import gzip
import io
import json
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import zstandard

from curate.errors import CurateError
from curate.hub import check_hub_reachable
from curate.limits import CappedReader, DecompressionLimit, bomb_message, decompressed_limit

SUFFIXES = (".jsonl", ".jsonl.zst", ".json.zst", ".jsonl.gz", ".json.gz", ".parquet")  # plain .json is not JSON lines (a manifest, say)
MAX_LINE_BYTES = int(os.environ.get("CURATE_MAX_LINE_BYTES", str(64 << 20)))
BAD_FILE_LINES = 20  # this many unparsable lines before any good one: not a JSON-lines file


@dataclass
class Record:
    """One input record: a document, or a rejected one with its ``reason``; ``where`` names it (file and line) for errors."""

    doc: dict[str, Any]
    reason: str | None = None
    where: str = ""


def find_files(spec: str) -> tuple[list[Path], Path]:
    """The data files a local ``--dataset`` names (file, directory or glob, or an fsspec URL of one), and their root."""
    from curate.storage import RemotePath, as_path, glob_paths

    p = as_path(spec)
    if isinstance(p, RemotePath) and any(ch in spec for ch in "*?["):
        matches = [f for f in glob_paths(spec) if f.is_file()]
        if matches:
            return matches, RemotePath(f"{p.protocol}://{os.path.commonpath([m.parent.path for m in matches])}")
        raise CurateError(f"{spec}: no such file or directory")
    if p.is_file():
        return [p], p.parent
    if p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.is_file() and f.name.endswith(SUFFIXES) and not f.name.startswith((".", "_")))
        if not files:
            raise CurateError(f"{spec}: no data files ({', '.join(SUFFIXES)}) in this directory")
        return files, p
    matches = sorted(Path(f) for f in glob.glob(spec, recursive=True) if Path(f).is_file())
    if matches:
        return matches, Path(os.path.commonpath([str(m.parent) for m in matches]))
    raise CurateError(f"{spec}: no such file or directory")


def is_local(spec: str) -> bool:
    """Whether ``--dataset`` names local files or an fsspec URL (else it is a hub name).

    A name with a data file's suffix or a glob character is a path even when nothing matches
    (so a wrong path says "no such file", not "cannot reach the hub"): hub names have neither.
    """
    from curate.storage import is_url

    looks_like_path = spec.startswith((".", "/", "~")) or spec.endswith(SUFFIXES) or any(c in spec for c in "*?[")
    return is_url(spec) or looks_like_path or Path(spec).exists() or bool(glob.glob(spec))


class ZstdFrames(io.RawIOBase):
    """Decompresses a (multi-frame) zstd file, raising ``EOFError`` when it is truncated.

    ``zstandard``'s stream reader returns short data without an error when the last frame
    is cut off; this reader tracks frame ends, so a truncated download is never taken for
    a complete file. Checksums in the frames are verified by the decompressor.

    Memory is bounded whatever the input: ``decompress`` returns everything a piece of input
    inflates to, and zstd inflates up to ~32,000:1, so the input is fed ``FEED`` bytes at a
    time (at most ~32 MB out per call; a 1 MB chunk of a bomb would give 32 GB).
    """

    FEED = 1024

    def __init__(self, raw: BinaryIO, chunk: int = 1 << 20) -> None:
        self.raw, self.chunk = raw, chunk
        self.dctx = zstandard.ZstdDecompressor(max_window_size=2**31)
        self.dobj = self.dctx.decompressobj()
        self.pending = memoryview(b"")  # compressed input not yet fed
        self.out = memoryview(b"")  # decompressed output not yet read
        self.in_frame = False
        self.done = False

    def readable(self) -> bool:
        return True

    def _fill(self) -> None:
        while not self.out and not self.done:
            if not self.pending:
                data = self.raw.read(self.chunk)
                if not data:
                    if self.in_frame:
                        raise EOFError("truncated zstd stream (the last frame is incomplete)")
                    self.done = True
                    return
                self.pending = memoryview(data)
            piece = self.pending[: self.FEED]
            self.in_frame = True
            self.out = memoryview(self.dobj.decompress(piece))
            if self.dobj.eof:  # a frame ended inside ``piece``: the rest of it starts the next frame
                self.pending = self.pending[len(piece) - len(self.dobj.unused_data) :]
                self.dobj = self.dctx.decompressobj()
                self.in_frame = False
            else:
                self.pending = self.pending[len(piece) :]

    def readinto(self, b: Any) -> int:
        self._fill()
        n = min(len(b), len(self.out))
        b[:n] = self.out[:n]
        self.out = self.out[n:]
        return n

    def close(self) -> None:
        self.raw.close()
        super().close()


def _compressed_size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except (OSError, CurateError):
        return None


def open_binary(path: Path) -> BinaryIO:
    """The file's bytes, decompressed (``.zst``, ``.gz``) with bounded memory and a cap on the total (``curate.limits``)."""
    from curate.storage import open_input

    raw = open_input(path)  # closed by the caller through the wrapper
    name = path.name
    if name.endswith(".zst"):
        inner: Any = ZstdFrames(raw)
    elif name.endswith(".gz"):
        inner = gzip.GzipFile(fileobj=raw, mode="rb")
    else:
        return raw
    capped = CappedReader(inner, decompressed_limit(_compressed_size(path)), also_close=raw)
    return io.BufferedReader(capped, buffer_size=1 << 20)  # type: ignore[return-value]


def read_lines(fh: BinaryIO, max_bytes: int) -> Iterator[tuple[int, bytes | None]]:
    """Yield (line number, line); a line longer than ``max_bytes`` yields None (skipped whole)."""
    lineno = 0
    while True:
        line = fh.readline(max_bytes + 1)
        if not line:
            return
        lineno += 1
        if len(line) > max_bytes and not line.endswith(b"\n"):
            while True:  # discard the rest of the over-long line without holding it
                rest = fh.readline(1 << 20)
                if not rest or rest.endswith(b"\n"):
                    break
            yield lineno, None
            continue
        yield lineno, line


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_utf8(s: str) -> str:
    """``s`` made encodable as UTF-8: JSON escapes such as ``"\\ud800"`` give lone surrogates, which become U+FFFD."""
    return s if s.isascii() or not _SURROGATE.search(s) else _SURROGATE.sub("\ufffd", s)


@dataclass
class JsonLine:
    """One non-blank line of a JSON-lines file: the parsed object, or why it is none (``reason``, ``error``)."""

    lineno: int
    row: Any = None
    raw: str = ""  # the line as text (invalid UTF-8 replaced)
    reason: str | None = None  # line_too_long, malformed_json, not_an_object
    error: str | None = None  # for people: "malformed JSON (Expecting value at column 3)"
    invalid_utf8: bool = False  # the bytes were not valid UTF-8 (``raw`` and ``row`` hold U+FFFD)


def json_lines(path: Path, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[JsonLine]:
    """The lines of a JSON-lines file (plain, .gz or .zst), parsed; a file that cannot be decompressed is a one-line error."""
    try:
        with open_binary(path) as fh:
            for lineno, line in read_lines(fh, max_line_bytes):
                if line is None:
                    yield JsonLine(lineno, reason="line_too_long", error=f"line longer than {max_line_bytes} bytes")
                    continue
                if not line.strip():
                    continue
                bad_utf8 = False
                try:
                    text = line.decode("utf-8")
                except UnicodeDecodeError:
                    text, bad_utf8 = line.decode("utf-8", errors="replace"), True
                try:
                    row = json.loads(text)
                except ValueError as exc:
                    yield JsonLine(lineno, None, text, "malformed_json", f"malformed JSON ({exc.msg} at column {exc.colno})", bad_utf8)  # type: ignore[attr-defined]
                    continue
                if not isinstance(row, dict):
                    yield JsonLine(lineno, row, text, "not_an_object", "not a JSON object", bad_utf8)
                    continue
                yield JsonLine(lineno, row, text, invalid_utf8=bad_utf8)
    except DecompressionLimit as exc:
        raise CurateError(bomb_message(path, exc.limit)) from exc
    except (zstandard.ZstdError, OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise CurateError(f"{path}: cannot read compressed data ({type(exc).__name__}: {exc})") from exc


class BadStart:
    """A file whose first lines all fail is not a JSON-lines file of documents: an error at the 20th, or at its end."""

    def __init__(self, path: Any) -> None:
        self.path, self.good, self.bad = path, 0, 0

    def ok(self) -> None:
        self.good += 1

    def fail(self, lineno: int, error: str) -> None:
        self.bad += 1
        if self.good == 0 and self.bad >= BAD_FILE_LINES:
            raise CurateError(f"{self.path}: not a JSON-lines file of documents (line {lineno}: {error})")

    def finish(self) -> None:
        if self.good == 0 and self.bad:
            raise CurateError(f"{self.path}: not a JSON-lines file of documents (no line parsed)")


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def hub_rows(name: str, split: str, config: str | None, instead: str) -> Iterator[dict[str, Any]]:
    """Rows of a hub dataset (or a local dataset directory) streamed through ``datasets.load_dataset(..., streaming=True)``.

    ``instead`` is the advice when the hub cannot be reached. Failures to load or to read are
    one-line errors naming the dataset.
    """
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - a dependency
        raise CurateError("the 'datasets' package is needed for hub datasets: pip install datasets") from exc
    if not Path(name).exists():
        check_hub_reachable(f"dataset {name!r}", instead)
    try:
        ds = datasets.load_dataset(name, config, split=split, streaming=True)
    except Exception as exc:  # noqa: BLE001 - hub errors come in many types
        raise CurateError(f"cannot load dataset {name!r} (split {split!r}) through datasets: {first_line(exc)}") from exc
    n = 0
    try:
        for row in ds:
            yield row
            n += 1
    except CurateError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise CurateError(f"{name}: reading failed after {n:,} records: {first_line(exc)}") from exc


def is_saved_dataset(path: Any) -> bool:
    """Whether ``path`` is a directory written by ``datasets``' ``save_to_disk`` (a Dataset or a DatasetDict)."""
    try:
        return path.is_dir() and ((path / "state.json").exists() or (path / "dataset_dict.json").exists())
    except (OSError, CurateError):
        return False


def saved_dataset_tables(path: Any, split: str, batch_rows: int = 1024) -> Iterator[Any]:
    """A ``save_to_disk`` directory as Arrow tables of ``batch_rows`` rows (memory-mapped: memory does not grow with its size)."""
    import datasets

    try:
        ds = datasets.load_from_disk(str(path))
    except Exception as exc:  # noqa: BLE001
        raise CurateError(f"{path}: cannot load the saved dataset ({first_line(exc)})") from exc
    if isinstance(ds, datasets.DatasetDict):
        if split not in ds:
            raise CurateError(f"{path}: no split {split!r} in this saved dataset (has: {', '.join(ds)}); choose one with --split")
        ds = ds[split]
    yield from ds.with_format("arrow").iter(batch_size=batch_rows)


def parquet_tables(path: Any) -> Iterator[pa.Table]:
    from curate.dataset import open_parquet

    pf = open_parquet(path)
    try:
        for batch in pf.iter_batches(batch_size=1024, use_threads=False):
            yield pa.Table.from_batches([batch])
    except (OSError, pa.ArrowException) as exc:
        raise CurateError(f"{path}: cannot read ({exc})") from exc


def arrow_rows(table: pa.Table) -> Iterator[tuple[dict[str, Any], int]]:
    """Rows of an Arrow table, and whether each held invalid UTF-8 (1: repaired to U+FFFD; 2: in a nested field, which is lost)."""
    from curate.dataset import decode_texts, repair_utf8

    bad: set[int] = set()
    lost: set[int] = set()
    for f, col in zip(table.schema, table.columns):
        if pa.types.is_string(f.type) or pa.types.is_large_string(f.type):
            try:
                col.validate(full=True)
            except pa.ArrowInvalid:
                bad.update(i for i, v in enumerate(decode_texts(col)) if v is None)
    table, _ = repair_utf8(table)
    try:
        rows = table.to_pylist()
    except UnicodeDecodeError:  # invalid UTF-8 inside a struct or list: row by row, keeping what decodes
        flat = [f.name for f in table.schema if not pa.types.is_nested(f.type)]
        rows = []
        for i in range(table.num_rows):
            try:
                rows.append(table.slice(i, 1).to_pylist()[0])
            except UnicodeDecodeError:
                rows.append(table.slice(i, 1).select(flat).to_pylist()[0])
                lost.add(i)
    for i, row in enumerate(rows):
        yield row, 2 if i in lost else int(i in bad)


class IdHashes:
    """The ids a source stage keeps, 8 bytes each (xxh64), to check them unique at the end (the runtime's rule for foreign ids).

    Only which hashes repeat is known here; the caller finds the records behind them by reading its input again.
    """

    def __init__(self) -> None:
        self.full: list[np.ndarray] = []
        self.buf, self.n = np.empty(1 << 16, np.uint64), 0

    @staticmethod
    def digest(rid: str) -> int:
        import xxhash

        return xxhash.xxh64_intdigest(rid.encode("utf-8", "surrogatepass"))

    def add(self, rid: str) -> None:
        self.buf[self.n] = self.digest(rid)
        self.n += 1
        if self.n == len(self.buf):
            self.full.append(self.buf)
            self.buf, self.n = np.empty(1 << 16, np.uint64), 0

    def duplicates(self) -> set[int]:
        """The hashes seen more than once (a hash collision is possible: compare the ids themselves)."""
        h = np.sort(np.concatenate([*self.full, self.buf[: self.n]]))
        return {int(x) for x in np.unique(h[1:][h[1:] == h[:-1]])}
