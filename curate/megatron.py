"""Megatron-LM indexed datasets (``MMIDIDX`` version 1): a streaming writer, a merger and a memmap reader.

These are the ``PREFIX.bin`` / ``PREFIX.idx`` pairs that Megatron-LM, Megatron-Core
(``megatron/core/datasets/indexed_dataset.py``) and NeMo load. ``PREFIX.idx``, little-endian:

    offset  size        field
    0       9           magic ``b"MMIDIDX\\x00\\x00"``
    9       uint64      version, always 1
    17      uint8       dtype code of the tokens: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64,
                        6 float64, 7 float32, 8 uint16
    18      uint64      sequence count S
    26      uint64      document-index count D (documents + 1)
    34      int32[S]    tokens per sequence
    34+4S   int64[S]    byte offset of each sequence in ``PREFIX.bin``
    34+12S  int64[D]    document indices: 0, then one past each document's last sequence

``PREFIX.bin`` holds the sequences' tokens back to back in that dtype. curate writes one
sequence per document (no sentence splitting), so the document indices are ``0, 1, ..., S``.

The writer streams: tokens go straight to ``.bin``; when the number of documents is known
up front (merges, blends) the ``.idx`` is written in place as documents arrive, so memory
stays at one chunk; otherwise (one tokenized piece) it keeps the lengths, 4 bytes per
document, until :meth:`IndexedDatasetWriter.finish`. Both files are written under
temporary names and renamed into place, ``.bin`` first, so an existing ``.idx`` means a
complete pair.

A prefix may be an fsspec URL (``s3://bucket/tok/corpus``): the writer then builds both
files in a local temporary directory (``TMPDIR`` must hold them) and uploads ``.bin``,
then ``.idx``, each appearing whole when its upload completes; a reader downloads both
files to a temporary directory and memory-maps them there.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from curate.errors import CurateError, output_error
from curate.storage import AnyPath, as_path, open_input, upload_file

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
HEADER_BYTES = len(MAGIC) + 8 + 1 + 8 + 8  # 34

#: Megatron's dtype codes (``DType`` in indexed_dataset.py).
DTYPE_CODES: dict[np.dtype, int] = {
    np.dtype(np.uint8): 1,
    np.dtype(np.int8): 2,
    np.dtype(np.int16): 3,
    np.dtype(np.int32): 4,
    np.dtype(np.int64): 5,
    np.dtype(np.float64): 6,
    np.dtype(np.float32): 7,
    np.dtype(np.uint16): 8,
}
CODE_DTYPES: dict[int, np.dtype] = {code: dt for dt, code in DTYPE_CODES.items()}
_INT32_MAX = 2**31 - 1


def bin_path(prefix: str | os.PathLike) -> AnyPath:
    """``PREFIX.bin``."""
    return as_path(f"{prefix}.bin")


def idx_path(prefix: str | os.PathLike) -> AnyPath:
    """``PREFIX.idx``."""
    return as_path(f"{prefix}.idx")


def exists(prefix: str | os.PathLike) -> bool:
    """Whether both ``PREFIX.bin`` and ``PREFIX.idx`` exist."""
    return bin_path(prefix).is_file() and idx_path(prefix).is_file()


def dtype_for_vocab(vocab_size: int) -> np.dtype:
    """uint16 when every token id fits (a vocabulary of at most 65,535), else int32."""
    if vocab_size <= 0:
        raise ValueError(f"vocabulary size must be positive, got {vocab_size}")
    if vocab_size <= 65_535:
        return np.dtype(np.uint16)
    if vocab_size <= _INT32_MAX:
        return np.dtype(np.int32)
    raise ValueError(f"vocabulary of {vocab_size} tokens does not fit int32")


def encode_header(dtype: np.dtype | type, sequence_count: int, document_index_count: int) -> bytes:
    """The 34 header bytes of an ``.idx`` file."""
    code = DTYPE_CODES[np.dtype(dtype)]
    return (
        MAGIC
        + struct.pack("<Q", VERSION)
        + struct.pack("<B", code)
        + struct.pack("<Q", sequence_count)
        + struct.pack("<Q", document_index_count)
    )


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp.{os.getpid()}")


class IndexedDatasetWriter:
    """Writes one ``PREFIX.bin``/``PREFIX.idx`` pair, one sequence per document.

    ``documents`` (the total, when known) lets the index be written in place as documents
    arrive; without it the lengths are kept (4 bytes per document) until :meth:`finish`.
    The files appear under their names only in :meth:`finish`; :meth:`abort` removes them.
    """

    def __init__(self, prefix: str | os.PathLike, dtype: np.dtype | type, documents: int | None = None) -> None:
        self.prefix = str(prefix)
        self.dtype = np.dtype(dtype)
        if self.dtype not in DTYPE_CODES:
            raise ValueError(f"dtype {self.dtype} has no Megatron code")
        self.itemsize = self.dtype.itemsize
        self.expected = documents
        self.documents = 0
        self.tokens = 0
        self.bin_final, self.idx_final = bin_path(prefix), idx_path(prefix)
        self._staging: Path | None = None  # a remote prefix: built here, uploaded in finish()
        if isinstance(self.bin_final, Path):
            self.bin_tmp, self.idx_tmp = _tmp(self.bin_final), _tmp(self.idx_final)
            self.bin_final.parent.mkdir(parents=True, exist_ok=True)
        else:
            self._staging = Path(tempfile.mkdtemp(prefix=".curate-megatron-"))
            self.bin_tmp, self.idx_tmp = self._staging / self.bin_final.name, self._staging / self.idx_final.name
        self._bin = open(self.bin_tmp, "wb")  # noqa: SIM115 - closed in finish/abort
        self._lengths: list[np.ndarray] = []
        self._idx = None
        if documents is not None:
            self._idx = open(self.idx_tmp, "wb+")  # noqa: SIM115
            self._idx.write(encode_header(self.dtype, documents, documents + 1))

    def _record(self, lengths: np.ndarray) -> None:
        lengths = np.asarray(lengths, dtype=np.int64)
        n = len(lengths)
        if n == 0:
            return
        if lengths.min() < 0 or lengths.max() > _INT32_MAX:
            raise ValueError("sequence lengths must be between 0 and 2**31-1 tokens")
        if self._idx is not None:
            assert self.expected is not None
            if self.documents + n > self.expected:
                raise ValueError(f"{self.prefix}: more than the {self.expected} documents announced")
            s = self.expected
            ends = np.cumsum(lengths) * self.itemsize
            pointers = self.tokens * self.itemsize + np.concatenate(([0], ends[:-1]))
            self._idx.seek(HEADER_BYTES + 4 * self.documents)
            self._idx.write(lengths.astype("<i4").tobytes())
            self._idx.seek(HEADER_BYTES + 4 * s + 8 * self.documents)
            self._idx.write(pointers.astype("<i8").tobytes())
        else:
            self._lengths.append(lengths.astype(np.int32))
        self.documents += n
        self.tokens += int(lengths.sum())

    def _write_bin(self, data: bytes | memoryview) -> None:
        try:
            self._bin.write(data)
        except OSError as exc:
            self.abort()
            raise output_error(self.bin_final, exc) from exc

    def add_documents(self, tokens: np.ndarray, lengths: Sequence[int] | np.ndarray) -> None:
        """Append documents given as their tokens back to back and the length of each."""
        lengths = np.asarray(lengths, dtype=np.int64)
        if int(lengths.sum()) != len(tokens):
            raise ValueError(f"lengths add up to {int(lengths.sum())} tokens, got {len(tokens)}")
        arr = np.ascontiguousarray(tokens, dtype=self.dtype.newbyteorder("<"))
        self._write_bin(arr.data)
        self._record(lengths)

    def add_raw(self, data: bytes | memoryview, lengths: np.ndarray) -> None:
        """Append documents already encoded in this dtype (bytes of ``sum(lengths)`` tokens)."""
        lengths = np.asarray(lengths, dtype=np.int64)
        if len(data) != int(lengths.sum()) * self.itemsize:
            raise ValueError("raw bytes do not match the lengths")
        self._write_bin(data)
        self._record(lengths)

    def add_file(self, path: AnyPath, lengths: np.ndarray) -> None:
        """Append a whole ``.bin`` file (copied, not decoded) whose documents have ``lengths``."""
        lengths = np.asarray(lengths, dtype=np.int64)
        size = path.stat().st_size
        if size != int(lengths.sum()) * self.itemsize:
            raise CurateError(f"{path}: {size} bytes, but its index says {int(lengths.sum()) * self.itemsize}")
        with open_input(path) as fh:
            for chunk in iter(lambda: fh.read(16 << 20), b""):
                self._write_bin(chunk)
        self._record(lengths)

    def finish(self) -> tuple[int, int]:
        """Write the index, fsync, rename both files into place; returns (documents, tokens)."""
        try:
            self._bin.flush()
            os.fsync(self._bin.fileno())
            self._bin.close()
            n = self.documents
            if self._idx is not None:
                if n != self.expected:
                    raise ValueError(f"{self.prefix}: {n} documents written, {self.expected} announced")
                fh = self._idx
                fh.seek(HEADER_BYTES + 12 * n)
            else:
                fh = open(self.idx_tmp, "wb")  # noqa: SIM115
                lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0, np.int32)
                pointers = np.zeros(n, np.int64)
                if n > 1:
                    np.cumsum(lengths[:-1], dtype=np.int64, out=pointers[1:])
                pointers *= self.itemsize
                fh.write(encode_header(self.dtype, n, n + 1))
                fh.write(lengths.astype("<i4").tobytes())
                fh.write(pointers.astype("<i8").tobytes())
            step = 1 << 20
            for start in range(0, n + 1, step):
                fh.write(np.arange(start, min(n + 1, start + step), dtype="<i8").tobytes())
            fh.flush()
            os.fsync(fh.fileno())
            fh.close()
            if self._staging is not None:
                upload_file(self.bin_tmp, self.bin_final)
                upload_file(self.idx_tmp, self.idx_final)
                shutil.rmtree(self._staging, ignore_errors=True)
            else:
                os.replace(self.bin_tmp, self.bin_final)
                os.replace(self.idx_tmp, self.idx_final)
        except OSError as exc:  # disk full, read-only: one line naming the output
            self.abort()
            raise output_error(self.bin_final, exc) from exc
        except BaseException:
            self.abort()
            raise
        return self.documents, self.tokens

    def abort(self) -> None:
        """Close and remove the temporary files."""
        for fh in (self._bin, self._idx):
            if fh is not None and not fh.closed:
                fh.close()
        self.bin_tmp.unlink(missing_ok=True)
        self.idx_tmp.unlink(missing_ok=True)
        if self._staging is not None:
            shutil.rmtree(self._staging, ignore_errors=True)

    def __enter__(self) -> IndexedDatasetWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()


def read_header(prefix: str | os.PathLike) -> tuple[np.dtype, int, int]:
    """(dtype, sequence count, document-index count) of ``PREFIX.idx``; a bad file is a one-line error."""
    p = idx_path(prefix)
    try:
        with open_input(p) as fh:
            head = fh.read(HEADER_BYTES)
    except FileNotFoundError:
        raise CurateError(f"{p}: no such index file") from None
    except OSError as exc:
        raise CurateError(f"{p}: cannot read ({exc.strerror or exc})") from exc
    if len(head) < HEADER_BYTES or head[: len(MAGIC)] != MAGIC:
        raise CurateError(f"{p}: not a Megatron indexed dataset index (no MMIDIDX header)")
    (version,) = struct.unpack_from("<Q", head, 9)
    if version != VERSION:
        raise CurateError(f"{p}: index version {version}, only version 1 is supported")
    code = head[17]
    if code not in CODE_DTYPES:
        raise CurateError(f"{p}: unknown dtype code {code}")
    seqs, docs = struct.unpack_from("<QQ", head, 18)
    return CODE_DTYPES[code], seqs, docs


class IndexedDataset:
    """Read-only view of ``PREFIX.bin``/``PREFIX.idx`` through numpy memmaps.

    ``ds[i]`` is sequence ``i`` (a numpy view, no copy); ``ds.document(i)`` the tokens of
    document ``i``. ``sequence_lengths``, ``sequence_pointers`` and ``document_indices``
    are the index arrays as Megatron names them.
    """

    def __init__(self, prefix: str | os.PathLike) -> None:
        self.prefix = str(prefix)
        self.dtype, self.sequence_count, doc_count = read_header(prefix)
        ip, bp = idx_path(prefix), bin_path(prefix)
        if not isinstance(ip, Path):  # remote: memory-map local copies
            staging = Path(tempfile.mkdtemp(prefix=".curate-megatron-"))
            weakref.finalize(self, shutil.rmtree, staging, True)
            for remote in (ip, bp):
                if not remote.is_file():
                    raise CurateError(f"{remote}: no such {'index' if remote is ip else 'data'} file")
                remote.fs.get_file(remote.path, str(staging / remote.name))
            ip, bp = staging / ip.name, staging / bp.name
        self.bin_file = bp  # the file the tokens are mapped from (a local copy of a remote one)
        expected = HEADER_BYTES + 12 * self.sequence_count + 8 * doc_count
        size = ip.stat().st_size
        if size < expected:
            raise CurateError(f"{ip}: truncated index ({size} bytes, the header announces {expected})")
        if not bp.is_file():
            raise CurateError(f"{bp}: no such data file")
        idx = np.memmap(ip, dtype=np.uint8, mode="r") if size else np.zeros(0, np.uint8)
        s = self.sequence_count
        self.sequence_lengths = np.frombuffer(idx, dtype="<i4", count=s, offset=HEADER_BYTES)
        self.sequence_pointers = np.frombuffer(idx, dtype="<i8", count=s, offset=HEADER_BYTES + 4 * s)
        self.document_indices = np.frombuffer(idx, dtype="<i8", count=doc_count, offset=HEADER_BYTES + 12 * s)
        self.itemsize = self.dtype.itemsize
        bsize = bp.stat().st_size
        need = int(self.sequence_pointers[-1]) + int(self.sequence_lengths[-1]) * self.itemsize if s else 0
        if bsize < need:
            raise CurateError(f"{bp}: truncated data file ({bsize} bytes, the index needs {need})")
        if bsize % self.itemsize:
            raise CurateError(f"{bp}: {bsize} bytes is not a whole number of {self.dtype} tokens")
        self.tokens = np.memmap(bp, dtype=self.dtype.newbyteorder("<"), mode="r") if bsize else np.zeros(0, self.dtype)

    def __len__(self) -> int:
        return self.sequence_count

    @property
    def num_documents(self) -> int:
        return max(0, len(self.document_indices) - 1)

    @property
    def num_tokens(self) -> int:
        return int(self.sequence_lengths.sum(dtype=np.int64))

    def __getitem__(self, i: int) -> np.ndarray:
        if not -self.sequence_count <= i < self.sequence_count:
            raise IndexError(f"sequence {i} out of range (0..{self.sequence_count - 1})")
        i %= self.sequence_count
        start = int(self.sequence_pointers[i]) // self.itemsize
        return self.tokens[start : start + int(self.sequence_lengths[i])]

    def document(self, i: int) -> np.ndarray:
        """All tokens of document ``i`` (its sequences concatenated)."""
        n = self.num_documents
        if not 0 <= i < n:
            raise IndexError(f"document {i} out of range (0..{n - 1})")
        a, b = int(self.document_indices[i]), int(self.document_indices[i + 1])
        if b - a == 1:
            return self[a]
        return np.concatenate([self[j] for j in range(a, b)]) if b > a else np.zeros(0, self.dtype)

    def document_lengths(self) -> np.ndarray:
        """Tokens per document (int64)."""
        if self.one_sequence_per_document():
            return self.sequence_lengths.astype(np.int64)
        cum = np.concatenate(([0], np.cumsum(self.sequence_lengths, dtype=np.int64)))
        return cum[self.document_indices[1:]] - cum[self.document_indices[:-1]]

    def one_sequence_per_document(self) -> bool:
        d = self.document_indices
        return len(d) == self.sequence_count + 1 and bool(np.array_equal(d, np.arange(len(d))))

    def check(self) -> None:
        """Verify the whole index: pointers follow the lengths, document indices are monotone."""
        ip = idx_path(self.prefix)
        s = self.sequence_count
        if s:
            pointers = np.zeros(s, np.int64)
            np.cumsum(self.sequence_lengths[:-1], dtype=np.int64, out=pointers[1:])
            if not np.array_equal(pointers * self.itemsize, self.sequence_pointers):
                raise CurateError(f"{ip}: sequence pointers do not follow the sequence lengths")
            if self.sequence_lengths.min() < 0:
                raise CurateError(f"{ip}: negative sequence length")
        d = self.document_indices
        if len(d) == 0 or d[0] != 0 or d[-1] != s or (len(d) > 1 and np.any(np.diff(d) < 0)):
            raise CurateError(f"{ip}: document indices must rise from 0 to the sequence count")
        need = (int(self.sequence_pointers[-1]) + int(self.sequence_lengths[-1]) * self.itemsize) if s else 0
        if bin_path(self.prefix).stat().st_size != need:
            raise CurateError(f"{bin_path(self.prefix)}: size does not match the index")


def merge(prefixes: Iterable[str | os.PathLike], out_prefix: str | os.PathLike, dtype: np.dtype | type | None = None) -> tuple[int, int]:
    """Concatenate indexed datasets (one sequence per document) into one, copying token bytes.

    Pointers are rebased, nothing is re-tokenized; memory is one input index at a time.
    Returns (documents, tokens).
    """
    prefixes = [str(p) for p in prefixes]
    headers = [read_header(p) for p in prefixes]
    dtypes = {h[0] for h in headers}
    if dtype is not None:
        dtypes.add(np.dtype(dtype))
    if len(dtypes) > 1:
        raise CurateError(f"cannot merge indexed datasets of different dtypes: {', '.join(sorted(map(str, dtypes)))}")
    if not dtypes:
        raise CurateError("nothing to merge")
    total = sum(h[1] for h in headers)
    with IndexedDatasetWriter(out_prefix, dtypes.pop(), documents=total) as w:
        for p in prefixes:
            ds = IndexedDataset(p)
            if not ds.one_sequence_per_document():
                raise CurateError(f"{idx_path(p)}: documents of several sequences cannot be merged here")
            w.add_file(ds.bin_file, ds.sequence_lengths)
            del ds
        return w.finish()
