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


def _is_text_type(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def repair_utf8(table: pa.Table) -> tuple[pa.Table, dict[str, int]]:
    """Replace invalid UTF-8 in every string column with U+FFFD; returns the table and, per column, how many values changed.

    Arrow validates UTF-8 at about 4 GB/s, so a clean batch costs a scan and no copy; only a
    column that fails is decoded value by value (``errors="replace"``).
    """
    counts: dict[str, int] = {}
    for i, f in enumerate(table.schema):
        if not _is_text_type(f.type):
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
