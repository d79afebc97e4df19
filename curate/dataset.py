"""Dataset directories: Parquet shards, atomic writes, resume, per-shard stats, ``_SUCCESS``.

Layout of a stage's output (DESIGN.md):

    OUT/part-00000.parquet           kept documents, one shard per input shard
    OUT/_rejected/part-00000.parquet dropped documents with ``reason`` (--keep-rejected;
                                     the underscore keeps pandas.read_parquet(OUT) to kept rows)
    OUT/_stats/part-00000.json       per-shard counters
    OUT/_params.json                 the stage's parameters, written first
    OUT/_SUCCESS                     written last: merged stats and parameters

Every file is written under a temporary name and renamed into place. A shard's files
are written in the order rejected, stats, kept, so an existing ``part-*.parquet`` means
the whole shard (its rejected rows and stats included) is complete: re-running skips
it. This module and ``executor.py`` are the only ones that know about files and shards.
"""

from __future__ import annotations

import errno
import glob
import hashlib
import io
import json
import logging
import os
import re
import shutil
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate import __version__
from curate.errors import CurateError, OutputError, output_error
from curate.executor import Executor, LocalExecutor
from curate.schema import REQUIRED_COLUMNS, conform, rejected_schema, source_matcher

log = logging.getLogger("curate")

SUCCESS = "_SUCCESS"
PARAMS = "_params.json"
STATS_DIR = "_stats"
REJECTED_DIR = "_rejected"
ERRORS_DIR = "_errors"
BATCH_ROWS = int(os.environ.get("CURATE_BATCH_ROWS", "1024"))
_DICT_COLUMNS = ("source", "lang", "reason")
_OUTPUT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}  # the output cannot be written: stop the stage


def shard_name(index: int) -> str:
    """The file stem of shard ``index``: ``part-00000``."""
    return f"part-{index:05d}"


# --------------------------------------------------------------------------- storage: local paths and fsspec URLs

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
#: Object stores have no directories: ``mkdir`` is a no-op and an object appears whole when its upload completes.
OBJECT_STORES = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "oss", "r2"})
_EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs"}
_FILESYSTEMS: dict[tuple[int, str], Any] = {}


def is_url(path: str | os.PathLike | RemotePath) -> bool:
    """Whether ``path`` is a URL with a scheme (``s3://``, ``gs://``, ``file://``, ...), not a local path."""
    return isinstance(path, RemotePath) or (isinstance(path, str) and bool(_URL.match(path)))


def filesystem(protocol: str) -> Any:
    """The fsspec filesystem of ``protocol`` (one per process), without a listing cache.

    Other processes (workers, Ray tasks) write into the same directories, so a cached
    listing would hide their files. Credentials and endpoints come the standard ways:
    for S3 the AWS variables (``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL``, ``AWS_PROFILE``, ...),
    ``~/.aws/`` or an instance role; for any protocol fsspec's configuration
    (``FSSPEC_S3_ENDPOINT_URL``, ``FSSPEC_S3='{"anon": true}'`` or ``~/.config/fsspec/*.json``).
    """
    key = (os.getpid(), protocol)
    fs = _FILESYSTEMS.get(key)
    if fs is None:
        import fsspec

        try:
            cls = fsspec.get_filesystem_class(protocol)
        except (ImportError, ValueError) as exc:
            extra = _EXTRAS.get(protocol)
            hint = (
                f"pip install 'curate[{extra}]'" if extra == "s3" else ("pip install gcsfs" if extra else str(exc).strip().splitlines()[0])
            )
            raise CurateError(f"{protocol}:// paths need an fsspec filesystem for {protocol}: {hint}") from exc
        try:
            fs = cls(use_listings_cache=False)
        except TypeError:  # a filesystem without a listing cache
            fs = cls()
        _FILESYSTEMS[key] = fs
    return fs


@dataclass(frozen=True)
class _Stat:
    st_size: int
    st_mtime_ns: int

    @property
    def st_mtime(self) -> float:
        return self.st_mtime_ns / 1e9


def _mtime_ns(info: dict[str, Any]) -> int:
    import datetime as dt

    for k in ("LastModified", "mtime", "updated", "last_modified", "created", "timeCreated"):
        v = info.get(k)
        if isinstance(v, dt.datetime):
            return int(v.timestamp() * 1e9)
        if isinstance(v, (int, float)):
            return int(v * 1e9)
        if isinstance(v, str):
            try:
                return int(dt.datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp() * 1e9)
            except ValueError:
                continue
    return 0


class RemotePath:
    """A file or directory behind an fsspec URL (``s3://bucket/key``): the part of pathlib's API curate uses.

    Local paths stay :class:`pathlib.Path` (see :func:`as_path`); this class deliberately
    has no ``__fspath__``, so passing one to ``open()`` or a C library fails loudly instead
    of creating a local file named ``s3:``. Pickles as its URL (tasks rebuild the filesystem).
    """

    def __init__(self, url: str | RemotePath, _kind: str | None = None) -> None:
        url = str(url)
        protocol, _, rest = url.partition("://")
        self.protocol = protocol.lower()
        self.path = re.sub(r"/{2,}", "/", rest).rstrip("/")
        self._kind = _kind  # "file" or "directory" when a listing told us

    # -- pure path operations
    def __str__(self) -> str:
        return f"{self.protocol}://{self.path}"

    def __repr__(self) -> str:
        return f"RemotePath({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RemotePath) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))

    def __lt__(self, other: RemotePath) -> bool:
        return str(self) < str(other)

    def __getstate__(self) -> str:
        return str(self)

    def __setstate__(self, state: str) -> None:
        self.__init__(state)  # type: ignore[misc]

    def __truediv__(self, other: str | os.PathLike) -> RemotePath:
        return RemotePath(f"{self}/{os.fspath(other)}")

    @property
    def fs(self) -> Any:
        return filesystem(self.protocol)

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def parent(self) -> RemotePath:
        return RemotePath(f"{self.protocol}://{self.path.rsplit('/', 1)[0]}") if "/" in self.path else self

    @property
    def stem(self) -> str:
        return PurePosixPath(self.name).stem

    @property
    def suffix(self) -> str:
        return PurePosixPath(self.name).suffix

    @property
    def parents(self) -> list[RemotePath]:
        out, p = [], self
        while "/" in p.path:
            p = p.parent
            out.append(p)
        return out

    @property
    def parts(self) -> tuple[str, ...]:
        return (f"{self.protocol}://", *self.path.split("/"))

    def with_name(self, name: str) -> RemotePath:
        return self.parent / name

    def as_posix(self) -> str:
        return str(self)

    def resolve(self) -> RemotePath:
        return self

    def is_absolute(self) -> bool:
        return True

    def expanduser(self) -> RemotePath:
        return self

    def relative_to(self, other: RemotePath) -> PurePosixPath:
        return PurePosixPath(self.path).relative_to(other.path)

    def is_relative_to(self, other: RemotePath) -> bool:
        return isinstance(other, RemotePath) and other.protocol == self.protocol and PurePosixPath(self.path).is_relative_to(other.path)

    # -- the store
    def _wrap(self, name: str, kind: str | None = None) -> RemotePath:
        return RemotePath(f"{self.protocol}://{name}", kind)

    def exists(self) -> bool:
        return bool(_remote(self, self.fs.exists, self.path))

    def is_dir(self) -> bool:
        if self._kind is not None:
            return self._kind == "directory"
        return bool(_remote(self, self.fs.isdir, self.path))

    def is_file(self) -> bool:
        if self._kind is not None:
            return self._kind == "file"
        return bool(_remote(self, self.fs.isfile, self.path))

    def stat(self) -> _Stat:
        info = _remote(self, self.fs.info, self.path)
        return _Stat(int(info.get("size") or 0), _mtime_ns(info))

    def iterdir(self) -> Iterator[RemotePath]:
        try:
            entries = _remote(self, self.fs.ls, self.path, detail=True)
        except FileNotFoundError:
            return iter(())
        return iter(sorted(self._wrap(e["name"].rstrip("/"), e.get("type")) for e in entries if e["name"].rstrip("/") != self.path))

    def glob(self, pattern: str) -> Iterator[RemotePath]:
        found = _remote(self, self.fs.glob, f"{self.path}/{pattern}", detail=True)
        return iter(sorted(self._wrap(n.rstrip("/"), i.get("type")) for n, i in found.items()))

    def rglob(self, pattern: str) -> Iterator[RemotePath]:
        """Files (not directories) below this one whose name matches ``pattern``."""
        import fnmatch

        try:
            found = _remote(self, self.fs.find, self.path, detail=True)
        except FileNotFoundError:
            return iter(())
        return iter(
            sorted(self._wrap(n, i.get("type", "file")) for n, i in found.items() if fnmatch.fnmatchcase(n.rsplit("/", 1)[-1], pattern))
        )

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        if self.protocol not in OBJECT_STORES:
            _remote(self, self.fs.makedirs, self.path, exist_ok=True)

    def unlink(self, missing_ok: bool = False) -> None:
        try:
            _remote(self, self.fs.rm_file, self.path)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def touch(self) -> None:
        _remote(self, self.fs.pipe_file, self.path, b"")

    def read_bytes(self) -> bytes:
        return _remote(self, self.fs.cat_file, self.path)

    def read_text(self, encoding: str = "utf-8") -> str:
        return self.read_bytes().decode(encoding)

    def write_bytes(self, data: bytes) -> None:
        _remote(self, self.fs.pipe_file, self.path, bytes(data))

    def open(self, mode: str = "rb", **kwargs: Any) -> Any:
        return _remote(self, self.fs.open, self.path, mode, **kwargs)


def _remote(path: RemotePath, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call the filesystem; configuration and credential problems become one-line errors naming the URL."""
    try:
        return fn(*args, **kwargs)
    except (OSError, ValueError):
        raise
    except Exception as exc:  # botocore's NoCredentialsError, EndpointConnectionError, ... (not OSErrors)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise CurateError(f"{path}: {type(exc).__name__}: {first}") from exc


AnyPath = Path | RemotePath


def as_path(path: str | os.PathLike | RemotePath) -> AnyPath:
    """A local :class:`~pathlib.Path`, or a :class:`RemotePath` for an fsspec URL (``file://`` URLs become local paths)."""
    if isinstance(path, (Path, RemotePath)):
        return path
    s = os.fspath(path)
    if not _URL.match(s):
        return Path(s)
    if s.lower().startswith("file://"):
        return Path(s[len("file://") :] or "/")
    return RemotePath(s)


def is_local(path: str | os.PathLike | RemotePath) -> bool:
    """Whether ``path`` is on this machine's filesystem (memory maps and renames work there)."""
    return isinstance(as_path(path), Path)


def open_input(path: AnyPath, mode: str = "rb") -> Any:
    """Open a file for reading, local or remote (a seekable binary file object by default)."""
    return open(path, mode) if isinstance(path, Path) else path.open(mode)  # noqa: SIM115 - the caller closes it


def file_sha256(path: AnyPath) -> str:
    """Hex sha256 of a file's bytes, local or remote, read in chunks."""
    with open_input(as_path(path)) as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def glob_paths(pattern: str) -> list[AnyPath]:
    """The files and directories a glob names (``**`` recurses), sorted; works on URLs too."""
    if not is_url(pattern) or pattern.lower().startswith("file://"):
        local = pattern[len("file://") :] if pattern.lower().startswith("file://") else pattern
        return sorted(Path(f) for f in glob.glob(local, recursive=True))
    rp = RemotePath(pattern)
    found = _remote(rp, rp.fs.glob, rp.path, detail=True)
    return sorted(RemotePath(f"{rp.protocol}://{n.rstrip('/')}", i.get("type")) for n, i in found.items())


def rmtree(path: AnyPath, ignore_errors: bool = False) -> None:
    """Delete a directory and everything under it."""
    try:
        if isinstance(path, Path):
            shutil.rmtree(path)
        elif path.exists():
            _remote(path, path.fs.rm, path.path, recursive=True)
    except OSError:
        if not ignore_errors:
            raise


def upload_file(local: Path, remote: RemotePath) -> None:
    """Copy a finished local file to its remote name (the object appears whole when the upload completes)."""
    try:
        _remote(remote, remote.fs.put_file, str(local), remote.path)
    except OSError as exc:
        raise output_error(remote, exc) from exc


def read_texts(paths: list[AnyPath]) -> list[str]:
    """The contents of many small files (remote ones fetched concurrently); a missing file raises FileNotFoundError."""
    remote = [p for p in paths if isinstance(p, RemotePath)]
    if not remote:
        return [p.read_text() for p in paths]
    got: dict[str, Any] = {}
    for protocol in {p.protocol for p in remote}:
        fs = filesystem(protocol)
        mine = [p.path for p in remote if p.protocol == protocol]
        data = fs.cat(mine, on_error="return") if len(mine) > 1 else {mine[0]: fs.cat_file(mine[0])}
        got.update({f"{protocol}://{k}": v for k, v in data.items()})
    out = []
    for p in paths:
        if isinstance(p, Path):
            out.append(p.read_text())
            continue
        v = got.get(str(p))
        if v is None or isinstance(v, BaseException):
            raise FileNotFoundError(str(p)) if v is None or isinstance(v, FileNotFoundError) else v
        out.append(v.decode())
    return out


def np_load(path: AnyPath, mmap: bool = True, **kwargs: Any) -> Any:
    """``numpy.load``: a memory map of a local ``.npy`` (``mmap``), the whole file in memory for a remote one."""
    import numpy as np

    if isinstance(path, Path):
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False, **kwargs)
    return np.load(io.BytesIO(path.read_bytes()), allow_pickle=False, **kwargs)


def read_parquet(path: AnyPath, columns: list[str] | None = None) -> pa.Table:
    """One whole Parquet file (a work file, never a whole dataset)."""
    if isinstance(path, Path):
        return pq.read_table(path, columns=columns)
    return pq.read_table(pa.BufferReader(path.read_bytes()), columns=columns)  # one request


# --------------------------------------------------------------------------- atomic files


def _tmp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp.{os.getpid()}")


def write_bytes_atomic(path: AnyPath, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename.

    On an object store the object is written in one request straight under its name: it
    appears only when the upload completes, which is the atomicity the rename gives locally.
    """
    if isinstance(path, RemotePath):
        try:
            path.write_bytes(data)
        except OSError as exc:
            raise output_error(path, exc) from exc
        return
    tmp = _tmp_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        _unlink_quietly(tmp)
        raise output_error(path, exc) from exc


def _unlink_quietly(path: Path) -> None:
    """Remove a temporary file while failing; a read-only file system must not mask the first error."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass


def write_json_atomic(path: AnyPath, obj: Any) -> None:
    """Write ``obj`` as indented, key-sorted JSON, atomically."""
    write_bytes_atomic(path, (json.dumps(obj, indent=1, sort_keys=True, default=str) + "\n").encode())


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
        self.tmp = _tmp_path(self.path) if isinstance(self.path, Path) else None
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
            _unlink_quietly(self.tmp)
        elif self._fh is not None and not self.in_memory:
            try:
                self._fh.discard()  # never committed: no object appears
            except Exception:  # noqa: BLE001
                pass
            self._fh.closed = True  # or garbage collection would flush it into a new upload
            self._fh = None


# --------------------------------------------------------------------------- stats


def text_bytes(table: pa.Table) -> int:
    """UTF-8 bytes of the ``text`` column."""
    if table.num_rows == 0 or "text" not in table.column_names:
        return 0
    col = table.column("text")
    return int(pc.sum(pc.binary_length(col)).as_py() or 0)


def _per_source(table: pa.Table) -> dict[str, tuple[int, int]]:
    if table.num_rows == 0:
        return {}
    if "source" not in table.column_names:
        return {"": (table.num_rows, text_bytes(table))}
    t = pa.table({"source": pc.fill_null(table.column("source"), ""), "b": pc.binary_length(table.column("text"))})
    g = t.group_by("source").aggregate([("b", "count"), ("b", "sum")])
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
        g = t.group_by(["reason", "source"]).aggregate([("b", "count"), ("b", "sum")])
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


# --------------------------------------------------------------------------- reading


def _is_curate_dir(path: AnyPath) -> bool:
    return (path / PARAMS).exists() or (path / SUCCESS).exists() or (path / STATS_DIR).is_dir()


def resolve_inputs(paths: Iterable[str | os.PathLike]) -> list[AnyPath]:
    """Parquet shard files of the given dataset directories, files or globs, in a stable order.

    A directory gives its ``part-*.parquet`` shards (or any ``*.parquet`` when it was not
    written by curate); a directory a curate stage is still writing (no ``_SUCCESS``) is
    an error, as is a path that does not exist or holds no Parquet. Paths may be fsspec
    URLs (``s3://bucket/out/clean``).
    """
    out: list[AnyPath] = []
    for raw in paths:
        p = as_path(raw)
        if p.is_dir():
            if _is_curate_dir(p) and not (p / SUCCESS).exists():
                raise CurateError(f"{p}: the stage that writes it has not finished (no {SUCCESS}); run it to completion first")
            files = sorted(p.glob("part-*.parquet")) or sorted(f for f in p.glob("*.parquet") if not f.name.startswith("."))
            if not files and not (p / SUCCESS).exists():
                raise CurateError(f"{p}: no Parquet shards in this directory")
            out.extend(files)
        elif p.is_file():
            if p.suffix != ".parquet":
                raise CurateError(f"{p}: not a Parquet file or dataset directory")
            out.append(p)
        elif any(ch in str(raw) for ch in "*?["):
            files = [f for f in glob_paths(str(raw)) if f.name.endswith(".parquet")]
            if not files:
                raise CurateError(f"{raw}: no Parquet files match")
            out.extend(files)
        else:
            raise CurateError(f"{raw}: no such file or directory")
    seen: set[AnyPath] = set()
    unique = []
    for f in out:
        r = f.resolve()
        if r not in seen:
            seen.add(r)
            unique.append(f)
    return unique


def open_parquet(path: AnyPath) -> pq.ParquetFile:
    """Open one shard, turning a corrupt or unreadable file into a one-line error."""
    try:
        return pq.ParquetFile(path if isinstance(path, Path) else path.open("rb"))
    except (OSError, pa.ArrowException) as exc:
        raise CurateError(f"{path}: not a readable Parquet file ({exc})") from exc


def check_columns(path: AnyPath, schema: pa.Schema, required: Iterable[str] = REQUIRED_COLUMNS) -> None:
    """Error naming the file when a required column is missing."""
    missing = [c for c in required if c not in schema.names]
    if missing:
        raise CurateError(f"{path}: missing column(s) {', '.join(missing)} (has: {', '.join(schema.names)})")


def iter_tables(
    path: AnyPath, columns: list[str] | None = None, batch_rows: int = BATCH_ROWS, counters: dict[str, Any] | None = None
) -> Iterator[pa.Table]:
    """Stream one shard as tables of at most ``batch_rows`` rows (at least one, maybe empty).

    Arrow does not validate the UTF-8 of strings it reads from Parquet: invalid bytes in a
    string column are replaced with U+FFFD, logged, and counted per column in
    ``counters["invalid_utf8_repaired"]``, so no stage crashes on them.
    """
    from curate.stages.textcol import repair_utf8

    pf = open_parquet(path)
    schema = pf.schema_arrow
    if columns is not None:
        check_columns(path, schema, columns)
    emitted = False
    try:
        for batch in pf.iter_batches(batch_size=batch_rows, columns=columns, use_threads=False):
            emitted = True
            table, repaired = repair_utf8(conform(pa.Table.from_batches([batch])))
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


# --------------------------------------------------------------------------- output directories


class OutputDir:
    """A stage's output directory: parameters, resume state, shards and ``_SUCCESS``."""

    def __init__(self, path: str | os.PathLike | RemotePath, stage: str, params: dict[str, Any], overwrite: bool = False) -> None:
        self.path = as_path(path)
        self.stage = stage
        self.params = json.loads(json.dumps(params, sort_keys=True, default=str))
        self.overwrite = overwrite
        self.started = time.monotonic()

    # -- paths
    def shard_path(self, name: str) -> AnyPath:
        return self.path / f"{name}.parquet"

    def rejected_path(self, name: str) -> AnyPath:
        return self.path / REJECTED_DIR / f"{name}.parquet"

    def stats_path(self, name: str) -> AnyPath:
        return self.path / STATS_DIR / f"{name}.json"

    def is_done(self, name: str) -> bool:
        return self.shard_path(name).exists()

    def done(self, names: list[str]) -> set[str]:
        """Which of ``names`` are finished shards (one listing on an object store, not a request per shard)."""
        if isinstance(self.path, Path):
            return {n for n in names if self.is_done(n)}
        have = {p.name for p in self.path.glob("part-*.parquet")} if self.path.exists() else set()
        return {n for n in names if f"{n}.parquet" in have}

    @property
    def complete(self) -> bool:
        return (self.path / SUCCESS).exists()

    # -- lifecycle
    def prepare(self) -> None:
        """Create the directory, honour --overwrite, and refuse to mix parameters."""
        p = self.path
        if p.exists() and not p.is_dir():
            raise CurateError(f"{p}: exists and is not a directory")
        if p.exists() and any(p.iterdir()):
            if not _is_curate_dir(p):
                raise CurateError(f"{p}: exists, is not empty and is not a curate dataset directory; choose another --out")
            if self.overwrite:
                rmtree(p)
            else:
                old = self._old_params()
                if old is not None and old != self.params:
                    changed = sorted(k for k in set(old) | set(self.params) if old.get(k) != self.params.get(k))
                    raise CurateError(
                        f"{p}: was written by {old.get('_stage', 'a stage')} with other parameters "
                        f"(changed: {', '.join(changed)}); use --overwrite to start again"
                    )
        try:
            p.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot create {p}: {exc.strerror or exc}") from exc
        if isinstance(p, Path):  # an object store has no temporary files (uploads complete or never appear)
            for stale in list(p.rglob(".*.tmp.*")):  # left by a killed run, phase files under _work/ included
                stale.unlink(missing_ok=True)
        if not (p / PARAMS).exists():
            write_json_atomic(p / PARAMS, self.params)

    def _old_params(self) -> dict[str, Any] | None:
        f = self.path / PARAMS
        if not f.exists():
            return None
        try:
            return json.loads(f.read_text())
        except ValueError:
            return None

    def invalidate(self) -> None:
        """Remove ``_SUCCESS`` before doing more work in this directory."""
        (self.path / SUCCESS).unlink(missing_ok=True)

    def write_shard_stats(self, stats: ShardStats) -> None:
        write_json_atomic(self.stats_path(stats.shard), stats.to_dict())

    def finish(self, names: list[str], extra: Callable[[dict[str, Any]], dict[str, Any]] | dict[str, Any] | None = None) -> dict[str, Any]:
        """Merge the stats of ``names`` and write ``_SUCCESS``; returns the record.

        ``extra`` (a dict, or a function of the merged stats) adds stage-wide entries.
        """
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
        merged = merge_stats(shard_stats)
        if callable(extra):
            extra = extra(merged)
        record = {
            "stage": self.stage,
            "curate_version": __version__,
            "params": {k: v for k, v in self.params.items() if not k.startswith("_")},
            "wall_seconds": round(time.monotonic() - self.started, 3),
            **merged,
            **(extra or {}),
        }
        write_json_atomic(self.path / SUCCESS, record)
        return record


# --------------------------------------------------------------------------- map stages


@dataclass
class MapResult:
    """What a map stage returns for one batch of documents."""

    kept: pa.Table
    rejected: pa.Table | None = None  # same columns plus ``reason``
    counters: dict[str, Any] = field(default_factory=dict)


class MapStage(Protocol):
    """A stage that maps a table of documents to kept and rejected documents.

    Instances must be picklable (they travel to worker processes); load models lazily.
    """

    name: str

    def params(self) -> dict[str, Any]: ...

    def __call__(self, table: pa.Table) -> MapResult: ...


@dataclass
class _MapJob:
    stage: Any
    input: AnyPath
    out: AnyPath
    name: str
    keep_rejected: bool
    stage_name: str
    params: dict[str, Any]
    only_sources: list[str] | None = None


def _apply_to_sources(stage: Any, table: pa.Table, patterns: list[str]) -> MapResult:
    """Run ``stage`` on the rows whose source matches; the others pass through unchanged."""
    match = source_matcher(patterns)
    sources = table.column("source").to_pylist()
    mask = pa.array([match(s) for s in sources], pa.bool_())
    n_match = sum(mask.to_pylist())
    if n_match == table.num_rows:
        return stage(table)
    res = stage(table.filter(mask))
    rest = table.filter(pc.invert(mask))
    kept = res.kept
    for f in kept.schema:
        if f.name not in rest.column_names:
            rest = rest.append_column(f, pa.nulls(rest.num_rows, f.type))
    kept = pa.concat_tables([kept, rest.select(kept.column_names).cast(kept.schema)])
    counters = dict(res.counters)
    counters["passed_through"] = counters.get("passed_through", 0) + rest.num_rows
    return MapResult(kept, res.rejected, counters)


def _map_shard(job: _MapJob) -> dict[str, Any]:
    """Run one map stage over one input shard (in a worker process)."""
    out = OutputDir(job.out, job.stage_name, job.params)
    stats = ShardStats(shard=job.name, inputs=[str(job.input)])
    t0 = time.perf_counter()
    kept_w = ShardWriter(out.shard_path(job.name))
    rej_w = ShardWriter(out.rejected_path(job.name)) if job.keep_rejected else None
    try:
        first = True
        read_counters: dict[str, Any] = {}
        for table in iter_tables(job.input, counters=read_counters):
            if first:
                check_columns(job.input, table.schema)
                first = False
            stats.add_in(table)
            res = _apply_to_sources(job.stage, table, job.only_sources) if job.only_sources else job.stage(table)
            stats.add_out(res.kept)
            kept_w.write(res.kept)
            if res.rejected is not None and res.rejected.num_rows:
                stats.add_rejected(res.rejected)
                if rej_w is not None:
                    rej_w.write(res.rejected)
            stats.count(res.counters)
        stats.count(read_counters)
        if rej_w is not None:
            if rej_w.schema is None:
                rej_w.schema = rejected_schema(kept_w.schema)
            rej_w.close()
        stats.seconds = time.perf_counter() - t0
        out.write_shard_stats(stats)
        kept_w.close()  # last: its existence marks the shard complete
    except BaseException as exc:
        kept_w.abort()
        if rej_w is not None:
            rej_w.abort()
        if isinstance(exc, CurateError) or not isinstance(exc, Exception):
            raise
        if isinstance(exc, OSError) and exc.errno in _OUTPUT_ERRNOS:
            raise output_error(exc.filename or out.path, exc) from exc
        log_file = out.path / ERRORS_DIR / f"{job.name}.txt"
        write_bytes_atomic(log_file, traceback.format_exc().encode())
        first_line = (str(exc).strip().splitlines() or [""])[0]
        raise CurateError(f"{job.input}: {type(exc).__name__}: {first_line} (traceback: {log_file})") from exc
    return stats.to_dict()


def describe_shard(stats: dict[str, Any]) -> str:
    """Progress note for one finished shard."""
    return f"{stats['docs_in']:,} -> {stats['docs_out']:,} docs, {stats['seconds']:.1f} s"


def map_stage_params(
    stage: MapStage,
    inputs: list[str],
    keep_rejected: bool = False,
    only_sources: list[str] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The parameters a map stage records in ``_params.json`` (and checks on resume)."""
    return {
        "_stage": stage.name,
        "inputs": [str(i) for i in inputs],
        "keep_rejected": keep_rejected,
        "only_sources": only_sources or None,
        **stage.params(),
        **(extra or {}),
    }


def run_map_stage(
    stage: MapStage,
    inputs: list[str],
    out: str | os.PathLike,
    *,
    executor: Executor | None = None,
    overwrite: bool = False,
    keep_rejected: bool = False,
    extra_params: dict[str, Any] | None = None,
    finish: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    only_sources: list[str] | None = None,
    per_shard: Callable[[int, Path], MapStage] | None = None,
    started: float | None = None,
) -> dict[str, Any]:
    """Run ``stage`` over every shard of ``inputs`` into ``out``; resume what exists.

    Returns the ``_SUCCESS`` record; ``finish(merged)`` may return stage-wide entries for it.
    ``only_sources`` (globs) limits the stage to matching sources; other rows pass through.
    ``per_shard(index, path)`` gives a shard its own stage object (for global stages whose
    last phase applies per-shard decisions); ``stage`` then only names the stage and its
    parameters. ``started`` (a ``time.monotonic()``) dates the stage's wall time from earlier phases.
    """
    files = resolve_inputs(inputs)
    params = map_stage_params(stage, inputs, keep_rejected, only_sources, extra_params)
    od = OutputDir(out, stage.name, params, overwrite)
    if started is not None:
        od.started = started
    od.prepare()
    names = [shard_name(i) for i in range(len(files))]
    done = od.done(names)
    pending = [
        _MapJob(per_shard(i, f) if per_shard else stage, f, od.path, n, keep_rejected, stage.name, od.params, only_sources or None)
        for i, (f, n) in enumerate(zip(files, names))
        if n not in done
    ]
    if not pending and od.complete:
        record = read_success(od.path)
        log.info("%s: %s is complete; nothing to do (use --overwrite to redo)", stage.name, od.path)
        return record
    od.invalidate()
    if len(pending) < len(files):
        log.info("%s: resuming, %d of %d shard(s) already done", stage.name, len(files) - len(pending), len(files))
    executor = executor or LocalExecutor()
    executor.map(_map_shard, pending, labels=[j.name for j in pending], desc=stage.name, describe=describe_shard)
    return od.finish(names, finish)


def save_npy_atomic(path: AnyPath, array: Any) -> None:
    """``numpy.save`` through a temporary file and a rename (loadable with ``mmap_mode``); one upload on an object store."""
    import numpy as np

    if isinstance(path, RemotePath):
        buf = io.BytesIO()
        np.save(buf, array)
        write_bytes_atomic(path, buf.getvalue())
        return
    tmp = _tmp_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            np.save(fh, array)
        os.replace(tmp, path)
    except OSError as exc:
        _unlink_quietly(tmp)
        raise output_error(path, exc) from exc


def write_table_atomic(path: AnyPath, table: pa.Table, compression: str = "zstd") -> None:
    """One whole table as a Parquet file, atomically (``compression="none"`` for random hashes)."""
    w = ShardWriter(path, table.schema, compression, in_memory=True)
    w.write(table)
    w.close()


# --------------------------------------------------------------------------- streamed sources


def _rows_table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)


def write_stream(
    records: Iterable[Any],
    out: str | os.PathLike,
    *,
    stage: str,
    params: dict[str, Any],
    shard_docs: int,
    counters: dict[str, int] | None = None,
    keep_rejected: bool = False,
    overwrite: bool = False,
    schema: pa.Schema | None = None,
    desc: str | None = None,
) -> dict[str, Any]:
    """Cut a deterministic stream of records (``.doc`` and ``.reason``) into shards.

    Shard ``k`` holds records ``k*shard_docs`` to ``(k+1)*shard_docs - 1`` of the stream
    (kept ones in ``part-k``, rejected ones in ``_rejected/part-k``). On a re-run the stream is read
    again but shards that exist are not rewritten. ``counters`` is a live mapping the
    stream updates; each shard records what changed while it filled.
    """
    from tqdm import tqdm

    from curate.executor import show_progress_bar
    from curate.schema import BASE_SCHEMA

    if shard_docs < 1:
        raise CurateError(f"--shard-docs must be at least 1, got {shard_docs}")
    schema = schema or BASE_SCHEMA
    od = OutputDir(out, stage, {"_stage": stage, "keep_rejected": keep_rejected, **params}, overwrite)
    od.prepare()
    od.invalidate()
    counters = counters if counters is not None else {}
    names: list[str] = []
    kept: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    last_counters: dict[str, int] = {}
    t0 = time.perf_counter()
    bar = tqdm(desc=desc or stage, unit=" docs", dynamic_ncols=True) if show_progress_bar() else None

    def flush() -> None:
        nonlocal kept, rejected, last_counters, t0
        name = shard_name(len(names))
        names.append(name)
        now = dict(counters)
        delta = {k: v - last_counters.get(k, 0) for k, v in now.items() if v != last_counters.get(k, 0)}
        last_counters = now
        if not od.is_done(name):
            stats = ShardStats(shard=name)
            kt = _rows_table(kept, schema)
            rt = _rows_table(rejected, rejected_schema(schema))
            stats.add_in(kt)
            stats.add_in(rt)
            stats.add_out(kt)
            stats.add_rejected(rt)
            stats.count(delta)
            if keep_rejected:
                w = ShardWriter(od.rejected_path(name), rejected_schema(schema))
                w.write(rt)
                w.close()
            stats.seconds = time.perf_counter() - t0
            od.write_shard_stats(stats)
            w = ShardWriter(od.shard_path(name), schema)
            w.write(kt)
            w.close()
            if bar is None:
                log.info("%s: %s written: %d docs (%d rejected)", stage, name, len(kept), len(rejected))
        kept, rejected = [], []
        t0 = time.perf_counter()

    try:
        for rec in records:
            if rec.reason is None:
                kept.append(rec.doc)
                if bar is not None:
                    bar.update(1)
            else:
                rejected.append({**rec.doc, "reason": rec.reason})
            if len(kept) + len(rejected) >= shard_docs:
                flush()
        if kept or rejected or not names:
            flush()
    finally:
        if bar is not None:
            bar.close()
    return od.finish(names)


# --------------------------------------------------------------------------- file stages: one input file -> one shard


@dataclass
class FileBatch:
    """What a file reader yields: kept and rejected documents, counters, and the input they came from.

    ``docs_in``/``bytes_in`` count the input (e.g. HTML records and bytes); by default they are
    the kept plus rejected rows and their text bytes. ``source`` attributes them per source.
    """

    kept: pa.Table
    rejected: pa.Table | None = None
    counters: dict[str, Any] = field(default_factory=dict)
    docs_in: int | None = None
    bytes_in: int | None = None
    source: str = ""


@dataclass
class _FileJob:
    reader: Any  # picklable callable: reader(path) -> Iterator[FileBatch]
    input: AnyPath
    out: AnyPath
    name: str
    keep_rejected: bool
    stage_name: str
    params: dict[str, Any]
    schema: pa.Schema


def _file_shard(job: _FileJob) -> dict[str, Any]:
    """Read one input file into one shard (in a worker process); same file order as ``_map_shard``."""
    out = OutputDir(job.out, job.stage_name, job.params)
    stats = ShardStats(shard=job.name, inputs=[str(job.input)])
    t0 = time.perf_counter()
    kept_w = ShardWriter(out.shard_path(job.name), job.schema)
    rej_w = ShardWriter(out.rejected_path(job.name), rejected_schema(job.schema)) if job.keep_rejected else None
    try:
        for batch in job.reader(job.input):
            rejected = batch.rejected if batch.rejected is not None else rejected_schema(job.schema).empty_table()
            n_in = batch.docs_in if batch.docs_in is not None else batch.kept.num_rows + rejected.num_rows
            b_in = batch.bytes_in if batch.bytes_in is not None else text_bytes(batch.kept) + text_bytes(rejected)
            stats.docs_in += n_in
            stats.bytes_in += b_in
            src = stats._src(batch.source)
            src["docs_in"] += n_in
            src["bytes_in"] += b_in
            stats.add_out(batch.kept)
            kept_w.write(batch.kept)
            if rejected.num_rows:
                stats.add_rejected(rejected)
                if rej_w is not None:
                    rej_w.write(rejected)
            stats.count(batch.counters)
        if rej_w is not None:
            rej_w.close()
        stats.seconds = time.perf_counter() - t0
        out.write_shard_stats(stats)
        kept_w.close()  # last: its existence marks the shard complete
    except BaseException as exc:
        kept_w.abort()
        if rej_w is not None:
            rej_w.abort()
        if isinstance(exc, CurateError) or not isinstance(exc, Exception):
            raise
        if isinstance(exc, OSError) and exc.errno in _OUTPUT_ERRNOS:
            raise output_error(exc.filename or out.path, exc) from exc
        log_file = out.path / ERRORS_DIR / f"{job.name}.txt"
        write_bytes_atomic(log_file, traceback.format_exc().encode())
        first_line = (str(exc).strip().splitlines() or [""])[0]
        raise CurateError(f"{job.input}: {type(exc).__name__}: {first_line} (traceback: {log_file})") from exc
    return stats.to_dict()


def run_file_stage(
    reader: Callable[[Path], Iterable[FileBatch]],
    files: list[Path],
    out: str | os.PathLike,
    *,
    stage_name: str,
    params: dict[str, Any],
    schema: pa.Schema,
    executor: Executor | None = None,
    overwrite: bool = False,
    keep_rejected: bool = False,
    finish: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Run ``reader`` over input files that are not Parquet (WARC, ...): file ``k`` -> ``part-k``.

    The output directory behaves like a map stage's (params, resume, stats, ``_SUCCESS``);
    ``reader`` must be picklable and yield :class:`FileBatch` objects with ``schema``'s columns.
    """
    od = OutputDir(out, stage_name, {"_stage": stage_name, "keep_rejected": keep_rejected, **params}, overwrite)
    od.prepare()
    names = [shard_name(i) for i in range(len(files))]
    done = od.done(names)
    pending = [_FileJob(reader, f, od.path, n, keep_rejected, stage_name, od.params, schema) for f, n in zip(files, names) if n not in done]
    if not pending and od.complete:
        log.info("%s: %s is complete; nothing to do (use --overwrite to redo)", stage_name, od.path)
        return read_success(od.path)
    od.invalidate()
    if len(pending) < len(files):
        log.info("%s: resuming, %d of %d shard(s) already done", stage_name, len(files) - len(pending), len(files))
    executor = executor or LocalExecutor()
    executor.map(_file_shard, pending, labels=[f"{j.name} ({j.input.name})" for j in pending], desc=stage_name, describe=describe_shard)
    return od.finish(names, finish)
