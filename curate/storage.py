"""Where files live and how they are written: local paths and fsspec URLs, atomic writes.

A local path is a :class:`pathlib.Path`; a URL (``s3://bucket/key``) is a :class:`RemotePath`
with the part of pathlib's API curate uses. Every file a stage writes goes through a
temporary name and a rename (locally) or one completed upload (object stores), so a file
that exists under its final name is whole. This module knows nothing of shards, documents
or stages.
"""

from __future__ import annotations

import glob
import hashlib
import io
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from curate.errors import CurateError, output_error

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


def np_rows(path: AnyPath, start: int, stop: int) -> Any:
    """Rows ``[start, stop)`` of a 1-d ``.npy`` file: a memory-map slice locally, one ranged read on an object store."""
    import numpy as np

    if isinstance(path, Path):
        return np.asarray(np.load(path, mmap_mode="r", allow_pickle=False)[start:stop])
    with path.open("rb") as fh:
        version = np.lib.format.read_magic(fh)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        _shape, _fortran, dtype = read_header(fh)
        fh.seek(fh.tell() + start * dtype.itemsize)
        return np.frombuffer(fh.read((stop - start) * dtype.itemsize), dtype).copy()


def read_parquet(path: AnyPath, columns: list[str] | None = None) -> pa.Table:
    """One whole Parquet file (a work file, never a whole dataset)."""
    if isinstance(path, Path):
        return pq.read_table(path, columns=columns)
    return pq.read_table(pa.BufferReader(path.read_bytes()), columns=columns)  # one request


# --------------------------------------------------------------------------- atomic files


def tmp_path(path: Path) -> Path:
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
    tmp = tmp_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        unlink_quietly(tmp)
        raise output_error(path, exc) from exc


def unlink_quietly(path: Path) -> None:
    """Remove a temporary file while failing; a read-only file system must not mask the first error."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass


def write_json_atomic(path: AnyPath, obj: Any) -> None:
    """Write ``obj`` as indented, key-sorted JSON, atomically."""
    write_bytes_atomic(path, (json.dumps(obj, indent=1, sort_keys=True, default=str) + "\n").encode())


def save_npy_atomic(path: AnyPath, array: Any) -> None:
    """``numpy.save`` through a temporary file and a rename (loadable with ``mmap_mode``); one upload on an object store."""
    import numpy as np

    if isinstance(path, RemotePath):
        buf = io.BytesIO()
        np.save(buf, array)
        write_bytes_atomic(path, buf.getvalue())
        return
    tmp = tmp_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            np.save(fh, array)
        os.replace(tmp, path)
    except OSError as exc:
        unlink_quietly(tmp)
        raise output_error(path, exc) from exc
