"""Reading a ``text`` column safely: invalid UTF-8 (e.g. encoded lone surrogates) must not crash a shard."""

from __future__ import annotations

import pyarrow as pa


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
