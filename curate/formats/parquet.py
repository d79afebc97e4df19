"""Parquet shards (the default format): zstd, dictionary-encoded ``source``/``lang``/``reason``, statistics on ``id``.

Every stage reads Parquet; a dataset directory of Parquet shards opens in pandas as it is
(``pandas.read_parquet(OUT)``).
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.parquet as pq

from curate.errors import output_error
from curate.formats import ShardFormat
from curate.registry import output_format
from curate.storage import AnyPath, as_path, tmp_path, unlink_quietly, write_bytes_atomic

_DICT_COLUMNS = ("source", "lang", "reason")


class ParquetWriter:
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


@output_format("parquet", help="Parquet shards (part-*.parquet, zstd): what every curate stage reads, and pandas.")
class Parquet(ShardFormat):
    """The default shard format."""

    name: ClassVar[str] = "parquet"
    suffix: ClassVar[str] = ".parquet"

    def writer(self, path: Any, schema: pa.Schema | None = None) -> ParquetWriter:
        return ParquetWriter(path, schema)


def write_table_atomic(path: AnyPath, table: pa.Table, compression: str = "zstd") -> None:
    """One whole table as a Parquet file, atomically (``compression="none"`` for random hashes)."""
    w = ParquetWriter(path, table.schema, compression, in_memory=True)
    w.write(table)
    w.close()
