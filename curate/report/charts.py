"""The charts: matplotlib (Agg) figures as inline base64 PNG, drawn from numbers the sections prepared."""

from __future__ import annotations

import base64
import io
import math
from dataclasses import dataclass
from typing import Any

from curate.report.collect import Run, Stage, bucket_start, rejected_reasons
from curate.report.fmt import fmt_bytes, fmt_count, fmt_int, fmt_short, num

CHART_DPI = 150
CHART_DISPLAY = 0.68  # CSS px per PNG px: an 11-inch figure fills the page width
PALETTE = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#EECA3B", "#B279A2", "#FF9DA6", "#9D755D", "#BAB0AC"]
REASON_COLORS = ["#E45756", "#F58518", "#EECA3B", "#B279A2", "#FF9DA6", "#9D755D", "#72B7B2", "#D67195", "#F2CF5B", "#8CD17D", "#B6992D"]
KEPT = "#4C78A8"
TRIMMED = "cut from kept documents"
KEPT_LIGHT = "#BFD3E6"
OTHER = "#BAB0AC"


@dataclass
class Chart:
    """An inline PNG chart: shown at the same density as every other chart (so fonts match)."""

    id: str
    png: str  # base64
    alt: str
    caption: str = ""

    @property
    def width(self) -> int | None:
        raw = base64.b64decode(self.png[:44])
        return round(int.from_bytes(raw[16:20], "big") * CHART_DISPLAY) if raw[:8] == b"\x89PNG\r\n\x1a\n" else None


def chart(png: str | None, cid: str, alt: str, caption: str = "") -> Chart | None:
    return Chart(cid, png, alt, caption) if png else None


def _mpl() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "font.family": "DejaVu Sans",
            "font.size": 9,
            "axes.titlesize": 10,
            "axes.titleweight": "bold",
            "axes.titlelocation": "left",
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.edgecolor": "#9aa5b1",
            "axes.labelcolor": "#3e4c59",
            "xtick.color": "#3e4c59",
            "ytick.color": "#3e4c59",
            "axes.grid": False,
            "grid.color": "#e4e7eb",
            "legend.frameon": False,
            "svg.hashsalt": "curate",
        }
    )
    return plt


def _png(fig: Any) -> str:
    plt = _mpl()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=CHART_DPI, bbox_inches="tight", facecolor="white", metadata={"Software": None})
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _reason_colors(run: Run) -> dict[str, str]:
    totals: dict[str, int] = {}
    for s in run.stages:
        for r, v in rejected_reasons(s):
            totals[r] = totals.get(r, 0) + int(num(v.get("docs")))
    ordered = sorted(totals, key=lambda r: (-totals[r], r))
    return {r: REASON_COLORS[i] if i < len(REASON_COLORS) else OTHER for i, r in enumerate(ordered)}


def chart_funnel(run: Run) -> str | None:
    """Documents and bytes per stage: kept, removed per reason, and text trimmed (bytes)."""
    stages = run.doc_stages
    if not stages:
        return None
    plt = _mpl()
    colors = _reason_colors(run)
    n = len(stages)
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.5 * n + 1.5), sharey=True, layout="constrained")
    y = list(range(n))
    used: dict[str, str] = {}
    for ax, what in zip(axes, ("docs", "bytes")):
        scale = 1.0 if what == "docs" else 1e6
        xmax = 0.0
        for i, s in enumerate(stages):
            kept = num(s.get(f"{what}_out")) / scale
            ax.barh(i, kept, color=KEPT, height=0.62, label="kept" if i == 0 else None)
            left = kept
            gone = 0.0
            for r, v in rejected_reasons(s):
                w = num(v.get(what)) / scale
                if w <= 0:
                    continue
                c = colors.get(r, OTHER)
                name = r if c != OTHER else "other reasons"
                ax.barh(i, w, left=left, color=c, height=0.62, label=None if name in used else name)
                used[name] = c
                left += w
                gone += w
            if what == "bytes":
                trimmed = (num(s.get("bytes_in")) - num(s.get("bytes_out"))) / scale - gone
                if trimmed > 1e-9:
                    ax.barh(i, trimmed, left=left, color="white", edgecolor="#9aa5b1", hatch="////", linewidth=0.6, height=0.62,
                            label=None if TRIMMED in used else TRIMMED)  # fmt: skip
                    used[TRIMMED] = "hatch"
                    left += trimmed
            din = num(s.get(f"{what}_in")) / scale
            ax.plot([din, din], [i - 0.38, i + 0.38], color="#1f2933", linewidth=1.2)
            pct = f" ({100 * kept / din:.0f}%)" if din else ""
            text = f"{fmt_count(din)} → {fmt_count(kept)}" if what == "docs" else f"{fmt_bytes(din * scale)} → {fmt_bytes(kept * scale)}"
            ax.text(max(left, din), i, f"  {text}{pct}", va="center", fontsize=8, color="#3e4c59")
            xmax = max(xmax, left, din)
        ax.set_xlim(0, xmax * 1.42 if xmax else 1)
        ax.set_yticks(y, [s.label for s in stages])
        ax.set_title("Documents" if what == "docs" else "Bytes of text (MB)")
        ax.grid(axis="x")
        ax.set_axisbelow(True)
        ax.tick_params(axis="y", length=0)
    axes[0].invert_yaxis()  # shared: once for both
    handles, names = [], []
    for ax in axes:
        for h, nm in zip(*ax.get_legend_handles_labels()):
            if nm not in names:
                handles.append(h)
                names.append(nm)
    fig.legend(handles, names, loc="outside lower center", ncol=min(7, len(names)), fontsize=8)
    return _png(fig)


def chart_sources(stages: list[Stage], sources: list[str]) -> str | None:
    """Heatmap: share of each source's documents still present after each stage."""
    if not stages or not sources:
        return None
    import numpy as np

    plt = _mpl()
    grid = np.full((len(sources), len(stages)), np.nan)
    first: dict[str, float] = {}
    for j, s in enumerate(stages):
        per = s.per_source()
        for i, src in enumerate(sources):
            d = per.get(src)
            if d is None:
                continue
            if src not in first:
                first[src] = num(d.get("docs_in"))
            if first[src]:
                grid[i, j] = num(d.get("docs_out")) / first[src]
    fig, ax = plt.subplots(figsize=(min(11, max(6.0, 1.6 + 1.05 * len(stages))), 0.34 * len(sources) + 1.3))
    cmap = plt.get_cmap("YlGnBu").with_extremes(bad="#f5f7fa")
    ax.imshow(np.ma.masked_invalid(grid), aspect="auto", cmap=cmap, vmin=0, vmax=1.2)
    for i in range(len(sources)):
        for j in range(len(stages)):
            v = grid[i, j]
            if not np.isnan(v):
                ax.text(j, i, f"{100 * v:.0f}%", ha="center", va="center", fontsize=7.5, color="white" if v > 0.75 else "#1f2933")
    ax.set_xticks(range(len(stages)), [s.label for s in stages], rotation=30, ha="right")
    ax.set_yticks(range(len(sources)), sources)
    ax.tick_params(length=0)
    for sp in ax.spines.values():
        sp.set_visible(False)
    ax.set_title("Documents kept, as a share of what the source brought into the pipeline")
    fig.tight_layout()
    return _png(fig)


def chart_languages(total: dict[str, int], scores: dict[str, Any] | None = None, top: int = 12) -> str | None:
    """Documents per language, and the language-ID score histogram."""
    if not total:
        return None
    plt = _mpl()
    langs = sorted(total, key=lambda k: (-total[k], k))
    shown, rest = langs[:top], langs[top:]
    names = shown + (["other"] if rest else [])
    height = 0.24 * len(names) + 1.3
    if scores:
        fig, (ax, a2) = plt.subplots(1, 2, figsize=(11, max(2.6, height)), gridspec_kw={"width_ratios": [3, 2]})
    else:
        fig, ax = plt.subplots(figsize=(11, height))
    vals = [total[lg] for lg in shown] + ([sum(total[lg] for lg in rest)] if rest else [])
    ax.barh(range(len(names)), vals, color=KEPT, height=0.65)
    all_n = sum(total.values()) or 1
    for i, n in enumerate(vals):
        ax.text(n, i, f"  {n:,} ({100 * n / all_n:.1f}%)", va="center", fontsize=8, color="#3e4c59")
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlim(0, (max(total.values()) or 1) * 1.3)
    ax.set_title("Documents per language")
    ax.grid(axis="x")
    ax.set_axisbelow(True)
    if scores:
        keys = sorted(scores, key=bucket_start)
        x = [bucket_start(k) for k in keys]
        width = (x[1] - x[0]) * 0.9 if len(x) > 1 else 0.09
        a2.bar(x, [num(scores[k]) for k in keys], width=width, align="edge", color=PALETTE[4])
        a2.set_xlim(0, 1)
        a2.set_yscale("symlog", linthresh=1)
        a2.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: fmt_count(v)))
        a2.set_xlabel("score of the detected language", fontsize=8)
        a2.set_title("Language-ID confidence")
        a2.grid(axis="y")
        a2.set_axisbelow(True)
    fig.tight_layout()
    return _png(fig)


def chart_quality(hists: list[tuple[str, dict[str, float], dict[str, float]]]) -> str | None:
    """Small multiples: score histogram (scored, kept) per source."""
    if not hists:
        return None
    plt = _mpl()
    ncols = min(3, len(hists))
    nrows = math.ceil(len(hists) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(11, 2.5 * nrows + 0.5), squeeze=False)
    for k, (title, h_all, h_kept) in enumerate(hists):
        ax = axes[k // ncols][k % ncols]
        keys = sorted(h_all, key=bucket_start)
        x = [bucket_start(b) for b in keys]
        width = (x[1] - x[0]) * 0.9 if len(x) > 1 else 0.09
        ax.bar(x, [num(h_all[b]) for b in keys], width=width, align="edge", color=KEPT_LIGHT, label="scored")
        ax.bar(x, [num(h_kept.get(b, 0)) for b in keys], width=width, align="edge", color=KEPT, label="kept")
        ax.set_title(title, fontsize=9)
        ax.set_xlim(0, 1)
        ax.set_yscale("symlog", linthresh=1)
        ax.set_ylim(0, max([1.0, *(num(v) for v in h_all.values())]) * 1.6)
        ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: fmt_short(v)))
        ax.set_xlabel("quality score", fontsize=8)
        ax.grid(axis="y")
        ax.set_axisbelow(True)
        if k == 0:
            ax.legend(fontsize=8)
    for k in range(len(hists), nrows * ncols):
        axes[k // ncols][k % ncols].axis("off")
    fig.tight_layout()
    return _png(fig)


def chart_rules(hits: list[tuple[str, str, int]], top: int = 25) -> str | None:
    """Documents rejected by each rule, coloured by rule set."""
    hits = [h for h in hits if h[2] > 0][:top]
    if not hits:
        return None
    plt = _mpl()
    sets = sorted({h[0] for h in hits})
    color = {rs: PALETTE[i % len(PALETTE)] for i, rs in enumerate(sets)}
    fig, ax = plt.subplots(figsize=(11, 0.24 * len(hits) + 1.2))
    for i, (rs, _rule, n) in enumerate(hits):
        ax.barh(i, n, color=color[rs], height=0.65, label=rs if rs not in ax.get_legend_handles_labels()[1] else None)
        ax.text(n, i, f"  {n:,}", va="center", fontsize=8, color="#3e4c59")
    ax.set_yticks(range(len(hits)), [f"{rs}: {rule}" for rs, rule, _ in hits])
    ax.invert_yaxis()
    ax.set_xlim(0, max(h[2] for h in hits) * 1.18)
    ax.set_title("Documents rejected by each rule (first failing rule)")
    ax.grid(axis="x")
    ax.set_axisbelow(True)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return _png(fig)


def chart_dedup(sizes: list[tuple[str, dict[str, int]]], shares: list[tuple[str, dict[str, float]]], sources: list[str]) -> str | None:
    """Cluster sizes per dedup stage, and the share of each source's documents (percent) it removed."""
    if not sizes:
        return None
    plt = _mpl()
    n = len(sizes)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, max(2.8, 0.17 * len(sources) * n + 1.4)))
    keys = sorted({k for _, cs in sizes for k in cs}, key=bucket_start)
    w = 0.8 / n
    for k, (label, cs) in enumerate(sizes):
        xs = [i + k * w for i in range(len(keys))]
        vals = [cs.get(b, 0) for b in keys]
        a1.bar(xs, vals, width=w, color=PALETTE[k % len(PALETTE)], label=label)
        for x, v in zip(xs, vals):
            if v:
                a1.text(x, v, f"{v:,}", ha="center", va="bottom", fontsize=7.5, color="#3e4c59")
    a1.set_xticks([i + 0.4 - w / 2 for i in range(len(keys))], keys)
    a1.set_xlabel("documents in the cluster")
    a1.set_title("Duplicate clusters by size")
    if any(any(cs.values()) for _, cs in sizes):
        a1.set_yscale("log")
        a1.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: fmt_count(v)))
        a1.set_ylim(0.7, None)
    a1.legend(fontsize=8, loc="upper right")
    h = 0.8 / max(1, len(shares))
    for k, (label, per) in enumerate(shares):
        vals = [per.get(src, 0.0) for src in sources]
        ys = [i + k * h for i in range(len(sources))]
        a2.barh(ys, vals, height=h, color=PALETTE[k % len(PALETTE)], label=label)
        for yy, v in zip(ys, vals):
            if v:
                a2.text(v, yy, f" {v:.1f}%", va="center", fontsize=7.5, color="#3e4c59")
    a2.set_yticks([i + 0.4 - h / 2 for i in range(len(sources))], sources)
    a2.invert_yaxis()
    a2.set_xlabel("% of the source's documents removed")
    a2.set_title("Share removed per source")
    a2.grid(axis="x")
    a2.set_axisbelow(True)
    a2.set_xlim(0, max(1.0, a2.get_xlim()[1] * 1.15))
    fig.tight_layout()
    return _png(fig)


def chart_decontam(sets: list[tuple[str, dict[str, Any]]]) -> str | None:
    """Documents contaminated, n-gram matches and characters removed per evaluation set."""
    if not sets:
        return None
    plt = _mpl()
    fig, axes = plt.subplots(1, 3, figsize=(11, 0.45 * len(sets) + 1.6), sharey=True)
    for ax, (key, title) in zip(
        axes, (("docs_contaminated", "Documents contaminated"), ("matches", "N-gram matches"), ("chars_removed", "Characters removed"))
    ):
        vals = [num(d.get(key)) for _, d in sets]
        ax.barh(range(len(sets)), vals, color=PALETTE[3] if key == "docs_contaminated" else PALETTE[1], height=0.6)
        for i, v in enumerate(vals):
            ax.text(v, i, f"  {fmt_int(v)}", va="center", fontsize=8, color="#3e4c59")
        ax.set_title(title)
        ax.set_xlim(0, (max(vals) or 1) * 1.3)
        ax.grid(axis="x")
        ax.set_axisbelow(True)
    axes[0].set_yticks(range(len(sets)), [n for n, _ in sets])
    axes[0].invert_yaxis()
    fig.tight_layout()
    return _png(fig)


def chart_blend(rows: list[dict[str, Any]]) -> str | None:
    """Weight and epochs per source; tokens available and taken."""
    if not rows:
        return None
    plt = _mpl()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 0.36 * len(rows) + 1.4), sharey=True)
    w = [100 * num(r.get("weight")) for r in rows]
    a1.barh(range(len(rows)), w, color=KEPT, height=0.65)
    for i, r in enumerate(rows):
        a1.text(w[i], i, f"  {w[i]:.1f}%  ×{num(r.get('epochs')):.2f} epochs", va="center", fontsize=8, color="#3e4c59")
    a1.set_xlim(0, (max(w) or 1) * 1.6)
    a1.set_title("Weight in the blend (share of tokens) and epochs")
    y = list(range(len(rows)))
    a2.barh([i - 0.18 for i in y], [num(r.get("tokens_available")) for r in rows], height=0.36, color=KEPT_LIGHT, label="tokens available")
    a2.barh([i + 0.18 for i in y], [num(r.get("tokens_taken")) for r in rows], height=0.36, color=PALETTE[1], label="tokens taken")
    a2.set_title("Tokens available and taken")
    a2.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.06), ncol=2)
    a2.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: fmt_short(v)))
    a1.set_yticks(y, [str(r.get("name", "")) for r in rows])
    a1.invert_yaxis()
    for ax in (a1, a2):
        ax.grid(axis="x")
        ax.set_axisbelow(True)
    fig.tight_layout()
    return _png(fig)
