"""What each part of the page shows, as plain data for the template (no HTML here).

A part is a list of blocks (a chart, a table, a hint, a heading, a collapsible group). Table
cells are numbers with provenance (:class:`Val`: the template writes ``data-file``,
``data-key`` and ``data-value`` beside each), plain text, :class:`Tag` (text in a styled
span) or None (a dash). Each part reads the stages that feed its report sections
(:meth:`Run.feeding`) and the generic fields every record has; the contract of each section
(what its declared path holds) is in docs/report.md.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from curate.report import charts
from curate.report.charts import Chart, chart
from curate.report.collect import (
    Run,
    Section,
    Stage,
    Val,
    bucket_start,
    counts,
    first_stages,
    flatten,
    flow,
    rejected_reasons,
    removed,
)
from curate.report.fmt import fmt_int, fmt_value, num, ratio
from curate.report.samples import SAMPLE_CHARS, Sample, rejected_samples

#: The parts of the page: (id, heading).
SECTIONS = [
    ("warnings", "Warnings"),
    ("summary", "Overview"),
    ("funnel", "Funnel"),
    ("sources", "Per source"),
    ("languages", "Languages"),
    ("quality", "Quality scores"),
    ("filters", "Heuristic rules"),
    ("dedup", "Duplicates"),
    ("subdoc", "Repeated text"),
    ("decontam", "Decontamination"),
    ("tokens", "Tokens"),
    ("blend", "Blend"),
    ("rejected", "Rejected samples"),
    ("stages", "Stage details"),
]
#: The report sections a stage may declare that this page draws; others are listed in the stage's details.
DRAWN = {"languages", "language_scores", "quality", "quality_model", "rules", "lines", "dedup", "subdoc", "decontam", "decontam_index", "tokens",
         "blend"}  # fmt: skip


# --------------------------------------------------------------------------- blocks


@dataclass
class Tag:
    """Text shown in a span of a class (a stage name, a removal reason)."""

    text: str
    cls: str
    title: str | None = None


@dataclass
class Table:
    kind = "table"
    id: str
    head: list[str]
    rows: list[list[Any]]
    foot: list[Any] | None = None
    num_from: int = 1  # columns from here on are right-aligned numbers
    text_cols: tuple[int, ...] = ()  # ... except these

    def numeric(self, i: int) -> bool:
        return i >= self.num_from and i not in self.text_cols

    @property
    def wide(self) -> bool:
        return len(self.head) >= 6


@dataclass
class Figure:
    kind = "figure"
    chart: Chart


@dataclass
class Text:
    kind: str  # hint | note | heading
    text: str


@dataclass
class Group:
    """A collapsible group of blocks."""

    kind = "group"
    title: str
    muted: str
    blocks: list[Any]
    open: bool = False


@dataclass
class Card:
    title: str
    value: Val | None
    sub: str


@dataclass
class Cards:
    kind = "cards"
    cards: list[Card]


@dataclass
class SampleGroup:
    stage: Stage
    samples: list[Sample]


@dataclass
class Samples:
    kind = "samples"
    groups: list[SampleGroup]
    not_kept: list[str]  # stages whose rejected documents were not kept
    max_chars: int = SAMPLE_CHARS


@dataclass
class StageDetail:
    stage: Stage
    params: str
    counters: list[tuple[str, str]]
    sections: list[tuple[str, str, bool]]  # (section, path, drawn on this page)
    by_name: bool  # sections from the fallback by stage name (an older record)
    other: list[Table] = field(default_factory=list)  # declared sections this page does not draw


@dataclass
class Details:
    kind = "details"
    stages: list[StageDetail]


def hint(text: str) -> Text:
    return Text("hint", text)


def note(text: str) -> Text:
    return Text("note", text)


def heading(text: str) -> Text:
    return Text("heading", text)


def figure(c: Chart | None) -> list[Figure]:
    return [Figure(c)] if c is not None else []


def slug(x: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", x).strip("-") or "x"


def _reasons_text(rej: dict[str, Any]) -> str:
    return ", ".join(f"{r} {fmt_int(n)}" for r, n in sorted(rej.items(), key=lambda kv: -num(kv[1])))


# --------------------------------------------------------------------------- overview, funnel, sources


def _corpus_blends(run: Run) -> list[Section]:
    blends = run.feeding("blend")
    return [b for b in blends if b.beside("mode") != "megatron-args"] or blends


def section_summary(run: Run) -> list[Any]:
    firsts = first_stages(run)
    cards = [
        Card("Stages", Val(len(run.stages)), "in pipeline order below"),
        Card("Sources", Val(len(run.sources)), ""),
        Card("Documents in", Val(sum(num(s.get("docs_in")) for s in firsts)), " + ".join(f"{s.label} {fmt_int(s.get('docs_in'))}" for s in firsts)),
        Card("Bytes in", Val(sum(num(s.get("bytes_in")) for s in firsts), fmt="bytes"), "read by the first stages"),
    ]  # fmt: skip
    tokens = run.feeding("tokens")
    if tokens:
        t = tokens[-1]
        cards.append(Card("Documents tokenized", t.beside_val("documents"), t.stage.label))
        cards.append(Card("Tokens", t.beside_val("tokens"), t.stage.label))
    blends = _corpus_blends(run)
    if blends:
        b = blends[-1]
        cards.append(
            Card("Blend tokens", b.beside_val("tokens") or b.beside_val("total_tokens"), f"{b.stage.label}: {len(b.data or [])} sources")
        )
    out: list[Any] = [Cards(cards)]
    if run.unfinished:
        out.append(note("Not finished (no _SUCCESS), left out: " + ", ".join(str(p) for p in run.unfinished)))
    return out


def section_funnel(run: Run) -> list[Any]:
    rows = []
    for s in run.stages:
        f = flow(s)
        reasons = rejected_reasons(s)
        top = ", ".join(f"{r} {fmt_int(v.get('docs'))}" for r, v in reasons[:3]) + (
            f", +{len(reasons) - 3} more" if len(reasons) > 3 else ""
        )
        kept = ratio(f.docs_out, f.docs_in) if f.docs_out is not None else None
        reads = ", ".join(s.inputs) or ("—" if not s.input_paths else ", ".join(Path(p).name for p in s.input_paths[:3]))
        wall = s.val("wall_seconds", fmt="sec") if s.get("wall_seconds") is not None else None
        rows.append([Tag(s.label, "stage", str(s.path)), s.title, reads, f.docs_in, f.docs_out, Val(kept, fmt="pct") if kept is not None else None,
                     f.bytes_in, f.bytes_out, f.tokens_in, f.tokens_out, wall, Tag(top, "reasons") if top else ""])  # fmt: skip
    head = ["stage", "command", "reads", "docs in", "docs out", "kept", "bytes in", "bytes out", "tokens in", "tokens out", "wall",
            "top removal reasons"]  # fmt: skip
    out: list[Any] = [
        *figure(chart(charts.chart_funnel(run), "chart-funnel", "Documents and bytes into and out of each stage, with the reasons for removal",
                      "Each bar is what came out of the stage, followed by what it removed, per reason; the black tick marks what went in. "
                      "Bytes cut from kept documents: markup (extract), repaired characters (clean), cut passages (decontam).")),
        Table("funnel-table", head, rows, num_from=3, text_cols=(11,)),
    ]  # fmt: skip
    rrows = []
    for s in run.stages:
        din = num(s.get("docs_in"))
        for r, v in rejected_reasons(s):
            rrows.append([s.label, Tag(r, "reason"), s.val("rejected", r, "docs"), s.val("rejected", r, "bytes", fmt="bytes"),
                          Val(num(v.get("docs")) / din if din else None, fmt="pct")])  # fmt: skip
    if rrows:
        out += [
            heading("Removal reasons"),
            Table("reasons-table", ["stage", "reason", "docs", "bytes", "share of stage input"], rrows, num_from=2),
        ]
    return out


def section_sources(run: Run) -> list[Any]:
    sources = run.sources
    stages = run.doc_stages
    if not sources or not stages:
        return [note("No per-source counts in this run.")]
    tokens = run.feeding("tokens")[-1:]
    blends = [b for b in run.feeding("blend") if b.beside("mode") != "megatron-args"][-1:]
    rows = []
    for src in sources:
        first = next((s.val("per_source", src, "docs_in") for s in stages if src in s.per_source()), None)
        row: list[Any] = [src, first]
        row += [s.val("per_source", src, "docs_out") if src in s.per_source() else None for s in stages]
        for t in tokens:
            row.append(t.val(src, "tokens") if isinstance(t.data, dict) and isinstance(t.data.get(src), dict) else None)
        for b in blends:
            idx = next((i for i, r in enumerate(b.data or []) if isinstance(r, dict) and r.get("name") == src), None)
            row.append(b.val(idx, "tokens_taken") if idx is not None else None)
        rows.append(row)
    head = ["source", "docs in", *[s.label for s in stages], *(["tokens"] if tokens else []), *(["blend tokens"] if blends else [])]
    out: list[Any] = [
        *figure(chart(charts.chart_sources(stages, sources), "chart-sources", "Share of each source's documents kept after each stage")),
        hint("Documents out of each stage, per source (docs in: what the source brought into its first stage)."),
        Table("sources-table", head, rows),
    ]
    detail = []
    for s in stages:
        srows = []
        for src, d in sorted(s.per_source().items()):
            srows.append([src or "(none)", s.val("per_source", src, "docs_in"), s.val("per_source", src, "docs_out"),
                          Val(ratio(d.get("docs_out"), d.get("docs_in")), fmt="pct"), s.val("per_source", src, "bytes_in", fmt="bytes"),
                          s.val("per_source", src, "bytes_out", fmt="bytes"), Tag(_reasons_text(d.get("rejected") or {}), "reasons")])  # fmt: skip
        if srows:
            table = Table(f"per-source-{slug(s.label)}", ["source", "docs in", "docs out", "kept", "bytes in", "bytes out",
                                                           "removed (reason docs)"], srows, text_cols=(6,))  # fmt: skip
            detail.append(Group(s.label, s.title, [table]))
    if detail:
        out += [heading("Per stage and source"), *detail]
    return out


# --------------------------------------------------------------------------- declared sections


def section_languages(run: Run) -> list[Any]:
    found = run.feeding("languages")
    if not found:
        return [note("No language counts in this run (no stage declares a languages section).")]
    out: list[Any] = []
    for k, sec in enumerate(found):
        s = sec.stage
        total = counts(sec.data)
        if not total:
            out.append(note(f"{s.label} declares languages at {'.'.join(sec.path)}, which holds no counts."))
            continue
        scores_sec = s.section("language_scores")
        scores = counts(scores_sec.data) if scores_sec is not None else None
        if k == 0:
            out += figure(chart(charts.chart_languages(total, scores), "chart-languages", "Documents per language"))
        all_n = sum(total.values())
        rows = [
            [lg, sec.val(lg), Val(total[lg] / all_n if all_n else None, fmt="pct")] for lg in sorted(total, key=lambda x: (-total[x], x))
        ]
        tid = "languages-table" if k == 0 else f"languages-{slug(s.label)}"
        out.append(hint(f"From {s.label} ({s.title}): documents per detected language."))
        out.append(Table(tid, ["language", "docs", "share"], rows[:12]))
        if len(rows) > 12:
            out.append(Group(f"{len(rows) - 12} more languages", "", [Table(f"{tid}-more", ["language", "docs", "share"], rows[12:])]))
    return out


def _model_stage(run: Run, sec: Section) -> Section | None:
    """What a quality stage's ``quality_model`` names: metrics it holds, or the stage in this run that trained the model."""
    if isinstance(sec.data, dict):
        return sec
    if isinstance(sec.data, str):
        up = run.at(sec.data, sec.stage)
        model = up.section("quality_model") if up is not None else None
        if model is not None and isinstance(model.data, dict):
            return model
    return None


def section_quality(run: Run) -> list[Any]:
    scored = run.feeding("quality")
    models = [m for m in run.feeding("quality_model") if isinstance(m.data, dict)]
    if not scored and not models:
        return [note("No quality scores in this run (no stage declares a quality section).")]
    out: list[Any] = []
    hists = []
    used_by: dict[str, list[str]] = {}
    for sec in scored:
        s = sec.stage
        h_all = sec.data.get("all") if isinstance(sec.data, dict) else None
        h_kept = (sec.data.get("kept") if isinstance(sec.data, dict) else None) or {}
        if not isinstance(h_all, dict):
            out.append(note(f"{s.label} declares quality at {'.'.join(sec.path)}, which holds no histograms."))
            continue
        score_sum = sec.beside("score_sum") or {}
        rows = []
        for src in sorted(h_all):
            hist = h_all[src] if isinstance(h_all[src], dict) else {}
            n = sum(num(v) for v in hist.values())
            kept = sum(num(v) for v in (h_kept.get(src) or {}).values())
            mean = num(score_sum.get(src)) / n if n and isinstance(score_sum, dict) else None
            hists.append((src if len(scored) == 1 else f"{s.label}: {src}", hist, h_kept.get(src) or {}))
            rows.append([src, Val(n), Val(mean, fmt="float"), Val(kept), Val(kept / n if n else None, fmt="pct"),
                         *[sec.val("all", src, b) for b in sorted(hist, key=bucket_start)]])  # fmt: skip
        buckets = sorted({b for d in h_all.values() if isinstance(d, dict) for b in d}, key=bucket_start)
        p = s.get("params") or {}
        desc = f"{s.label}: mode {p.get('mode')}" if p.get("mode") else s.label
        desc += "".join(f", {k} {p[k]}" for k in ("threshold", "alpha") if k in p)
        out.append(hint(f"{desc}. Score buckets count every scored document; kept documents are the dark bars."))
        out.append(Table(f"quality-{slug(s.label)}", ["source", "scored", "mean score", "kept", "kept %", *buckets], rows))
        ref = s.section("quality_model")
        model = _model_stage(run, ref) if ref is not None else None
        if model is not None:
            used_by.setdefault(model.stage.label, []).append(s.label)
            if model.stage is not s and model not in models:
                models.append(model)
        elif ref is not None:
            out.append(hint(f"{s.label} scored with {ref.data} (not trained in this run: no metrics here)."))
    for m in models:
        v = m.data
        rows = [[k, m.val(k, fmt="float")] for k in ("precision", "recall", "f1", "roc_auc", "accuracy") if k in v]
        if not rows:
            continue
        kind = m.beside("valid_kind") or "held-out"
        users = used_by.get(m.stage.label)
        out.append(hint(f"Classifier {m.stage.label} ({m.stage.title}): {kind} metrics on {fmt_int(v.get('docs'))} documents "
                        f"(score ≥ {v.get('threshold', 0.5)})" + (f"; used by {', '.join(users)}." if users else ".")))  # fmt: skip
        out.append(Table(f"quality-model-{slug(m.stage.label)}", ["metric", "value"], rows))
    out[:0] = figure(chart(charts.chart_quality(hists), "chart-quality", "Quality-score histograms per source"))
    return out


def section_filters(run: Run) -> list[Any]:
    rules = run.feeding("rules")
    lines = run.feeding("lines")
    if not rules and not lines:
        return [note("No heuristic rule hits in this run (no stage declares a rules section).")]
    out: list[Any] = []
    allhits: list[tuple[str, str, int]] = []
    for sec in rules:
        s = sec.stage
        hits = [(rs, rule, sec.val(rs, rule)) for rs, d in (sec.data or {}).items() if isinstance(d, dict)
                for rule, n in d.items() if isinstance(n, (int, float))]  # fmt: skip
        hits.sort(key=lambda t: (-num(t[2].value), t[0], t[1]))
        checked = sec.beside("docs_checked")
        base_n, base = (checked, "docs checked") if checked else (s.get("docs_in"), "docs in")
        per = {src: removed(d) for src, d in s.per_source().items() if removed(d)}
        sources = sorted(per, key=lambda src: (-per[src], src))[:6]
        rows = []
        for rs, rule, v in hits:
            allhits.append((rs, rule, int(num(v.value))))
            row: list[Any] = [rs, rule, v, Val(ratio(v.value, base_n), fmt="pct")]
            reason = f"{rs}:{rule}"  # the filter's rejection reason for this rule
            row += [s.val("per_source", src, "rejected", reason) if reason in (s.get("per_source", src, "rejected") or {}) else None
                    for src in sources]  # fmt: skip
            rows.append(row)
        out.append(hint(f"{s.label}: {fmt_int(base_n)} {base}; a document counts under the first rule it fails"
                        + ("; per source: the sources with the most removals." if sources else ".")))  # fmt: skip
        out.append(Table(f"rules-{slug(s.label)}", ["rule set", "rule", "hits", f"share of {base}", *sources], rows, num_from=2))
    for sec in lines:
        rows = [[".".join(key), sec.val(*key)] for key, v in flatten(sec.data) if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if rows:
            out.append(hint(f"{sec.stage.label}: lines removed from documents it kept, per rule set and line rule."))
            out.append(Table(f"lines-{slug(sec.stage.label)}", ["rule set and rule", "lines"], rows))
    allhits.sort(key=lambda t: -t[2])
    out[:0] = figure(chart(charts.chart_rules(allhits), "chart-rules", "Heuristic rule hits"))
    return out


def section_dedup(run: Run) -> list[Any]:
    found = [sec for sec in run.feeding("dedup") if isinstance(sec.data, dict)]
    if not found:
        return [note("No deduplication in this run (no stage declares a dedup section).")]
    sources = [src for src in run.sources if any(src in sec.stage.per_source() for sec in found)]
    rows = []
    for sec in found:
        s, d = sec.stage, sec.data
        how = ", ".join(f"{k} {d[k]}" for k in ("threshold", "bands", "rows", "verify") if k in d)
        gone = sum(num(v.get("docs")) for _, v in rejected_reasons(s))
        rows.append([s.label, f"{s.title}: {how}" if how else s.title, s.val("docs_in"), sec.val("clusters"), Val(gone),
                     Val(ratio(gone, s.get("docs_in")), fmt="pct")])  # fmt: skip
    sizes = [(sec.stage.label, counts(sec.data.get("cluster_sizes")) or {}) for sec in found]
    shares = [(sec.stage.label, {src: 100 * removed(d) / num(d.get("docs_in")) for src, d in sec.stage.per_source().items() if num(d.get("docs_in"))})
              for sec in found]  # fmt: skip
    out: list[Any] = [
        *figure(chart(charts.chart_dedup(sizes, shares, sources), "chart-dedup", "Duplicate cluster sizes and share removed per source")),
        Table("dedup-table", ["stage", "method", "docs in", "clusters", "duplicates removed", "removed"], rows, num_from=2),
    ]
    keys = sorted({k for _, cs in sizes for k in cs}, key=bucket_start)
    srows = [[sec.stage.label, *[sec.val("cluster_sizes", k) if k in cs else Val(0) for k in keys]] for sec, (_, cs) in zip(found, sizes)]
    out += [heading("Clusters by size (documents per cluster)"), Table("dedup-sizes", ["stage", *keys], srows)]
    prow = []
    for src in sources:
        row: list[Any] = [src]
        for sec in found:
            s = sec.stage
            d = s.per_source().get(src)
            if d is None:
                row += [None, None, None]
                continue
            rej = d.get("rejected") or {}
            rv = s.val("per_source", src, "rejected", next(iter(rej))) if len(rej) == 1 else Val(removed(d))
            row += [s.val("per_source", src, "docs_in"), rv, Val(ratio(removed(d), d.get("docs_in")), fmt="pct")]
        prow.append(row)
    head = ["source"] + [h for sec in found for h in (f"{sec.stage.label} docs in", "removed", "share")]
    out += [heading("Share removed per source"), Table("dedup-per-source", head, prow)]
    return out


DECONTAM_KEYS = ["matches", "docs_contaminated", "pieces_kept", "pieces_dropped", "docs_dropped", "chars_removed"]


def section_decontam(run: Run) -> list[Any]:
    found = [sec for sec in run.feeding("decontam") if isinstance(sec.data, dict)]
    if not found:
        return [note("No decontamination in this run (no stage declares a decontam section).")]
    out: list[Any] = []
    chart_sets: list[tuple[str, dict[str, Any]]] = []
    for sec in found:
        s = sec.stage
        index = s.section("decontam_index")
        idx = (index.data.get("index") or {}) if index is not None and isinstance(index.data, dict) else {}
        per_set = idx.get("per_set") or {}
        names = [str(n) for n in idx.get("sets") or []] + sorted(n for n in sec.data if n not in (idx.get("sets") or []))
        rows = []
        for name in names:
            c = sec.data.get(name) or {}
            chart_sets.append((name if len(found) == 1 else f"{s.label}: {name}", c))
            has = isinstance(per_set.get(name), dict)
            rows.append([name, index.val("index", "per_set", name, "items") if has and index else None,
                         index.val("index", "per_set", name, "ngrams") if has and index else None,
                         *[sec.val(name, k) if k in c else Val(0) for k in DECONTAM_KEYS]])  # fmt: skip
        tot = sec.beside("decontam")
        foot = [
            "all sets",
            None,
            None,
            *[s.val(*sec.path[:-1], "decontam", k) if isinstance(tot, dict) and k in tot else None for k in DECONTAM_KEYS],
        ]
        p = s.get("params") or {}
        said = [f"{p['ngram']}-grams" if "ngram" in p else "", f"each match cut with {p['cut_chars']} characters each side" if "cut_chars" in p else "",
                f"pieces under {p['min_piece_chars']} characters dropped" if "min_piece_chars" in p else "",
                f"documents in more than {p['max_pieces']} pieces dropped" if "max_pieces" in p else ""]  # fmt: skip
        if any(said):
            out.append(hint(f"{s.label}: " + "; ".join(x for x in said if x) + "."))
        out.append(Table(f"decontam-{slug(s.label)}", ["evaluation set", "items", "n-grams", "matches", "docs contaminated", "pieces kept",
                                                        "pieces dropped", "docs dropped", "chars removed"], rows, foot=foot))  # fmt: skip
    out[:0] = figure(chart(charts.chart_decontam(chart_sets), "chart-decontam", "Decontamination hits per evaluation set"))
    return out


def section_tokens(run: Run) -> list[Any]:
    found = [sec for sec in run.feeding("tokens") if isinstance(sec.data, dict)]
    if not found:
        return [note("No tokenized output in this run (no stage declares a tokens section).")]
    out: list[Any] = []
    for sec in found:
        s = sec.stage
        tok = sec.beside("tokenizer") or {}
        eod = sec.beside("append_eod")
        out.append(hint(f"{s.label}: tokenizer {tok.get('name', '?')} (vocabulary {fmt_int(tok.get('vocab_size'))}), "
                        f"{sec.beside('dtype') or '?'} tokens" + ("" if eod is None else f", end-of-document token {'on' if eod else 'off'}") + "."))  # fmt: skip
        rows = []
        for src in sorted(sec.data):
            d = sec.data[src]
            if isinstance(d, dict):
                rows.append([src, sec.val(src, "documents"), sec.val(src, "bytes", fmt="bytes"), sec.val(src, "tokens"),
                             Val(ratio(d.get("bytes"), d.get("tokens")), fmt="float")])  # fmt: skip
        foot = ["total", sec.beside_val("documents"), sec.beside_val("bytes", "bytes"), sec.beside_val("tokens"),
                Val(ratio(sec.beside("bytes"), sec.beside("tokens")), fmt="float")]  # fmt: skip
        out.append(Table(f"tokens-{slug(s.label)}", ["source", "documents", "text", "tokens", "bytes per token"], rows, foot=foot))
    return out


def section_blend(run: Run) -> list[Any]:
    found = [sec for sec in run.feeding("blend") if isinstance(sec.data, list) and sec.data]
    if not found:
        return [note("No blend in this run (no stage declares a blend section).")]
    corpus = [b for b in found if b.beside("mode") != "megatron-args"] or found
    out: list[Any] = figure(chart(charts.chart_blend([r for r in corpus[-1].data if isinstance(r, dict)]), "chart-blend",
                                  "The blend: weight, epochs and tokens per source"))  # fmt: skip
    for sec in found:
        s = sec.stage
        megatron = sec.beside("mode") == "megatron-args"
        rws = [r if isinstance(r, dict) else {} for r in sec.data]
        rows = [[r.get("name"), sec.val(i, "documents"), sec.val(i, "tokens_available"), sec.val(i, "weight", fmt="weight"),
                 sec.val(i, "epochs", fmt="epochs"), sec.val(i, "tokens_taken"), None if megatron else sec.val(i, "docs_taken")]
                for i, r in enumerate(rws)]  # fmt: skip
        avail = sum(num(r.get("tokens_available")) for r in rws)
        taken = sum(num(r.get("tokens_taken")) for r in rws)
        foot = ["total", Val(sum(num(r.get("documents")) for r in rws)), Val(avail), Val(sum(num(r.get("weight")) for r in rws), fmt="weight"),
                Val(taken / avail if avail else None, fmt="epochs"), Val(taken),
                None if megatron else Val(sum(num(r.get("docs_taken")) for r in rws))]  # fmt: skip
        what = (f"{s.label}: weights for Megatron's --data-path (train-time blending)" if megatron
                else f"{s.label}: a shuffled corpus of {fmt_int(sec.beside('documents'))} documents, seed {sec.beside('seed')}")  # fmt: skip
        skipped = sec.beside("skipped_sources") or []
        left_out = f" Left out (no documents found): {', '.join(map(str, skipped))}." if skipped else ""
        out.append(hint(f"{what}. As in the MT-NLG dataset table: weight is the share of the blend's tokens, epochs the passes over "
                        f"the source.{left_out}"))  # fmt: skip
        out.append(Table(f"blend-{slug(s.label)}", ["dataset", "documents", "tokens available", "weight", "epochs", "tokens taken", "docs taken"],
                         rows, foot=foot))  # fmt: skip
    return out


# --------------------------------------------------------------------------- samples and stage details


def section_samples(run: Run, per_reason: int) -> list[Any]:
    groups, not_kept = [], []
    for s in run.stages:
        if not rejected_reasons(s) and s.rejected_dir is None:
            continue
        samples = rejected_samples(s, per_reason)
        if samples:
            groups.append(SampleGroup(s, samples))
        elif s.rejected_dir is None and rejected_reasons(s):
            not_kept.append(s.label)
    if not groups and not not_kept:
        return [note("No rejected documents in this run.")]
    return [Samples(groups, not_kept)]


def section_stages(run: Run) -> list[Any]:
    out = []
    for s in run.stages:
        params = json.dumps(s.get("params") or {}, indent=1, sort_keys=True, default=str)
        counters = [(".".join(k), fmt_value(v)) for k, v in flatten(s.get("counters") or {})[:200]]
        other = []
        for name, path in s.sections.items():
            sec = s.section(name)
            if name in DRAWN or sec is None:
                continue
            rows = [[".".join(k) or name, sec.val(*k) if isinstance(v, (int, float)) and not isinstance(v, bool) else fmt_value(v)]
                    for k, v in flatten(sec.data)[:200]]  # fmt: skip
            other.append(Table(f"section-{slug(name)}-{slug(s.label)}", [name, path], rows))
        sections = [(name, path, name in DRAWN) for name, path in s.sections.items()]
        out.append(StageDetail(s, params, counters, sections, by_name=bool(sections) and not s.declared, other=other))
    return [Details(out)]


def build(run: Run, samples: int) -> dict[str, list[Any]]:
    """Every part of the page but the warnings, by id."""
    from curate.report.subdoc import section_subdoc

    return {
        "summary": section_summary(run),
        "funnel": section_funnel(run),
        "sources": section_sources(run),
        "languages": section_languages(run),
        "quality": section_quality(run),
        "filters": section_filters(run),
        "dedup": section_dedup(run),
        "subdoc": section_subdoc(run),
        "decontam": section_decontam(run),
        "tokens": section_tokens(run),
        "blend": section_blend(run),
        "rejected": section_samples(run, samples),
        "stages": section_stages(run),
    }
