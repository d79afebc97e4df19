"""``curate stats DIR``: one stage's summary for the terminal, from its record alone."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from curate.report.collect import Stage, bucket_start, counts, one_stage, rejected_reasons, removed
from curate.report.fmt import fmt_bytes, fmt_int, fmt_pct, fmt_value, num, ratio
from curate.storage import as_path


def text_table(head: Sequence[str], rows: Sequence[Sequence[Any]], foot: Sequence[Any] | None = None, left: int = 1) -> list[str]:
    """Plain-text table with aligned columns: the first ``left`` columns left-aligned, the rest right-aligned."""
    cells = [[str(c) for c in r] for r in [head, *rows, *([foot] if foot else [])]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(head))]

    def line(r: list[str]) -> str:
        return "  ".join(c.ljust(widths[i]) if i < left else c.rjust(widths[i]) for i, c in enumerate(r)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    out = [line(cells[0]), rule, *(line(r) for r in cells[1 : 1 + len(rows)])]
    if foot:
        out += [rule, line(cells[-1])]
    return out


def _flow_lines(s: Stage) -> list[str]:
    r = s.record
    rows = []
    for src, d in sorted(s.per_source().items()):
        rows.append([src or "(none)", fmt_int(d.get("docs_in")), fmt_int(d.get("docs_out")), fmt_pct(ratio(d.get("docs_out"), d.get("docs_in"))),
                     fmt_bytes(d.get("bytes_in")), fmt_bytes(d.get("bytes_out")), fmt_int(removed(d))])  # fmt: skip
    reasons = rejected_reasons(s)
    gone = sum(num(v.get("docs")) for _, v in reasons)
    foot = ["total", fmt_int(r.get("docs_in")), fmt_int(r.get("docs_out")), fmt_pct(ratio(r.get("docs_out"), r.get("docs_in"))),
            fmt_bytes(r.get("bytes_in")), fmt_bytes(r.get("bytes_out")), fmt_int(gone)]  # fmt: skip
    lines = text_table(["source", "docs in", "docs out", "kept", "bytes in", "bytes out", "rejected"], rows, foot)
    if reasons:
        din = num(r.get("docs_in"))
        rrows = [[reason, fmt_int(v.get("docs")), fmt_bytes(v.get("bytes")), fmt_pct(num(v.get("docs")) / din if din else None)]
                 for reason, v in reasons]  # fmt: skip
        lines += ["", *text_table(["rejected: reason", "docs", "bytes", "of input"], rrows)]
        srcs = sorted(src for src, d in s.per_source().items() if d.get("rejected"))
        if len(reasons) > 1 and 1 < len(srcs) <= 8:
            per = s.per_source()
            mrows = [[reason, *[fmt_int((per[src].get("rejected") or {}).get(reason, 0)) for src in srcs]] for reason, _ in reasons]
            lines += ["", *text_table(["rejected per source", *srcs], mrows)]
    return lines


def section_lines(s: Stage) -> list[str]:
    """Tables of the report sections a stage feeds that its own summary lines do not print."""
    out: list[str] = []
    langs = s.section("languages")
    total = counts(langs.data) if langs is not None else None
    if total:
        n = sum(total.values())
        rows = [[lg, fmt_int(c), fmt_pct(c / n if n else None)] for lg, c in sorted(total.items(), key=lambda kv: -kv[1])[:20]]
        out += ["", *text_table(["language", "docs", "share"], rows)]
    rules = s.section("rules")
    if rules is not None and isinstance(rules.data, dict):
        hits = sorted(
            ((rs, rule, n) for rs, d in rules.data.items() if isinstance(d, dict) for rule, n in d.items()), key=lambda t: -num(t[2])
        )
        if hits:
            out += ["", *text_table(["rule set", "rule", "hits"], [[rs, rule, fmt_int(n)] for rs, rule, n in hits], left=2)]
    dedup = s.section("dedup")
    if dedup is not None and isinstance(dedup.data, dict):
        d = dedup.data
        sizes = ", ".join(
            f"{k}: {fmt_int(v)}" for k, v in sorted((d.get("cluster_sizes") or {}).items(), key=lambda kv: bucket_start(kv[0]))
        )
        line = f"dedup: {fmt_int(d.get('clusters'))} clusters; sizes {sizes or 'none'}"
        line += "".join(f", {k} {d[k]}" for k in ("threshold", "bands", "rows", "verify") if k in d)
        out += ["", line]
    return out


def counter_lines(counters: dict[str, Any], width: int = 100) -> list[str]:
    """Counters as aligned ``key  value`` lines; a mapping of more than 6 numbers (a histogram) is one wrapped line."""
    items: list[tuple[str, str]] = []

    def walk(d: dict[str, Any], prefix: str) -> None:
        for k, v in d.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, dict) and v:
                if len(v) > 6 and counts(v):
                    numeric = all(bucket_start(x) != math.inf for x in v)
                    ordered = sorted(v.items(), key=(lambda kv: bucket_start(kv[0])) if numeric else (lambda kv: (-kv[1], kv[0])))
                    items.append((key, "  ".join(f"{a} {fmt_value(b)}" for a, b in ordered)))
                else:
                    walk(v, key)
            else:
                items.append((key, fmt_value(v)))

    walk(counters, "")
    if not items:
        return []
    w = min(40, max(len(k) for k, _ in items))
    out = []
    pad = " " * (w + 4)
    for k, v in items:
        chunks, line = [], ""
        for word in v.split("  "):
            if line and len(pad) + len(line) + len(word) + 2 > width:
                chunks.append(line)
                line = word
            else:
                line = f"{line}  {word}" if line else word
        chunks.append(line)
        out.append(f"  {k.ljust(w)}  {chunks[0]}")
        out.extend(pad + c for c in chunks[1:])
    return out


def stats_lines(path: str | os.PathLike) -> list[str]:
    """The summary of one stage for the terminal: per-source flow, removal reasons, what it printed, its sections, counters."""
    s = one_stage(path)
    r = s.record
    wall = f", {r['wall_seconds']:.1f} s wall" if isinstance(r.get("wall_seconds"), (int, float)) else ""
    cpu = f", {r['cpu_seconds']:.1f} s CPU" if isinstance(r.get("cpu_seconds"), (int, float)) else ""
    shards = f", {r['shards']} shards" if r.get("shards") else ""
    lines = [f"{s.name}: {s.path}{shards}{wall}{cpu}"]
    if s.input_paths:
        parents = {str(as_path(x).parent) for x in s.input_paths}
        many = len(s.input_paths) > 3 and len(parents) == 1
        lines.append(f"  reads: {next(iter(parents))}/ ({len(s.input_paths)} prefixes)" if many else f"  reads: {', '.join(s.input_paths)}")
    lines.append("")
    if s.has_docs:
        lines += _flow_lines(s)
    own = s.summary[2:] if s.has_docs else s.summary  # a stage with documents starts with the summary and output lines
    if own:
        lines += ["", *own] if s.has_docs else own
    lines += section_lines(s)
    counters = counter_lines(r.get("counters") or {})
    if counters:
        lines += ["", "counters:", *counters[:80]]
        if len(counters) > 80:
            lines.append(f"  ... {len(counters) - 80} more lines (see {s.stats_file})")
    return lines
