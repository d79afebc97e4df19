"""What a stage counts: a small counters type, per-shard stats, their merge, and the summary line.

Counters are nested mappings of numbers (``{"rules": {"gopher_quality": {"word_count": 3}}}``)
that travel as JSON from worker processes into ``_stats/part-*.json`` and ``_SUCCESS``.
:class:`Counters` is a ``dict`` (so it serialises and merges as one) with the arithmetic a
stage needs, so no stage writes ``d[k] = d.get(k, 0) + 1``. This module imports nothing of
curate's: every layer may use it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc


class Counters(dict):
    """Nested counters: ``add("lines", "c4", "javascript")`` adds 1 to ``self["lines"]["c4"]["javascript"]``."""

    def add(self, *keys: str, n: int | float = 1) -> None:
        """Add ``n`` at the path ``keys`` (intermediate levels are created)."""
        if not keys:
            raise ValueError("Counters.add needs at least one key")
        d = self.level(*keys[:-1])
        d[keys[-1]] = d.get(keys[-1], 0) + n

    def level(self, *keys: str) -> dict[str, Any]:
        """The nested mapping at ``keys`` (created when missing): for code that fills one level in a loop."""
        d: dict[str, Any] = self
        for k in keys:
            d = d.setdefault(k, {})
        return d

    def first(self, key: str, name: str, value: Any) -> None:
        """Keep the first ``value`` seen under ``self[key][name]`` (e.g. the first error message of a reason)."""
        self.level(key).setdefault(name, value)

    def merge(self, other: dict[str, Any] | None) -> Counters:
        """Add another mapping's numbers into this one (recursively); returns self."""
        if other:
            merge_counts(self, other)
        return self


def merge_counts(into: dict, other: dict) -> dict:
    """Add ``other``'s numbers into ``into``, recursively through nested dicts (other values: the first one stays)."""
    for key, value in other.items():
        if isinstance(value, dict):
            merge_counts(into.setdefault(key, {}), value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            into[key] = into.get(key, 0) + value
        else:
            into.setdefault(key, value)
    return into


# --------------------------------------------------------------------------- per-shard stats


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
            self.add_in_counts(n, b, src)

    def add_in_counts(self, docs: int, nbytes: int, source: str) -> None:
        """Input counted by the reader itself (records and bytes of a WARC file, say)."""
        self.docs_in += docs
        self.bytes_in += nbytes
        s = self._src(source)
        s["docs_in"] += docs
        s["bytes_in"] += nbytes

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
    line = f"{stage}: {din:,} -> {dout:,} docs{pct}, {mb(stats.get('bytes_in', 0))} -> {mb(stats.get('bytes_out', 0))}, {seconds:.1f} s"
    return line + (f"; rejected: {top}{more}" if top else "")


def mb(n: int) -> str:
    """Bytes for people: ``12.3 MB``, or ``45.6 kB`` below 100 kB."""
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"
