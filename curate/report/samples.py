"""A few rejected documents per removal reason, read from a stage's ``_rejected/`` output (``--keep-rejected``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from curate.report.collect import Stage, rejected_reasons

log = logging.getLogger("curate")

SAMPLE_CHARS = 500
MAX_SAMPLE_REASONS = 8
MAX_SAMPLE_FILES = 200
#: Columns shown beside a sample when the rejected output has them.
EXTRA_COLUMNS = ("dup_of", "quality_score", "lang", "lang_score", "url")


@dataclass
class Sample:
    """One rejected document: untrusted text (the template escapes it, like everything it prints)."""

    reason: str
    source: str
    id: str
    text: str
    chars: int
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def cut(self) -> bool:
        return self.chars > len(self.text)

    @property
    def empty(self) -> bool:
        return not self.text.strip()


def _strings(col: Any) -> list[str]:
    """A string column as Python strings, never failing on invalid UTF-8 (replaced)."""
    import pyarrow as pa

    try:
        return ["" if v is None else str(v) for v in col.to_pylist()]
    except UnicodeDecodeError:
        raw = col.cast(pa.large_binary())
        return ["" if b is None else b.decode("utf-8", "replace") for b in raw.to_pylist()]


def _shown(v: Any) -> str:
    return (f"{v:.3f}" if isinstance(v, float) else str(v))[:120]


def rejected_samples(s: Stage, per_reason: int = 2, max_chars: int = SAMPLE_CHARS) -> list[Sample]:
    """A few rejected documents per reason (most frequent reasons first), from as many sources as possible.

    A first pass reads only the ``reason`` and ``source`` columns (row group by row group) to
    choose rows: per reason, the first document of each source, up to ``per_reason``, topped up
    with further documents of the same sources. Only the chosen row groups' text is read.
    """
    import pyarrow.parquet as pq

    d = s.rejected_dir
    if d is None or per_reason <= 0:
        return []
    files = sorted(d.glob("part-*.parquet"))[:MAX_SAMPLE_FILES]
    order = [r for r, _ in rejected_reasons(s)]
    wanted = order[:MAX_SAMPLE_REASONS]
    open_reasons = not wanted  # no stats: take whatever reasons come
    first: dict[str, list[tuple[int, int, int]]] = {}  # reason -> (file, row group, row), one per source
    more: dict[str, list[tuple[int, int, int]]] = {}
    seen: dict[str, set[str]] = {}
    files_ok: dict[int, pq.ParquetFile] = {}

    def done() -> bool:
        return bool(wanted) and not open_reasons and all(len(first.get(r, ())) >= per_reason for r in wanted)

    for fi, f in enumerate(files):
        if done():
            break
        try:
            pf = pq.ParquetFile(f if isinstance(f, Path) else f.open("rb"))
        except Exception as exc:  # noqa: BLE001 - a broken sample file must not stop the report
            log.warning("report: cannot read %s (%s); no samples from it", f, exc)
            continue
        names = pf.schema_arrow.names
        if "reason" not in names or "text" not in names:
            continue
        files_ok[fi] = pf
        for rg in range(pf.num_row_groups):
            t = pf.read_row_group(rg, columns=[c for c in ("reason", "source") if c in names])
            reasons = _strings(t.column("reason"))
            sources = _strings(t.column("source")) if "source" in names else [""] * len(reasons)
            for i, (r, src) in enumerate(zip(reasons, sources)):
                if r not in wanted:
                    if not open_reasons or len(wanted) >= MAX_SAMPLE_REASONS:
                        continue
                    wanted.append(r)
                got = first.setdefault(r, [])
                if len(got) < per_reason and src not in seen.setdefault(r, set()):
                    seen[r].add(src)
                    got.append((fi, rg, i))
                elif len(got) + len(more.setdefault(r, [])) < per_reason:
                    more[r].append((fi, rg, i))
            if done():
                break
    chosen = {r: (first.get(r, []) + more.get(r, []))[:per_reason] for r in wanted}
    by_group: dict[tuple[int, int], list[int]] = {}
    for rows in chosen.values():
        for fi, rg, i in rows:
            by_group.setdefault((fi, rg), []).append(i)
    read: dict[tuple[int, int, int], Sample] = {}
    for (fi, rg), rows in sorted(by_group.items()):
        pf = files_ok[fi]
        names = pf.schema_arrow.names
        extra_cols = [c for c in EXTRA_COLUMNS if c in names]
        cols = ["reason", "text", *[c for c in ("id", "source") if c in names], *extra_cols]
        t = pf.read_row_group(rg, columns=cols).take(sorted(rows))
        texts = _strings(t.column("text"))
        rs = _strings(t.column("reason"))
        ids = _strings(t.column("id")) if "id" in cols else [""] * len(rows)
        srcs = _strings(t.column("source")) if "source" in cols else [""] * len(rows)
        extras = {c: t.column(c).to_pylist() for c in extra_cols}
        for k, i in enumerate(sorted(rows)):
            ex = {c: _shown(extras[c][k]) for c in extra_cols if extras[c][k] not in (None, "")}
            read[(fi, rg, i)] = Sample(rs[k], srcs[k], ids[k], texts[k][:max_chars], len(texts[k]), ex)
    ordered = [r for r in order if r in chosen] + sorted(r for r in chosen if r not in order)
    return [read[key] for r in ordered for key in chosen[r] if key in read]
