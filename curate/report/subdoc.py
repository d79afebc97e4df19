"""The report's "Repeated text" part: what the sub-document dedup stages (dedup lines, dedup substrings) cut, per source."""

from __future__ import annotations

from typing import Any

from curate.report.collect import Val
from curate.report.fmt import num, ratio

UNIT_KEYS = ("units", "tokens", "bytes")  # what a stage counted: lines or paragraphs, GPT-2 tokens, or bytes


def section_subdoc(run: Any) -> list[Any]:
    """One table per stage feeding ``subdoc``: per source, documents, documents changed, units seen and cut, bytes cut."""
    from curate.report.sections import Table, hint, note, slug

    found = [sec for sec in run.feeding("subdoc") if isinstance(sec.data, dict) and sec.data]
    if not found:
        return [note("No sub-document dedup in this run (no stage declares a subdoc section).")]
    out: list[Any] = []
    for sec in found:
        s = sec.stage
        rows = []
        unit = "units"
        for src, d in sorted(sec.data.items()):
            if not isinstance(d, dict):
                continue
            unit = next((k for k in UNIT_KEYS if k in d), unit)
            cut_key = "bytes_cut" if unit == "bytes" else f"{unit}_cut"
            rows.append([src, sec.val(src, "docs"), sec.val(src, "docs_changed"), sec.val(src, unit), sec.val(src, cut_key),
                         Val(ratio(d.get(cut_key, 0), d.get(unit, 0)), fmt="pct"), sec.val(src, "bytes_cut"),
                         Val(ratio(d.get("bytes_cut", 0), num(s.get("per_source", src, "bytes_in"))), fmt="pct")])  # fmt: skip
        what = "lines or paragraphs" if unit == "units" else unit
        out.append(hint(f"{s.label}: {what} cut out of the documents it kept, per source (rejected: {s.title}'s too_short)."))
        out.append(Table(f"subdoc-{slug(s.label)}", ["source", "docs", "docs changed", f"{what} seen", "cut", "share cut", "bytes cut",
                                                     "share of bytes"], rows))  # fmt: skip
    return out
