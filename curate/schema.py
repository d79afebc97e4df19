"""The Arrow schema of a curate document (see README.md, "Dataset directories", and docs/design.md).

Stages add columns and never rename them; every column after the base five is
optional and appears once the stage that writes it has run.
"""

from __future__ import annotations

import pyarrow as pa

BASE_FIELDS: list[pa.Field] = [
    pa.field("id", pa.string(), nullable=False),
    pa.field("text", pa.large_string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("url", pa.string()),
    pa.field("meta", pa.string()),
]

#: Columns written by later stages, with their types.
STAGE_FIELDS: dict[str, pa.Field] = {
    f.name: f
    for f in [
        pa.field("lang", pa.string()),
        pa.field("lang_score", pa.float32()),
        pa.field("quality_score", pa.float32()),
        pa.field("dup_cluster", pa.string()),
        pa.field("dup_count", pa.int64()),
    ]
}

BASE_SCHEMA = pa.schema(BASE_FIELDS)
REQUIRED_COLUMNS = ("id", "text", "source")


def rejected_schema(schema: pa.Schema) -> pa.Schema:
    """Schema of a stage's ``_rejected/`` shards: the documents plus ``reason``."""
    if "reason" in schema.names:
        return schema
    return schema.append(pa.field("reason", pa.string(), nullable=False))


def with_column(table: pa.Table, field: pa.Field, values: pa.Array | list) -> pa.Table:
    """Add or replace one column, keeping the other columns' order."""
    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values, type=field.type)
    if arr.type != field.type:
        arr = arr.cast(field.type)
    idx = table.schema.get_field_index(field.name)
    if idx >= 0:
        return table.set_column(idx, field, arr)
    return table.append_column(field, arr)


def conform(table: pa.Table) -> pa.Table:
    """Cast the known columns of ``table`` to their schema types (e.g. string -> large_string)."""
    known = {f.name: f for f in BASE_FIELDS} | STAGE_FIELDS
    fields = []
    changed = False
    for f in table.schema:
        want = known.get(f.name)
        if want is not None and f.type != want.type:
            fields.append(pa.field(f.name, want.type, nullable=f.nullable))
            changed = True
        else:
            fields.append(f)
    return table.cast(pa.schema(fields)) if changed else table


def empty_documents(extra: list[pa.Field] | None = None) -> pa.Table:
    """An empty table with the base columns (and ``extra`` ones)."""
    return pa.schema(BASE_FIELDS + list(extra or [])).empty_table()


def source_matcher(patterns: list[str] | str | None):
    """A predicate ``source -> bool`` for glob patterns like ``pile/*,cc/*`` (None: all)."""
    import fnmatch
    import re

    if patterns is None:
        return lambda source: True
    if isinstance(patterns, str):
        patterns = [patterns]
    pats = [p.strip() for item in patterns for p in item.split(",") if p.strip()]
    if not pats:
        return lambda source: True
    rx = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in pats))
    return lambda source: bool(rx.match(source or ""))


def source_rank(priority: list[str] | str | None):
    """``source -> rank`` for an ordered list of sources or globs (lower ranks first; unlisted last)."""
    import fnmatch

    if isinstance(priority, str):
        priority = [priority]
    pats = [p.strip() for item in (priority or []) for p in item.split(",") if p.strip()]

    def rank(source: str) -> int:
        for i, p in enumerate(pats):
            if source == p or fnmatch.fnmatchcase(source or "", p):
                return i
        return len(pats)

    return rank
