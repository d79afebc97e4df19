"""The pipeline report: one self-contained HTML page over a pipeline run, and ``curate stats``.

``collect(paths)`` finds the finished stages (a pipeline root holding one directory per
stage, or stage directories, or tokenized prefixes), reads each ``_SUCCESS`` (or
``PREFIX.stats.json``) and orders the stages by the inputs graph their parameters record
(ties broken by the usual pipeline order, then by finishing time). ``render(run)`` draws
the charts with matplotlib (Agg, inline base64 PNG) and lays out the page: the funnel,
per-source flow, languages, quality scores, heuristic rule hits, duplicates,
decontamination, tokens, the blend table and rejected samples. The page loads nothing
(no script, no stylesheet, no font, no image from outside), and every number read from a
stats file sits in an element with ``data-file``/``data-key``/``data-value`` attributes,
so a test (or a person) can check it against that file. Document text from the rejected
outputs is untrusted: it is always HTML-escaped.

``stats_lines(path)`` is the plain-text summary of one stage for the terminal.
"""

from __future__ import annotations

import base64
import heapq
import html
import io
import json
import logging
import math
import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from curate import __version__
from curate.errors import CurateError
from curate.storage import as_path

log = logging.getLogger("curate")

SUCCESS = "_SUCCESS"
#: The pipeline order of stage kinds (docs/design.md); breaks ties between stages the inputs graph does not order.
PIPELINE_RANK = {
    "download_pile": 0,
    "download_cc": 0,
    "download": 0,
    "extract": 1,
    "clean": 2,
    "langid": 3,
    "filter": 4,
    "quality": 5,
    "dedup_exact": 6,
    "dedup_fuzzy": 7,
    "dedup": 7,
    "decontam": 8,
    "tokenize": 9,
    "blend": 10,
}
#: Counter keys under which a language-ID stage may record documents per language.
LANG_COUNTER_KEYS = ("lang", "langs", "language", "languages", "lang_counts", "language_counts", "per_lang", "by_lang")
SAMPLE_CHARS = 500
CHART_DPI = 150
CHART_DISPLAY = 0.68  # CSS px per PNG px: an 11-inch figure fills the page width
MAX_SAMPLE_REASONS = 8
MAX_SAMPLE_FILES = 200


# =========================================================================== collect


@dataclass
class Val:
    """A number shown in the page; ``file``/``key`` say where in which stats file it was read."""

    value: Any
    file: Path | None = None
    key: tuple[Any, ...] | None = None
    fmt: str = "int"


@dataclass
class Stage:
    """One finished stage: its directory (or tokenized prefix), kind and stats record."""

    label: str
    path: Path
    kind: str
    record: dict[str, Any]
    stats_file: Path | None
    mtime: float
    input_paths: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)  # labels of the upstream stages found

    def get(self, *keys: Any, default: Any = None) -> Any:
        """The value at a key path of the stats record (list items by index), or ``default``."""
        node: Any = self.record
        for k in keys:
            if isinstance(node, dict) and k in node or isinstance(node, list) and isinstance(k, int) and 0 <= k < len(node):
                node = node[k]
            else:
                return default
        return node

    def val(self, *keys: Any, fmt: str = "int", default: Any = 0) -> Val:
        """A number of this stage's stats file, with where it came from (``default`` when absent: no source)."""
        v = self.get(*keys)
        if v is None or isinstance(v, (dict, list)):
            return Val(default, fmt=fmt)
        return Val(v, self.stats_file, tuple(keys), fmt)

    @property
    def has_docs(self) -> bool:
        return "docs_in" in self.record and "docs_out" in self.record

    @property
    def rejected_dir(self) -> Path | None:
        d = self.path / "_rejected"
        return d if self.path.is_dir() and d.is_dir() else None

    @property
    def rank(self) -> float:
        return PIPELINE_RANK.get(self.kind, 5.5)


@dataclass
class Run:
    """The stages of a pipeline run, in pipeline order."""

    roots: list[Path]
    stages: list[Stage]
    unfinished: list[Path] = field(default_factory=list)

    def of_kind(self, *kinds: str) -> list[Stage]:
        return [s for s in self.stages if s.kind in kinds]

    def get(self, label: str) -> Stage:
        return next(s for s in self.stages if s.label == label)

    @property
    def sources(self) -> list[str]:
        out: set[str] = set()
        for s in self.stages:
            out.update(k for k in (s.get("per_source") or {}) if k)
            for row in s.get("rows") or []:
                out.add(row.get("name", ""))
        return sorted(x for x in out if x)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise CurateError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    except ValueError as exc:
        raise CurateError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise CurateError(f"{path}: not a stats record (a JSON object)")
    return data


def _download_cc_record(d: Path) -> dict[str, Any] | None:
    """The summaries ``curate download cc`` leaves in DIR/_download/ as one pseudo-stage record."""
    files = sorted(d.glob("*.json"))
    if not files:
        return None
    snaps = {}
    for f in files:
        try:
            r = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(r, dict) and "snapshot" in r:
            snaps[r["snapshot"]] = {k: r.get(k) for k in ("segments", "downloaded", "present", "failed", "bytes", "wall_seconds")}
            snaps[r["snapshot"]]["files"] = len(r.get("files") or [])
    if not snaps:
        return None
    return {
        "stage": "download_cc",
        "snapshots": snaps,
        "files": sum(s["files"] for s in snaps.values()),
        "bytes_out": sum(int(s.get("bytes") or 0) for s in snaps.values()),
        "wall_seconds": round(sum(float(s.get("wall_seconds") or 0) for s in snaps.values()), 3),
        "params": {},
    }


def _stage_at(p: Path, label: str) -> Stage | None:
    """The stage a directory holds, if it is a finished one (``_SUCCESS``, or a CommonCrawl download)."""
    if (p / SUCCESS).is_file():
        f = p / SUCCESS
        rec = _read_json(f)
        return Stage(label, p, str(rec.get("stage") or "unknown"), rec, f, f.stat().st_mtime)
    if (p / "_download").is_dir():
        rec = _download_cc_record(p / "_download")
        if rec is not None:
            return Stage(label, p, "download_cc", rec, None, (p / "_download").stat().st_mtime)
    return None


def _prefix_stage(stats: Path, label: str) -> Stage | None:
    """A tokenized prefix (``PREFIX.stats.json`` of ``curate tokenize --out PREFIX``) as a stage."""
    try:
        rec = json.loads(stats.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("stage") != "tokenize" or "source" in rec:
        return None  # per-source prefixes belong to their directory's _SUCCESS
    prefix = as_path(str(stats)[: -len(".stats.json")])
    return Stage(label, prefix, "tokenize", rec, stats, stats.stat().st_mtime)


def collect(paths: Iterable[str | os.PathLike]) -> Run:
    """Find the finished stages under ``paths`` and order them by the pipeline's inputs graph."""
    roots: list[Path] = []
    found: dict[Path, Stage] = {}
    unfinished: list[Path] = []

    def add(stage: Stage | None) -> bool:
        if stage is None:
            return False
        key = stage.path.resolve()
        if key not in found:
            found[key] = stage
        return True

    for raw in paths:
        p = as_path(raw)
        roots.append(p)
        if p.is_file():
            if p.name == SUCCESS:
                add(_stage_at(p.parent, p.parent.name))
            elif p.name.endswith(".stats.json") and add(_prefix_stage(p, p.name[: -len(".stats.json")])):
                pass
            else:
                raise CurateError(f"{p}: not a stage directory, _SUCCESS or PREFIX.stats.json file")
            continue
        if not p.exists():
            stats = as_path(f"{p}.stats.json")
            if stats.is_file() and add(_prefix_stage(stats, p.name)):
                continue
            raise CurateError(f"{p}: no such file or directory")
        if add(_stage_at(p, p.resolve().name)):
            continue
        n = 0
        for child in sorted(p.iterdir()):
            if child.name.startswith((".", "_")):
                continue
            if child.is_dir():
                if add(_stage_at(child, child.name)):
                    n += 1
                    continue
                for stats in sorted(child.glob("*.stats.json")):
                    n += add(_prefix_stage(stats, f"{child.name}/{stats.name[: -len('.stats.json')]}"))
                if (child / "_params.json").exists():
                    unfinished.append(child)
            elif child.name.endswith(".stats.json"):
                n += add(_prefix_stage(child, child.name[: -len(".stats.json")]))
        if n == 0:
            if (p / "_params.json").exists():
                raise CurateError(f"{p}: the stage has not finished (no {SUCCESS}); run it to completion first")
            raise CurateError(f"{p}: no finished stage here (no {SUCCESS} in it or in its subdirectories)")
    stages = list(found.values())
    _unique_labels(stages)
    _link(stages, roots)
    return Run(roots, _order(stages), unfinished)


def _unique_labels(stages: list[Stage]) -> None:
    seen: dict[str, int] = {}
    for s in stages:
        seen[s.label] = seen.get(s.label, 0) + 1
    for s in stages:
        if seen[s.label] > 1:
            s.label = f"{s.path.parent.name}/{s.label}"


def _input_paths(s: Stage) -> list[str]:
    if s.kind == "blend":
        return [str(r.get("prefix")) for r in s.get("rows") or [] if r.get("prefix")]
    inputs = s.get("params", "inputs") or []
    return [str(i) for i in inputs] if isinstance(inputs, list) else [str(inputs)]


def _link(stages: list[Stage], roots: list[Path]) -> None:
    """Fill each stage's ``inputs`` with the labels of the stages it read (by path, else by directory name)."""
    index = {s.path.resolve(): s for s in stages}
    by_name: dict[str, list[Stage]] = {}
    for s in stages:
        by_name.setdefault(s.path.name, []).append(s)
    for s in stages:
        s.input_paths = _input_paths(s)
        labels: list[str] = []
        for raw in s.input_paths:
            target = _resolve_input(raw, s, index, roots, by_name)
            if target is not None and target is not s and target.label not in labels:
                labels.append(target.label)
        s.inputs = labels


def _resolve_input(raw: str, s: Stage, index: dict[Path, Stage], roots: list[Path], by_name: dict[str, list[Stage]]) -> Stage | None:
    m = re.search(r"[*?\[]", raw)
    base = as_path(raw[: m.start()]).parent if m else as_path(raw)
    cands = (
        [base]
        if base.is_absolute()
        else [s.path.parent / base, Path.cwd() / base, *(r / base for r in roots), *(r.parent / base for r in roots)]
    )
    for c in cands:
        for up in [c, *list(c.parents)[:3]]:
            try:
                hit = index.get(up.resolve())
            except OSError:
                hit = None
            if hit is not None:
                return hit
    named = by_name.get(base.name) or by_name.get(base.parent.name) or []
    return named[0] if len(named) == 1 else None


def _order(stages: list[Stage]) -> list[Stage]:
    """Topological order of the inputs graph; ready stages go by pipeline rank, finishing time, label."""
    by_label = {s.label: s for s in stages}
    indeg = {s.label: 0 for s in stages}
    children: dict[str, list[str]] = {s.label: [] for s in stages}
    for s in stages:
        for i in s.inputs:
            if i in by_label:
                indeg[s.label] += 1
                children[i].append(s.label)
    heap = [(s.rank, s.mtime, s.label) for s in stages if indeg[s.label] == 0]
    heapq.heapify(heap)
    out: list[Stage] = []
    while heap:
        _, _, label = heapq.heappop(heap)
        out.append(by_label[label])
        for c in children[label]:
            indeg[c] -= 1
            if indeg[c] == 0:
                cs = by_label[c]
                heapq.heappush(heap, (cs.rank, cs.mtime, cs.label))
    rest = sorted((s for s in stages if s not in out), key=lambda s: (s.rank, s.mtime, s.label))  # a cycle: never expected
    return out + rest


# =========================================================================== numbers


@dataclass
class Flow:
    """Documents, bytes and tokens into and out of one stage."""

    docs_in: Val | None = None
    docs_out: Val | None = None
    bytes_in: Val | None = None
    bytes_out: Val | None = None
    tokens_in: Val | None = None
    tokens_out: Val | None = None


def flow(s: Stage) -> Flow:
    """What went into and came out of a stage, each number with where it was read."""
    if s.has_docs:
        return Flow(s.val("docs_in"), s.val("docs_out"), s.val("bytes_in", fmt="bytes"), s.val("bytes_out", fmt="bytes"))
    if s.kind == "tokenize":
        skipped = sum(v for v in (s.get("skipped") or {}).values() if isinstance(v, (int, float)))
        docs_in = Val(int(s.get("documents") or 0) + skipped) if skipped else s.val("documents")
        return Flow(docs_in, s.val("documents"), s.val("bytes", fmt="bytes"), None, None, s.val("tokens"))
    if s.kind == "blend":
        rows = s.get("rows") or []
        docs_in = Val(sum(int(r.get("documents") or 0) for r in rows))
        tokens_in = Val(sum(int(r.get("tokens_available") or 0) for r in rows))
        if s.get("mode") == "megatron-args":
            return Flow(docs_in, None, None, None, tokens_in, s.val("total_tokens"))
        return Flow(docs_in, s.val("documents"), None, None, tokens_in, s.val("tokens"))
    if s.kind == "download_cc":
        return Flow(bytes_out=Val(s.get("bytes_out") or 0, fmt="bytes"))
    return Flow()


def rejected_reasons(s: Stage) -> list[tuple[str, dict[str, Any]]]:
    """``(reason, {docs, bytes})`` by documents, most first."""
    rej = s.get("rejected") or {}
    return sorted(((r, v) for r, v in rej.items() if isinstance(v, dict)), key=lambda kv: (-int(kv[1].get("docs", 0)), kv[0]))


def _num(x: Any) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else 0.0


def _bucket_start(key: str) -> float:
    m = re.match(r"\s*([0-9.]+)", str(key))
    return float(m.group(1)) if m else math.inf


@dataclass
class LangCounts:
    """Documents per language from a stage's stats; ``key``/``per_key`` are where each number was read."""

    total: dict[str, int]
    per: dict[str, dict[str, int]]
    key: tuple[Any, ...] | None  # the totals' dict, when they were read rather than summed
    per_key: dict[str, tuple[Any, ...]]  # source -> its dict


def _counts(node: Any) -> dict[str, int] | None:
    if isinstance(node, dict) and node and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in node.values()):
        return {str(k): int(v) for k, v in node.items()}
    return None


def lang_counts(s: Stage) -> LangCounts | None:
    """Documents per language (total, and per source when recorded) from a stage's counters.

    Accepts ``counters.<key>`` as ``{lang: n}`` or ``{source: {lang: n}}`` for the keys in
    ``LANG_COUNTER_KEYS``, or ``per_source.<source>.<key>`` as ``{lang: n}``.
    """
    counters = s.get("counters") or {}
    per: dict[str, dict[str, int]] = {}
    per_key: dict[str, tuple[Any, ...]] = {}
    for key in LANG_COUNTER_KEYS:
        node = counters.get(key)
        flat = _counts(node)
        if flat:
            return LangCounts(flat, {}, ("counters", key), {})
        if isinstance(node, dict) and node and all(_counts(v) for v in node.values()):
            per = {str(src): _counts(d) or {} for src, d in node.items()}
            per_key = {src: ("counters", key, src) for src in per}
            break
    if not per:
        for src, d in (s.get("per_source") or {}).items():
            for key in LANG_COUNTER_KEYS:
                c = _counts(d.get(key)) if isinstance(d, dict) else None
                if c:
                    per[src], per_key[src] = c, ("per_source", src, key)
                    break
    if not per:
        return None
    total: dict[str, int] = {}
    for d in per.values():
        for k, v in d.items():
            total[k] = total.get(k, 0) + v
    return LangCounts(total, per, None, per_key)


def rule_hits(s: Stage) -> list[tuple[str, str, Val]]:
    """``(rule set, rule, hits)`` of a heuristic filter stage, from ``counters.rules`` or ``set:rule`` reasons."""
    rules = s.get("counters", "rules")
    out: list[tuple[str, str, Val]] = []
    if isinstance(rules, dict):
        for rs, d in rules.items():
            if isinstance(d, dict):
                for rule, n in d.items():
                    if isinstance(n, (int, float)):
                        out.append((rs, rule, s.val("counters", "rules", rs, rule)))
    if not out:
        for reason, _ in rejected_reasons(s):
            if ":" in reason:
                rs, rule = reason.split(":", 1)
                out.append((rs, rule, s.val("rejected", reason, "docs")))
    out.sort(key=lambda t: (-_num(t[2].value), t[0], t[1]))
    return out


def first_stages(run: Run) -> list[Stage]:
    """Stages with documents that no other found stage feeds: where documents enter the pipeline."""
    doc_labels = {s.label for s in run.stages if s.has_docs}
    return [s for s in run.stages if s.has_docs and not any(i in doc_labels for i in s.inputs)]


# =========================================================================== formatting


def fmt_int(x: Any) -> str:
    if x is None:
        return "—"
    if isinstance(x, float) and not x.is_integer():
        return f"{x:,.1f}"
    return f"{int(x):,}"


def fmt_bytes(x: Any) -> str:
    if x is None:
        return "—"
    x = float(x)
    for unit, div in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(x) >= div:
            return f"{x / div:,.1f} {unit}"
    return f"{int(x):,} B"


def fmt_pct(x: Any) -> str:
    return "—" if x is None else f"{100.0 * float(x):.1f}%"


def fmt_count(x: float) -> str:
    """1,952 below 100,000; 1.2M above: for chart labels."""
    return f"{x:,.0f}" if abs(x) < 1e5 else fmt_short(x)


def fmt_short(x: float) -> str:
    """1.2M, 34.5k: for chart labels."""
    x = float(x)
    for unit, div in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= div:
            return f"{x / div:.1f}{unit}"
    return f"{x:.0f}"


FORMATS = {
    "int": fmt_int,
    "bytes": fmt_bytes,
    "pct": fmt_pct,
    "float": lambda x: "—" if x is None else f"{float(x):.3f}",
    "weight": lambda x: "—" if x is None else f"{100.0 * float(x):.2f}%",
    "epochs": lambda x: "—" if x is None else f"{float(x):.2f}",
    "sec": lambda x: "—" if x is None else f"{float(x):,.1f} s",
}


def ratio(a: Any, b: Any) -> float | None:
    a, b = (a.value if isinstance(a, Val) else a), (b.value if isinstance(b, Val) else b)
    if a is None or not b:
        return None
    return float(a) / float(b)


# =========================================================================== html


def esc(x: Any) -> str:
    """HTML-escaped text; control characters (invalid in HTML) become U+FFFD."""
    s = str(x)
    s = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]", "\ufffd", s)
    return html.escape(s, quote=True)


class Raw(str):
    """Trusted HTML (built here), not escaped again."""


def num_html(v: Val | None, tag: str = "span", cls: str = "", extra: str = "") -> str:
    """A number with its provenance: ``data-file``, ``data-key`` (JSON list) and ``data-value`` attributes."""
    if v is None:
        return f'<{tag} class="{cls}">—</{tag}>'
    text = FORMATS.get(v.fmt, fmt_int)(v.value)
    attrs = f' class="{cls}"' if cls else ""
    if v.file is not None and v.key is not None:
        attrs += f' data-file="{esc(v.file)}" data-key="{esc(json.dumps(list(v.key)))}" data-value="{esc(json.dumps(v.value))}"'
    if v.fmt == "bytes" and v.value is not None:
        attrs += f' title="{int(v.value):,} bytes"'
    return f"<{tag}{attrs}{extra}>{esc(text)}</{tag}>"


def cell(c: Any) -> str:
    if isinstance(c, Val):
        return num_html(c, "td", "n")
    if c is None:
        return '<td class="n muted">—</td>'
    if isinstance(c, Raw):
        return f"<td>{c}</td>"
    if isinstance(c, (int, float)) and not isinstance(c, bool):
        return f'<td class="n">{esc(fmt_int(c))}</td>'
    return f"<td>{esc(c)}</td>"


def table(
    head: Sequence[str], rows: Sequence[Sequence[Any]], *, tid: str = "", foot: Sequence[Any] | None = None, num_from: int = 1
) -> str:
    """A table; columns from ``num_from`` on are right-aligned numbers."""
    ths = "".join(f'<th class="{"n" if i >= num_from else ""}">{esc(h)}</th>' for i, h in enumerate(head))
    body = "".join("<tr>" + "".join(cell(c) for c in r) + "</tr>" for r in rows)
    tfoot = '<tfoot><tr class="total">' + "".join(cell(c) for c in foot) + "</tr></tfoot>" if foot else ""
    ident = f' id="{esc(tid)}"' if tid else ""
    ident += ' class="wide"' if len(head) >= 6 else ""
    return f'<div class="scroll"><table{ident}><thead><tr>{ths}</tr></thead><tbody>{body}</tbody>{tfoot}</table></div>'


def figure(png: str | None, cid: str, alt: str, caption: str = "") -> str:
    """An inline PNG chart, shown at the same density as every other chart (so fonts match)."""
    if not png:
        return ""
    raw = base64.b64decode(png[:44])
    width = int.from_bytes(raw[16:20], "big") if raw[:8] == b"\x89PNG\r\n\x1a\n" else 0
    size = f' width="{round(width * CHART_DISPLAY)}"' if width else ""
    cap = f"<figcaption>{esc(caption)}</figcaption>" if caption else ""
    return f'<figure><img id="{esc(cid)}" class="chart"{size} alt="{esc(alt)}" src="data:image/png;base64,{png}">{cap}</figure>'


def note(text: str) -> str:
    return f'<p class="note">{esc(text)}</p>'


# =========================================================================== charts

PALETTE = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#EECA3B", "#B279A2", "#FF9DA6", "#9D755D", "#BAB0AC"]
REASON_COLORS = ["#E45756", "#F58518", "#EECA3B", "#B279A2", "#FF9DA6", "#9D755D", "#72B7B2", "#D67195", "#F2CF5B", "#8CD17D", "#B6992D"]
KEPT = "#4C78A8"
TRIMMED = "cut from kept documents"
KEPT_LIGHT = "#BFD3E6"
OTHER = "#BAB0AC"


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
            totals[r] = totals.get(r, 0) + int(v.get("docs", 0))
    ordered = sorted(totals, key=lambda r: (-totals[r], r))
    return {r: REASON_COLORS[i] if i < len(REASON_COLORS) else OTHER for i, r in enumerate(ordered)}


def chart_funnel(run: Run) -> str | None:
    """Documents and bytes per stage: kept, removed per reason, and text trimmed (bytes)."""
    stages = [s for s in run.stages if s.has_docs]
    if not stages:
        return None
    plt = _mpl()
    colors = _reason_colors(run)
    n = len(stages)
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.5 * n + 1.5), sharey=True, layout="constrained")
    labels = [s.label for s in stages]
    y = list(range(n))
    used: dict[str, str] = {}
    for ax, what in zip(axes, ("docs", "bytes")):
        scale = 1.0 if what == "docs" else 1e6
        xmax = 0.0
        for i, s in enumerate(stages):
            kept = _num(s.get(f"{what}_out")) / scale
            ax.barh(i, kept, color=KEPT, height=0.62, label="kept" if i == 0 else None)
            left = kept
            removed = 0.0
            for r, v in rejected_reasons(s):
                w = _num(v.get(what)) / scale
                if w <= 0:
                    continue
                c = colors.get(r, OTHER)
                name = r if c != OTHER else "other reasons"
                ax.barh(i, w, left=left, color=c, height=0.62, label=None if name in used else name)
                used[name] = c
                left += w
                removed += w
            if what == "bytes":
                trimmed = (_num(s.get("bytes_in")) - _num(s.get("bytes_out"))) / scale - removed
                if trimmed > 1e-9:
                    ax.barh(
                        i,
                        trimmed,
                        left=left,
                        color="white",
                        edgecolor="#9aa5b1",
                        hatch="////",
                        linewidth=0.6,
                        height=0.62,
                        label=None if TRIMMED in used else TRIMMED,
                    )
                    used[TRIMMED] = "hatch"
                    left += trimmed
            din = _num(s.get(f"{what}_in")) / scale
            ax.plot([din, din], [i - 0.38, i + 0.38], color="#1f2933", linewidth=1.2)
            pct = f" ({100 * kept / din:.0f}%)" if din else ""
            text = f"{fmt_count(din)} → {fmt_count(kept)}" if what == "docs" else f"{fmt_bytes(din * scale)} → {fmt_bytes(kept * scale)}"
            ax.text(max(left, din), i, f"  {text}{pct}", va="center", fontsize=8, color="#3e4c59")
            xmax = max(xmax, left, din)
        ax.set_xlim(0, xmax * 1.42 if xmax else 1)
        ax.set_yticks(y, labels)
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


def chart_sources(run: Run, sources: list[str]) -> str | None:
    """Heatmap: share of each source's documents still present after each stage."""
    stages = [s for s in run.stages if s.has_docs]
    if not stages or not sources:
        return None
    import numpy as np

    plt = _mpl()
    grid = np.full((len(sources), len(stages)), np.nan)
    first: dict[str, float] = {}
    for j, s in enumerate(stages):
        per = s.get("per_source") or {}
        for i, src in enumerate(sources):
            d = per.get(src)
            if not isinstance(d, dict):
                continue
            if src not in first:
                first[src] = _num(d.get("docs_in"))
            if first[src]:
                grid[i, j] = _num(d.get("docs_out")) / first[src]
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


def chart_languages(
    total: dict[str, int], per: dict[str, dict[str, int]], scores: dict[str, Any] | None = None, top: int = 12
) -> str | None:
    """Documents per language (stacked by source when known), and the language-ID score histogram."""
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
    if per and len(per) <= len(PALETTE):
        left = [0.0] * len(names)
        for k, (src, d) in enumerate(sorted(per.items())):
            vals = [d.get(lg, 0) for lg in shown] + ([sum(d.get(lg, 0) for lg in rest)] if rest else [])
            ax.barh(range(len(names)), vals, left=left, color=PALETTE[k % len(PALETTE)], height=0.65, label=src)
            left = [a + b for a, b in zip(left, vals)]
        ax.legend(fontsize=8, loc="lower right")
    else:
        vals = [total[lg] for lg in shown] + ([sum(total[lg] for lg in rest)] if rest else [])
        ax.barh(range(len(names)), vals, color=KEPT, height=0.65)
    all_n = sum(total.values())
    for i, lg in enumerate(names):
        n = total[lg] if lg != "other" else sum(total[x] for x in rest)
        ax.text(n, i, f"  {n:,} ({100 * n / all_n:.1f}%)", va="center", fontsize=8, color="#3e4c59")
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlim(0, max(total.values()) * 1.3)
    ax.set_title("Documents per language")
    ax.grid(axis="x")
    ax.set_axisbelow(True)
    if scores:
        keys = sorted(scores, key=_bucket_start)
        x = [_bucket_start(k) for k in keys]
        width = (x[1] - x[0]) * 0.9 if len(x) > 1 else 0.09
        a2.bar(x, [_num(scores[k]) for k in keys], width=width, align="edge", color=PALETTE[4])
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
        keys = sorted(h_all, key=_bucket_start)
        x = [_bucket_start(b) for b in keys]
        width = (x[1] - x[0]) * 0.9 if len(x) > 1 else 0.09
        ax.bar(x, [h_all[b] for b in keys], width=width, align="edge", color=KEPT_LIGHT, label="scored")
        ax.bar(x, [h_kept.get(b, 0) for b in keys], width=width, align="edge", color=KEPT, label="kept")
        ax.set_title(title, fontsize=9)
        ax.set_xlim(0, 1)
        ax.set_yscale("symlog", linthresh=1)
        ax.set_ylim(0, max([1.0, *h_all.values()]) * 1.6)
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


def chart_dedup(stages: list[Stage], sources: list[str]) -> str | None:
    """Cluster sizes per dedup stage, and the share of each source's documents removed."""
    if not stages:
        return None
    plt = _mpl()
    n_src = sum(1 for src in sources if any(isinstance((s.get("per_source") or {}).get(src), dict) for s in stages))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, max(2.8, 0.17 * n_src * len(stages) + 1.4)))
    keys = sorted({k for s in stages for k in (s.get("dedup", "cluster_sizes") or {})}, key=_bucket_start)
    w = 0.8 / len(stages)
    for k, s in enumerate(stages):
        cs = s.get("dedup", "cluster_sizes") or {}
        xs = [i + k * w for i in range(len(keys))]
        vals = [cs.get(b, 0) for b in keys]
        a1.bar(xs, vals, width=w, color=PALETTE[k % len(PALETTE)], label=s.label)
        for x, v in zip(xs, vals):
            if v:
                a1.text(x, v, f"{v:,}", ha="center", va="bottom", fontsize=7.5, color="#3e4c59")
    a1.set_xticks([i + 0.4 - w / 2 for i in range(len(keys))], keys)
    a1.set_xlabel("documents in the cluster")
    a1.set_title("Duplicate clusters by size")
    if any(any((s.get("dedup", "cluster_sizes") or {}).values()) for s in stages):
        a1.set_yscale("log")
        a1.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: fmt_count(v)))
        a1.set_ylim(0.7, None)
    a1.legend(fontsize=8, loc="upper right")
    srcs = [src for src in sources if any(isinstance((s.get("per_source") or {}).get(src), dict) for s in stages)]
    h = 0.8 / len(stages)
    for k, s in enumerate(stages):
        per = s.get("per_source") or {}
        vals = []
        for src in srcs:
            d = per.get(src) or {}
            rem = sum(_num(v) for v in (d.get("rejected") or {}).values())
            vals.append(100 * rem / _num(d.get("docs_in")) if _num(d.get("docs_in")) else 0.0)
        ys = [i + k * h for i in range(len(srcs))]
        a2.barh(ys, vals, height=h, color=PALETTE[k % len(PALETTE)], label=s.label)
        for yy, v in zip(ys, vals):
            if v:
                a2.text(v, yy, f" {v:.1f}%", va="center", fontsize=7.5, color="#3e4c59")
    a2.set_yticks([i + 0.4 - h / 2 for i in range(len(srcs))], srcs)
    a2.invert_yaxis()
    a2.set_xlabel("% of the source's documents removed")
    a2.set_title("Share removed per source")
    a2.grid(axis="x")
    a2.set_axisbelow(True)
    xmax = a2.get_xlim()[1]
    a2.set_xlim(0, max(1.0, xmax * 1.15))
    fig.tight_layout()
    return _png(fig)


def chart_decontam(sets: list[tuple[str, dict[str, Any]]]) -> str | None:
    if not sets:
        return None
    plt = _mpl()
    fig, axes = plt.subplots(1, 3, figsize=(11, 0.45 * len(sets) + 1.6), sharey=True)
    names = [n for n, _ in sets]
    for ax, (key, title) in zip(
        axes, (("docs_contaminated", "Documents contaminated"), ("matches", "N-gram matches"), ("chars_removed", "Characters removed"))
    ):
        vals = [_num(d.get(key)) for _, d in sets]
        ax.barh(range(len(sets)), vals, color=PALETTE[3] if key == "docs_contaminated" else PALETTE[1], height=0.6)
        for i, v in enumerate(vals):
            ax.text(v, i, f"  {fmt_int(v)}", va="center", fontsize=8, color="#3e4c59")
        ax.set_title(title)
        ax.set_xlim(0, (max(vals) or 1) * 1.3)
        ax.grid(axis="x")
        ax.set_axisbelow(True)
    axes[0].set_yticks(range(len(sets)), names)
    axes[0].invert_yaxis()
    fig.tight_layout()
    return _png(fig)


def chart_blend(s: Stage) -> str | None:
    rows = s.get("rows") or []
    if not rows:
        return None
    plt = _mpl()
    names = [r["name"] for r in rows]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 0.36 * len(rows) + 1.4), sharey=True)
    w = [100 * _num(r.get("weight")) for r in rows]
    a1.barh(range(len(rows)), w, color=KEPT, height=0.65)
    for i, r in enumerate(rows):
        a1.text(w[i], i, f"  {w[i]:.1f}%  ×{_num(r.get('epochs')):.2f} epochs", va="center", fontsize=8, color="#3e4c59")
    a1.set_xlim(0, max(w) * 1.6)
    a1.set_title("Weight in the blend (share of tokens) and epochs")
    avail = [_num(r.get("tokens_available")) for r in rows]
    taken = [_num(r.get("tokens_taken")) for r in rows]
    y = list(range(len(rows)))
    a2.barh([i - 0.18 for i in y], avail, height=0.36, color=KEPT_LIGHT, label="tokens available")
    a2.barh([i + 0.18 for i in y], taken, height=0.36, color=PALETTE[1], label="tokens taken")
    a2.set_title("Tokens available and taken")
    a2.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.06), ncol=2)
    a2.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: fmt_short(v)))
    a1.set_yticks(y, names)
    a1.invert_yaxis()
    for ax in (a1, a2):
        ax.grid(axis="x")
        ax.set_axisbelow(True)
    fig.tight_layout()
    return _png(fig)


# =========================================================================== rejected samples


@dataclass
class Sample:
    reason: str
    source: str
    id: str
    text: str
    chars: int
    extra: dict[str, Any] = field(default_factory=dict)


def _strings(col: Any) -> list[str]:
    """A string column as Python strings, never failing on invalid UTF-8 (replaced)."""
    import pyarrow as pa

    try:
        return ["" if v is None else str(v) for v in col.to_pylist()]
    except UnicodeDecodeError:
        raw = col.cast(pa.large_binary())
        return ["" if b is None else b.decode("utf-8", "replace") for b in raw.to_pylist()]


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
        extra_cols = [c for c in ("dup_of", "quality_score", "lang", "lang_score", "url") if c in names]
        cols = ["reason", "text", *[c for c in ("id", "source") if c in names], *extra_cols]
        t = pf.read_row_group(rg, columns=cols).take(sorted(rows))
        texts = _strings(t.column("text"))
        rs = _strings(t.column("reason"))
        ids = _strings(t.column("id")) if "id" in cols else [""] * len(rows)
        srcs = _strings(t.column("source")) if "source" in cols else [""] * len(rows)
        extras = {c: t.column(c).to_pylist() for c in extra_cols}
        for k, i in enumerate(sorted(rows)):
            ex = {c: extras[c][k] for c in extra_cols if extras[c][k] not in (None, "")}
            read[(fi, rg, i)] = Sample(rs[k], srcs[k], ids[k], texts[k][:max_chars], len(texts[k]), ex)
    ordered = [r for r in order if r in chosen] + sorted(r for r in chosen if r not in order)
    return [read[key] for r in ordered for key in chosen[r] if key in read]


# =========================================================================== page sections


def _source_docs_cell(s: Stage, src: str) -> Any:
    d = (s.get("per_source") or {}).get(src)
    if not isinstance(d, dict):
        return None
    return s.val("per_source", src, "docs_out")


def section_summary(run: Run) -> str:
    firsts = first_stages(run)
    docs_in = sum(_num(s.get("docs_in")) for s in firsts)
    bytes_in = sum(_num(s.get("bytes_in")) for s in firsts)
    tok = run.of_kind("tokenize")
    blends = [b for b in run.of_kind("blend") if b.get("mode") != "megatron-args"] or run.of_kind("blend")
    cards = [
        ("Stages", Val(len(run.stages)), "in pipeline order below"),
        ("Sources", Val(len(run.sources)), ""),
        ("Documents in", Val(docs_in), " + ".join(f"{s.label} {fmt_int(s.get('docs_in'))}" for s in firsts)),
        ("Bytes in", Val(bytes_in, fmt="bytes"), "read by the first stages"),
    ]
    if tok:
        cards.append(("Documents tokenized", tok[-1].val("documents"), tok[-1].label))
        cards.append(("Tokens", tok[-1].val("tokens"), tok[-1].label))
    if blends:
        b = blends[-1]
        cards.append(
            (
                "Blend tokens",
                b.val("tokens") if b.get("tokens") is not None else b.val("total_tokens"),
                f"{b.label}: {len(b.get('rows') or [])} sources",
            )
        )
    out = ['<div class="cards">']
    for title, v, sub in cards:
        out.append(f'<div class="card"><div class="k">{esc(title)}</div>{num_html(v, "div", "v")}<div class="s">{esc(sub)}</div></div>')
    out.append("</div>")
    if run.unfinished:
        out.append(note("Not finished (no _SUCCESS), left out: " + ", ".join(str(p) for p in run.unfinished)))
    return "".join(out)


def section_funnel(run: Run) -> str:
    rows = []
    for s in run.stages:
        f = flow(s)
        reasons = rejected_reasons(s)
        top = ", ".join(f"{r} {fmt_int(v.get('docs'))}" for r, v in reasons[:3]) + (
            f", +{len(reasons) - 3} more" if len(reasons) > 3 else ""
        )
        kept = ratio(f.docs_out, f.docs_in) if f.docs_out is not None else None
        reads = ", ".join(s.inputs) or ("—" if not s.input_paths else ", ".join(Path(p).name for p in s.input_paths[:3]))
        rows.append(
            [
                Raw(f'<span class="stage" title="{esc(s.path)}">{esc(s.label)}</span>'),
                s.kind,
                reads,
                f.docs_in,
                f.docs_out,
                Val(kept, fmt="pct") if kept is not None else None,
                f.bytes_in,
                f.bytes_out,
                f.tokens_in,
                f.tokens_out,
                s.val("wall_seconds", fmt="sec") if s.get("wall_seconds") is not None else None,
                Raw(f'<span class="reasons">{esc(top)}</span>') if top else "",
            ]
        )
    head = [
        "stage",
        "kind",
        "reads",
        "docs in",
        "docs out",
        "kept",
        "bytes in",
        "bytes out",
        "tokens in",
        "tokens out",
        "wall",
        "top removal reasons",
    ]
    out = [
        figure(
            chart_funnel(run),
            "chart-funnel",
            "Documents and bytes into and out of each stage, with the reasons for removal",
            "Each bar is what came out of the stage, followed by what it removed, per reason; the black tick marks what went in. "
            "Bytes cut from kept documents: markup (extract), repaired characters (clean), cut passages (decontam).",
        ),
        table(head, rows, tid="funnel-table", num_from=3).replace('<th class="n">top removal reasons</th>', "<th>top removal reasons</th>"),
    ]
    rrows = []
    for s in run.stages:
        din = _num(s.get("docs_in"))
        for r, v in rejected_reasons(s):
            rrows.append([s.label, Raw(f'<span class="reason">{esc(r)}</span>'), s.val("rejected", r, "docs"), s.val("rejected", r, "bytes", fmt="bytes"),
                          Val(_num(v.get("docs")) / din if din else None, fmt="pct")])  # fmt: skip
    if rrows:
        out.append("<h3>Removal reasons</h3>")
        out.append(table(["stage", "reason", "docs", "bytes", "share of stage input"], rrows, tid="reasons-table", num_from=2))
    return "".join(out)


def section_sources(run: Run) -> str:
    sources = run.sources
    stages = [s for s in run.stages if s.has_docs]
    if not sources or not stages:
        return note("No per-source counts in this run.")
    tok = run.of_kind("tokenize")
    blends = [b for b in run.of_kind("blend") if b.get("mode") != "megatron-args"]
    firsts: dict[str, Any] = {}
    rows = []
    for src in sources:
        row: list[Any] = [src]
        for s in stages:
            d = (s.get("per_source") or {}).get(src)
            if isinstance(d, dict) and src not in firsts:
                firsts[src] = s.val("per_source", src, "docs_in")
        row.append(firsts.get(src))
        row += [_source_docs_cell(s, src) for s in stages]
        for t in tok[-1:]:
            ps = t.get("per_source", src)
            row.append(t.val("per_source", src, "tokens") if isinstance(ps, dict) else None)
        for b in blends[-1:]:
            idx = next((i for i, r in enumerate(b.get("rows") or []) if r.get("name") == src), None)
            row.append(b.val("rows", idx, "tokens_taken") if idx is not None else None)
        rows.append(row)
    head = ["source", "docs in", *[f"{s.label}" for s in stages], *(["tokens"] if tok else []), *(["blend tokens"] if blends else [])]
    out = [
        figure(chart_sources(run, sources), "chart-sources", "Share of each source's documents kept after each stage"),
        '<p class="hint">Documents out of each stage, per source (docs in: what the source brought into its first stage).</p>',
        table(head, rows, tid="sources-table"),
    ]
    detail = []
    for s in stages:
        per = s.get("per_source") or {}
        srows = []
        for src in sorted(per):
            d = per[src]
            if not isinstance(d, dict):
                continue
            rej = d.get("rejected") or {}
            reasons = ", ".join(f"{r} {fmt_int(n)}" for r, n in sorted(rej.items(), key=lambda kv: -_num(kv[1])))
            srows.append([src or "(none)", s.val("per_source", src, "docs_in"), s.val("per_source", src, "docs_out"),
                          Val(ratio(d.get("docs_out"), d.get("docs_in")), fmt="pct"), s.val("per_source", src, "bytes_in", fmt="bytes"),
                          s.val("per_source", src, "bytes_out", fmt="bytes"), Raw(f'<span class="reasons">{esc(reasons)}</span>')])  # fmt: skip
        if srows:
            detail.append(f'<details><summary>{esc(s.label)} <span class="muted">({esc(s.kind)})</span></summary>')
            detail.append(table(["source", "docs in", "docs out", "kept", "bytes in", "bytes out", "removed (reason docs)"], srows,
                                tid=f"per-source-{_slug(s.label)}"))  # fmt: skip
            detail.append("</details>")
    if detail:
        out.append("<h3>Per stage and source</h3>" + "".join(detail))
    return "".join(out)


def _slug(x: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", x).strip("-") or "x"


def section_languages(run: Run) -> str:
    found = [(s, lc) for s in run.stages if (lc := lang_counts(s)) is not None]
    if not found:
        return note("No language counts in this run (no langid stage found).")
    out = []
    for s, lc in found[:1]:
        scores = s.get("counters", "score") if s.kind == "langid" else None
        scores = scores if _counts(scores) else None
        out.append(figure(chart_languages(lc.total, lc.per, scores), "chart-languages", "Documents per language"))
        all_n = sum(lc.total.values())
        rows = []
        for lg in sorted(lc.total, key=lambda k: (-lc.total[k], k)):
            v = s.val(*lc.key, lg) if lc.key else Val(lc.total[lg])
            rows.append([lg, v, Val(lc.total[lg] / all_n if all_n else None, fmt="pct")])
        out.append(f'<p class="hint">From {esc(s.label)} ({esc(s.kind)}): documents per detected language.</p>')
        out.append(table(["language", "docs", "share"], rows[:12], tid="languages-table"))
        if len(rows) > 12:
            out.append(f"<details><summary>{len(rows) - 12} more languages</summary>")
            out.append(table(["language", "docs", "share"], rows[12:], tid="languages-more"))
            out.append("</details>")
        if lc.per:
            langs = sorted(lc.total, key=lambda k: (-lc.total[k], k))[:10]
            prow = []
            for src in sorted(lc.per):
                d = lc.per[src]
                prow.append([src, Val(sum(d.values())), *[s.val(*lc.per_key[src], lg) if lg in d else Val(0) for lg in langs]])
            out.append("<h3>Per source</h3>")
            out.append(table(["source", "docs", *langs], prow, tid="languages-per-source"))
    return "".join(out)


def section_quality(run: Run) -> str:
    stages = [s for s in run.stages if s.get("counters", "score_hist")]
    if not stages:
        return note("No quality scores in this run (no quality stage found).")
    out = []
    hists = []
    for s in stages:
        h_all = s.get("counters", "score_hist", "all") or {}
        h_kept = s.get("counters", "score_hist", "kept") or {}
        rows = []
        for src in sorted(h_all):
            n = sum(_num(v) for v in h_all[src].values())
            kept = sum(_num(v) for v in (h_kept.get(src) or {}).values())
            mean = _num(s.get("counters", "score_sum", src)) / n if n else None
            title = src if len(stages) == 1 else f"{s.label}: {src}"
            hists.append((title, h_all[src], h_kept.get(src) or {}))
            buckets = sorted(h_all[src], key=_bucket_start)
            rows.append([src, Val(n), Val(mean, fmt="float"), Val(kept), Val(kept / n if n else None, fmt="pct"),
                         *[s.val("counters", "score_hist", "all", src, b) for b in buckets]])  # fmt: skip
        buckets = sorted({b for d in h_all.values() for b in d}, key=_bucket_start)
        mode = s.get("params", "mode")
        desc = f"{s.label}: mode {mode}" + (f", alpha {s.get('params', 'alpha')}" if mode == "pareto" else "")
        desc += f", threshold {s.get('params', 'threshold')}" if mode == "threshold" else ""
        out.append(f'<p class="hint">{esc(desc)}. Score buckets count every scored document; kept documents are the dark bars.</p>')
        out.append(table(["source", "scored", "mean score", "kept", "kept %", *buckets], rows, tid=f"quality-{_slug(s.label)}"))
        metrics = _model_metrics(s)
        if metrics is not None:
            mfile, m = metrics
            v = m.get("valid") or {}
            mrows = [
                [k, Val(v.get(k), mfile, ("valid", k), "float")] for k in ("precision", "recall", "f1", "roc_auc", "accuracy") if k in v
            ]
            if mrows:
                out.append(f'<p class="hint">Classifier {esc(Path(str(s.get("params", "model"))).name)}, held-out set of '
                           f'{esc(fmt_int(v.get("docs")))} documents (score ≥ {esc(v.get("threshold", 0.5))}):</p>')  # fmt: skip
                out.append(table(["metric", "value"], mrows, tid=f"quality-model-{_slug(s.label)}"))
    out.insert(0, figure(chart_quality(hists), "chart-quality", "Quality-score histograms per source"))
    return "".join(out)


def _model_metrics(s: Stage) -> tuple[Path, dict[str, Any]] | None:
    model = s.get("params", "model")
    if not model:
        return None
    f = Path(f"{model}.metrics.json")
    if not f.is_absolute():
        f = s.path.parent / f if (s.path.parent / f).exists() else f
    try:
        return f, json.loads(f.read_text())
    except (OSError, ValueError):
        return None


def section_filters(run: Run) -> str:
    stages = [(s, rule_hits(s)) for s in run.stages]
    stages = [(s, h) for s, h in stages if h]
    if not stages:
        return note("No heuristic rule hits in this run (no filter stage found).")
    out = []
    allhits = []
    for s, hits in stages:
        checked = s.get("counters", "docs_checked")
        removed = {src: sum(_num(v) for v in d["rejected"].values()) for src, d in (s.get("per_source") or {}).items()
                   if isinstance(d, dict) and d.get("rejected")}  # fmt: skip
        sources = sorted(removed, key=lambda src: (-removed[src], src))[:6]
        matrix = bool(sources)
        rows = []
        for rs, rule, v in hits:
            allhits.append((rs, rule, int(_num(v.value))))
            row = [rs, rule, v, Val(_num(v.value) / checked if checked else ratio(v.value, s.get("docs_in")), fmt="pct")]
            if matrix:
                reason = f"{rs}:{rule}"
                row += [s.val("per_source", src, "rejected", reason) if reason in (s.get("per_source", src, "rejected") or {}) else None
                        for src in sources]  # fmt: skip
            rows.append(row)
        base = "docs checked" if checked else "docs in"
        out.append(f'<p class="hint">{esc(s.label)}: {esc(fmt_int(checked if checked else s.get("docs_in")))} {base}; '
                   f"a document counts under the first rule it fails"
                   f"{'; per source: the sources with the most removals' if matrix else ''}.</p>")  # fmt: skip
        out.append(table(["rule set", "rule", "hits", f"share of {base}", *(sources if matrix else [])], rows,
                         tid=f"rules-{_slug(s.label)}", num_from=2))  # fmt: skip
    allhits.sort(key=lambda t: -t[2])
    out.insert(0, figure(chart_rules(allhits), "chart-rules", "Heuristic rule hits"))
    return "".join(out)


def section_dedup(run: Run) -> str:
    stages = [s for s in run.stages if isinstance(s.get("dedup"), dict)]
    if not stages:
        return note("No deduplication in this run (no dedup stage found).")
    sources = run.sources
    out = [figure(chart_dedup(stages, sources), "chart-dedup", "Duplicate cluster sizes and share removed per source")]
    rows = []
    for s in stages:
        d = s.get("dedup") or {}
        removed = sum(_num(v.get("docs")) for _, v in rejected_reasons(s))
        how = (f"Jaccard ≥ {d.get('threshold')}, {d.get('bands')}×{d.get('rows')} bands, verify {d.get('verify')}"
               if s.kind == "dedup_fuzzy" or "threshold" in d else "identical normalised text")  # fmt: skip
        rows.append(
            [s.label, how, s.val("docs_in"), s.val("dedup", "clusters"), Val(removed), Val(ratio(removed, s.get("docs_in")), fmt="pct")]
        )
    out.append(table(["stage", "method", "docs in", "clusters", "duplicates removed", "removed"], rows, tid="dedup-table", num_from=2))
    sizes = sorted({k for s in stages for k in (s.get("dedup", "cluster_sizes") or {})}, key=_bucket_start)
    srows = [
        [s.label, *[s.val("dedup", "cluster_sizes", k) if k in (s.get("dedup", "cluster_sizes") or {}) else Val(0) for k in sizes]]
        for s in stages
    ]
    out.append("<h3>Clusters by size (documents per cluster)</h3>")
    out.append(table(["stage", *sizes], srows, tid="dedup-sizes"))
    prow = []
    for src in sources:
        row: list[Any] = [src]
        present = False
        for s in stages:
            d = (s.get("per_source") or {}).get(src)
            if not isinstance(d, dict):
                row += [None, None, None]
                continue
            present = True
            rej = d.get("rejected") or {}
            n = sum(_num(v) for v in rej.values())
            rv = s.val("per_source", src, "rejected", next(iter(rej))) if len(rej) == 1 else Val(n)
            row += [s.val("per_source", src, "docs_in"), rv, Val(ratio(n, d.get("docs_in")), fmt="pct")]
        if present:
            prow.append(row)
    head = ["source"] + [h for s in stages for h in (f"{s.label} docs in", "removed", "share")]
    out.append("<h3>Share removed per source</h3>")
    out.append(table(head, prow, tid="dedup-per-source"))
    return "".join(out)


def section_decontam(run: Run) -> str:
    stages = [s for s in run.stages if s.get("counters", "decontam_per_eval_set") is not None or s.kind == "decontam"]
    if not stages:
        return note("No decontamination in this run (no decontam stage found).")
    out = []
    chart_sets: list[tuple[str, dict[str, Any]]] = []
    keys = ["matches", "docs_contaminated", "pieces_kept", "pieces_dropped", "docs_dropped", "chars_removed"]
    for s in stages:
        per = s.get("counters", "decontam_per_eval_set") or {}
        idx = s.get("decontam", "index", "per_set") or {}
        names = list(s.get("decontam", "index", "sets") or sorted(per))
        rows = []
        for name in names:
            c = per.get(name) or {}
            chart_sets.append((name if len(stages) == 1 else f"{s.label}: {name}", c))
            i = idx.get(name) or {}
            rows.append([name, s.val("decontam", "index", "per_set", name, "items") if i else None,
                         s.val("decontam", "index", "per_set", name, "ngrams") if i else None,
                         *[s.val("counters", "decontam_per_eval_set", name, k) if k in c else Val(0) for k in keys]])  # fmt: skip
        tot = s.get("counters", "decontam") or {}
        foot = ["all sets", None, None, *[s.val("counters", "decontam", k) if k in tot else None for k in keys]]
        p = s.get("params") or {}
        out.append(f'<p class="hint">{esc(s.label)}: {esc(p.get("ngram", 13))}-grams; each match cut with {esc(p.get("cut_chars", 200))} '
                   f'characters each side; pieces under {esc(p.get("min_piece_chars", 200))} characters dropped; documents in more '
                   f'than {esc(p.get("max_pieces", 10))} pieces dropped.</p>')  # fmt: skip
        out.append(table(["evaluation set", "items", "n-grams", "matches", "docs contaminated", "pieces kept", "pieces dropped",
                          "docs dropped", "chars removed"], rows, tid=f"decontam-{_slug(s.label)}", foot=foot))  # fmt: skip
    out.insert(0, figure(chart_decontam(chart_sets), "chart-decontam", "Decontamination hits per evaluation set"))
    return "".join(out)


def section_tokens(run: Run) -> str:
    stages = run.of_kind("tokenize")
    if not stages:
        return note("No tokenize stage in this run.")
    out = []
    for s in stages:
        tok = s.get("tokenizer") or {}
        out.append(f'<p class="hint">{esc(s.label)}: tokenizer {esc(tok.get("name", "?"))} (vocabulary {esc(fmt_int(tok.get("vocab_size")))}), '
                   f'{esc(s.get("dtype") or "?")} tokens, end-of-document token {"on" if s.get("append_eod") else "off"}.</p>')  # fmt: skip
        rows = []
        for src in sorted(s.get("per_source") or {}):
            d = s.get("per_source", src)
            rows.append([src, s.val("per_source", src, "documents"), s.val("per_source", src, "bytes", fmt="bytes"),
                         s.val("per_source", src, "tokens"), Val(ratio(d.get("bytes"), d.get("tokens")), fmt="float")])  # fmt: skip
        foot = [
            "total",
            s.val("documents"),
            s.val("bytes", fmt="bytes"),
            s.val("tokens"),
            Val(ratio(s.get("bytes"), s.get("tokens")), fmt="float"),
        ]
        out.append(table(["source", "documents", "text", "tokens", "bytes per token"], rows, tid=f"tokens-{_slug(s.label)}", foot=foot))
    return "".join(out)


def section_blend(run: Run) -> str:
    stages = [s for s in run.of_kind("blend") if s.get("rows")]
    if not stages:
        return note("No blend in this run.")
    corpus = [s for s in stages if s.get("mode") != "megatron-args"] or stages
    out = [figure(chart_blend(corpus[-1]), "chart-blend", "The blend: weight, epochs and tokens per source")]
    for s in stages:
        rows = []
        for i, r in enumerate(s.get("rows") or []):
            rows.append([r.get("name"), s.val("rows", i, "documents"), s.val("rows", i, "tokens_available"), s.val("rows", i, "weight", fmt="weight"),
                         s.val("rows", i, "epochs", fmt="epochs"), s.val("rows", i, "tokens_taken"),
                         s.val("rows", i, "docs_taken") if s.get("mode") != "megatron-args" else None])  # fmt: skip
        rws = s.get("rows") or []
        avail = sum(_num(r.get("tokens_available")) for r in rws)
        taken = sum(_num(r.get("tokens_taken")) for r in rws)
        foot = ["total", Val(sum(_num(r.get("documents")) for r in rws)), Val(avail), Val(sum(_num(r.get("weight")) for r in rws), fmt="weight"),
                Val(taken / avail if avail else None, fmt="epochs"), Val(taken),
                Val(sum(_num(r.get("docs_taken")) for r in rws)) if s.get("mode") != "megatron-args" else None]  # fmt: skip
        mode = s.get("mode")
        what = (f"{s.label}: a shuffled corpus of {fmt_int(s.get('documents'))} documents, seed {s.get('seed')}" if mode != "megatron-args"
                else f"{s.label}: weights for Megatron's --data-path (train-time blending)")  # fmt: skip
        out.append(f'<p class="hint">{esc(what)}. As in the MT-NLG dataset table: weight is the share of the blend\'s tokens, '
                   "epochs the passes over the source.</p>")  # fmt: skip
        out.append(table(["dataset", "documents", "tokens available", "weight", "epochs", "tokens taken", "docs taken"], rows,
                         tid=f"blend-{_slug(s.label)}", foot=foot))  # fmt: skip
    return "".join(out)


def section_samples(run: Run, per_reason: int) -> str:
    out = []
    for s in run.stages:
        if not rejected_reasons(s) and s.rejected_dir is None:
            continue
        samples = rejected_samples(s, per_reason)
        if not samples:
            if s.rejected_dir is None and rejected_reasons(s):
                out.append(
                    f"<h3>{esc(s.label)}</h3>{note('Rejected documents were not kept (run the stage with --keep-rejected to see samples).')}"
                )
            continue
        out.append(
            f'<details open class="samples"><summary>{esc(s.label)} <span class="muted">({esc(s.kind)}, {len(samples)} samples)</span></summary>'
        )
        out.append('<div class="grid">')
        for x in samples:
            meta = [
                f'<span class="reason">{esc(x.reason)}</span>',
                f'<span class="src">{esc(x.source)}</span>',
                f'<span class="id">{esc(x.id)}</span>',
            ]
            for k, v in x.extra.items():
                vv = f"{v:.3f}" if isinstance(v, float) else str(v)
                meta.append(f'<span class="kv">{esc(k)}: {esc(vv[:120])}</span>')
            more = f" … ({x.chars:,} characters)" if x.chars > len(x.text) else ""
            empty = not x.text.strip()
            body = '<span class="muted">(no text)</span>' if empty else f"{esc(x.text)}{esc(more)}"
            out.append(
                f'<div class="sample"><div class="meta">{"".join(meta)}</div><pre class="doc{" empty" if empty else ""}">{body}</pre></div>'
            )
        out.append("</div></details>")
    if not out:
        return note("No rejected documents in this run.")
    return (
        '<p class="hint">The first documents of each removal reason, text cut at 500 characters. Document text is shown as plain text.</p>'
        + "".join(out)
    )


def _flatten(d: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if not isinstance(d, dict):
        return [(prefix, d)]
    out = []
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        out.extend(_flatten(v, key) if isinstance(v, dict) and v else [(key, v)])
    return out


def section_params(run: Run) -> str:
    out = []
    for s in run.stages:
        info = f"{s.kind}, {s.path}"
        params = json.dumps(s.get("params") or {}, indent=1, sort_keys=True, default=str)
        counters = _flatten(s.get("counters") or {})
        crow = "".join(f'<tr><td>{esc(k)}</td><td class="n">{esc(fmt_int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v)}</td></tr>'
                       for k, v in counters[:200])  # fmt: skip
        ctable = f'<table class="kv"><tbody>{crow}</tbody></table>' if crow else ""
        out.append(f'<details><summary>{esc(s.label)} <span class="muted">({esc(info)})</span></summary>'
                   f'<div class="two"><div><h4>Parameters</h4><pre class="json">{esc(params)}</pre></div>'
                   f'<div><h4>Counters</h4>{ctable or note("none")}</div></div></details>')  # fmt: skip
    return "".join(out)


SECTIONS = [
    ("summary", "Overview"),
    ("funnel", "Funnel"),
    ("sources", "Per source"),
    ("languages", "Languages"),
    ("quality", "Quality scores"),
    ("filters", "Heuristic rules"),
    ("dedup", "Duplicates"),
    ("decontam", "Decontamination"),
    ("tokens", "Tokens"),
    ("blend", "Blend"),
    ("rejected", "Rejected samples"),
    ("stages", "Stage details"),
]

CSS = """
:root{--fg:#1f2933;--muted:#616e7c;--line:#e4e7eb;--bg:#f5f7fa;--accent:#2f5f8f;--head:#1c2b3a}
*{box-sizing:border-box}
body{margin:0;font:14px/1.5 -apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,"Helvetica Neue",Arial,"DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg)}
header{background:var(--head);color:#fff;padding:22px 0 18px}
header .in,main,nav .in{max-width:1200px;margin:0 auto;padding:0 28px}
header h1{margin:0;font-size:22px;font-weight:600;letter-spacing:.2px}
header p{margin:4px 0 0;color:#c5d0db;font-size:13px}
nav{background:#fff;border-bottom:1px solid var(--line);position:sticky;top:0;z-index:1}
nav .in{display:flex;flex-wrap:wrap;gap:2px 18px;padding-top:8px;padding-bottom:8px}
nav a{color:var(--accent);text-decoration:none;font-size:13px}
section{background:#fff;border:1px solid var(--line);border-radius:8px;padding:18px 24px 20px;margin:18px 0}
h2{font-size:17px;margin:0 0 12px;color:var(--head)}
h3{font-size:14px;margin:18px 0 8px;color:var(--head)}
h4{font-size:12px;margin:6px 0;color:var(--muted);text-transform:uppercase;letter-spacing:.5px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(135px,1fr));gap:12px}
.card{border:1px solid var(--line);border-radius:6px;padding:10px 14px;background:#fafbfc}
.card .k{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.4px}
.card .v{font-size:22px;font-weight:600;color:var(--head);font-variant-numeric:tabular-nums}
.card .s{font-size:12px;color:var(--muted);overflow-wrap:anywhere}
.scroll{overflow-x:auto}
table{border-collapse:collapse;min-width:50%;font-size:12.5px;margin:6px 0 4px}
table.wide{width:100%}
th{text-align:left;font-weight:600;color:var(--muted);border-bottom:2px solid var(--line);padding:6px 9px;white-space:nowrap}
td{padding:4px 9px;border-bottom:1px solid var(--line);vertical-align:top}
tbody tr:nth-child(even){background:#fafbfc}
.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.total td{font-weight:600;border-top:2px solid #cbd2d9;border-bottom:none}
.muted{color:var(--muted)}
.note{color:var(--muted);font-style:italic;margin:4px 0}
.hint{color:var(--muted);font-size:12.5px;margin:10px 0 4px}
figure{margin:4px 0 12px}
figcaption{color:var(--muted);font-size:12px;margin-top:2px}
img.chart{max-width:100%;height:auto;display:block}
.stage{font-weight:600}
.reasons{color:#7b3b3b;font-size:12px}
.reason{display:inline-block;background:#fdecea;color:#9b1c1c;border-radius:4px;padding:0 6px;font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
details{margin:6px 0;border:1px solid var(--line);border-radius:6px;padding:6px 12px}
summary{cursor:pointer;font-weight:600}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(460px,1fr));gap:2px 18px}
.sample{margin:8px 0 10px;min-width:0}
.sample .meta{display:flex;flex-wrap:wrap;gap:6px 12px;align-items:center;font-size:12px;margin-bottom:4px}
.sample .src{color:var(--accent)}
.sample .id,.sample .kv{color:var(--muted);font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0;font:12px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace}
pre.doc{background:#f8f9fb;border:1px solid var(--line);border-left:3px solid #e45756;border-radius:4px;padding:8px 10px;height:190px;overflow:auto}
pre.doc.empty{height:auto}
pre.json{background:#f8f9fb;border:1px solid var(--line);border-radius:4px;padding:8px 10px;max-height:320px;overflow:auto}
.two{display:grid;grid-template-columns:1fr 1fr;gap:16px}
table.kv td{padding:2px 8px;font-size:12px}
footer{color:var(--muted);font-size:12px;text-align:center;padding:10px 0 30px}
"""


def render(run: Run, *, title: str = "curate pipeline report", samples: int = 2) -> tuple[str, int]:
    """The page's HTML and the number of charts in it."""
    bodies = {
        "summary": section_summary(run),
        "funnel": section_funnel(run),
        "sources": section_sources(run),
        "languages": section_languages(run),
        "quality": section_quality(run),
        "filters": section_filters(run),
        "dedup": section_dedup(run),
        "decontam": section_decontam(run),
        "tokens": section_tokens(run),
        "blend": section_blend(run),
        "rejected": section_samples(run, samples),
        "stages": section_params(run),
    }
    finished = max((s.mtime for s in run.stages), default=time.time())
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(finished))
    roots = ", ".join(str(r) for r in run.roots)
    nav = "".join(f'<a href="#{sid}">{esc(name)}</a>' for sid, name in SECTIONS)
    secs = "".join(f'<section id="{sid}"><h2>{esc(name)}</h2>{bodies[sid]}</section>' for sid, name in SECTIONS)
    page = (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="curate {esc(__version__)}"><title>{esc(title)}</title><style>{CSS}</style></head>'
        f'<body><header><div class="in"><h1>{esc(title)}</h1><p>{esc(roots)} · {len(run.stages)} stages · last stage finished {esc(when)}</p>'
        f'</div></header><nav><div class="in">{nav}</div></nav><main>{secs}</main>'
        f"<footer>Made by curate {esc(__version__)} from the stages' _SUCCESS and stats files.</footer></body></html>\n"
    )
    return page, page.count('class="chart"')


def write_report(
    paths: Sequence[str | os.PathLike], out: str | os.PathLike, *, title: str | None = None, samples: int = 2
) -> dict[str, Any]:
    """Collect, render and write the page (atomically); returns a summary for the CLI."""
    from curate.storage import write_bytes_atomic

    t0 = time.monotonic()
    run = collect(paths)
    page, charts = render(run, title=title or "curate pipeline report", samples=samples)
    out = as_path(out)
    if out.is_dir():
        raise CurateError(f"{out}: is a directory; --out is the HTML file to write")
    write_bytes_atomic(out, page.encode("utf-8", "replace"))
    return {"path": str(out), "stages": [s.label for s in run.stages], "charts": charts, "bytes": len(page.encode("utf-8", "replace")),
            "seconds": round(time.monotonic() - t0, 2), "unfinished": [str(p) for p in run.unfinished]}  # fmt: skip


# =========================================================================== curate stats


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


def _one_stage(path: str | os.PathLike) -> Stage:
    p = as_path(path)
    if p.is_file() and p.name == SUCCESS:
        p = p.parent
    if p.is_dir():
        s = _stage_at(p, p.resolve().name)
        if s is not None:
            s.input_paths = _input_paths(s)
            return s
        if (p / "_params.json").exists():
            raise CurateError(f"{p}: the stage has not finished (no {SUCCESS}); run it to completion first")
        raise CurateError(f"{p}: not a finished stage directory (no {SUCCESS}); for a whole pipeline use `curate report`")
    stats = p if p.name.endswith(".stats.json") else as_path(f"{p}.stats.json")
    if stats.is_file():
        s = _prefix_stage(stats, p.name)
        if s is not None:
            s.input_paths = _input_paths(s)
            return s
        raise CurateError(f"{stats}: not the stats of a tokenized prefix")
    raise CurateError(f"{p}: no such file or directory")


def stats_lines(path: str | os.PathLike) -> list[str]:
    """The summary of one stage for the terminal: per-source flow, removal reasons, key counters."""
    s = _one_stage(path)
    r = s.record
    wall = f", {r['wall_seconds']:.1f} s wall" if isinstance(r.get("wall_seconds"), (int, float)) else ""
    cpu = f", {r['cpu_seconds']:.1f} s CPU" if isinstance(r.get("cpu_seconds"), (int, float)) else ""
    shards = f", {r['shards']} shards" if r.get("shards") else ""
    lines = [f"{s.kind}: {s.path}{shards}{wall}{cpu}"]
    if s.input_paths:
        parents = {str(as_path(x).parent) for x in s.input_paths}
        many = len(s.input_paths) > 3 and len(parents) == 1
        lines.append(f"  reads: {next(iter(parents))}/ ({len(s.input_paths)} prefixes)" if many else f"  reads: {', '.join(s.input_paths)}")
    lines.append("")
    if s.has_docs:
        rows = []
        for src in sorted(r.get("per_source") or {}):
            d = r["per_source"][src]
            rej = d.get("rejected") or {}
            rows.append([src or "(none)", fmt_int(d.get("docs_in")), fmt_int(d.get("docs_out")), fmt_pct(ratio(d.get("docs_out"), d.get("docs_in"))),
                         fmt_bytes(d.get("bytes_in")), fmt_bytes(d.get("bytes_out")), fmt_int(sum(_num(v) for v in rej.values()))])  # fmt: skip
        removed = sum(_num(v.get("docs")) for _, v in rejected_reasons(s))
        foot = ["total", fmt_int(r.get("docs_in")), fmt_int(r.get("docs_out")), fmt_pct(ratio(r.get("docs_out"), r.get("docs_in"))),
                fmt_bytes(r.get("bytes_in")), fmt_bytes(r.get("bytes_out")), fmt_int(removed)]  # fmt: skip
        lines += text_table(["source", "docs in", "docs out", "kept", "bytes in", "bytes out", "rejected"], rows, foot)
        reasons = rejected_reasons(s)
        if reasons:
            lines.append("")
            din = _num(r.get("docs_in"))
            rrows = [
                [reason, fmt_int(v.get("docs")), fmt_bytes(v.get("bytes")), fmt_pct(_num(v.get("docs")) / din if din else None)]
                for reason, v in reasons
            ]
            lines += text_table(["rejected: reason", "docs", "bytes", "of input"], rrows)
            srcs = sorted(src for src, d in (r.get("per_source") or {}).items() if isinstance(d, dict) and d.get("rejected"))
            if len(reasons) > 1 and 1 < len(srcs) <= 8:
                lines.append("")
                mrows = [
                    [reason, *[fmt_int((r["per_source"][src].get("rejected") or {}).get(reason, 0)) for src in srcs]]
                    for reason, _ in reasons
                ]
                lines += text_table(["rejected per source", *srcs], mrows)
    elif s.kind == "tokenize":
        lines += [str(x) for x in r.get("summary") or []]  # what the stage declared (and printed)
    elif s.kind == "blend":
        lines += str(r.get("table", "")).splitlines()
    elif s.kind == "download_cc":
        rows = [
            [snap, fmt_int(d.get("files")), fmt_bytes(d.get("bytes")), fmt_int(d.get("failed"))]
            for snap, d in sorted(r["snapshots"].items())
        ]
        lines += text_table(["snapshot", "WARC files", "bytes", "failed"], rows)
    extra = _stage_extra_lines(s)
    if extra:
        lines += ["", *extra]
    counters = counter_lines(r.get("counters") or {})
    if counters:
        lines += ["", "counters:", *counters[:80]]
        if len(counters) > 80:
            lines.append(f"  ... {len(counters) - 80} more lines (see {s.stats_file})")
    return lines


def _fmt_value(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    return fmt_int(v) if isinstance(v, int) or float(v).is_integer() else f"{v:,.3f}"


def counter_lines(counters: dict[str, Any], width: int = 100) -> list[str]:
    """Counters as aligned ``key  value`` lines; a dict of more than 6 numbers (a histogram) is one wrapped line."""
    items: list[tuple[str, str]] = []

    def walk(d: dict[str, Any], prefix: str) -> None:
        for k, v in d.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, dict) and v:
                if len(v) > 6 and _counts(v):
                    ordered = sorted(v.items(), key=lambda kv: _bucket_start(kv[0])) if all(
                        _bucket_start(x) != math.inf for x in v) else sorted(v.items(), key=lambda kv: (-kv[1], kv[0]))  # fmt: skip
                    items.append((key, "  ".join(f"{a} {_fmt_value(b)}" for a, b in ordered)))
                else:
                    walk(v, key)
            else:
                items.append((key, _fmt_value(v)))

    walk(counters, "")
    if not items:
        return []
    w = min(40, max(len(k) for k, _ in items))
    out = []
    for k, v in items:
        pad = " " * (w + 4)
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


def _stage_extra_lines(s: Stage) -> list[str]:
    """What the stage's own command prints after its summary line, where that exists."""
    r = s.record
    if isinstance(r.get("dedup"), dict):
        d = r["dedup"]
        sizes = ", ".join(
            f"{k}: {fmt_int(v)}" for k, v in sorted((d.get("cluster_sizes") or {}).items(), key=lambda kv: _bucket_start(kv[0]))
        )
        line = f"dedup: {fmt_int(d.get('clusters'))} clusters; sizes {sizes or 'none'}"
        if "threshold" in d:
            line += f"; Jaccard >= {d['threshold']}, {d.get('bands')} bands x {d.get('rows')} rows, verify {d.get('verify')}"
        return [line]
    declared = [str(x) for x in r.get("summary") or []][2:]  # the stage's own lines after its summary and output lines
    if s.kind == "decontam" or (r.get("counters") or {}).get("decontam_per_eval_set"):
        return ["decontam:", *declared]
    if (r.get("counters") or {}).get("score_hist"):
        return ["quality:", *declared]
    hits = rule_hits(s)
    if hits:
        return text_table(["rule set", "rule", "hits"], [[rs, rule, fmt_int(v.value)] for rs, rule, v in hits], left=2)
    lc = lang_counts(s)
    if lc is not None:
        n = sum(lc.total.values())
        rows = [[lg, fmt_int(c), fmt_pct(c / n)] for lg, c in sorted(lc.total.items(), key=lambda kv: -kv[1])[:20]]
        return text_table(["language", "docs", "share"], rows)
    return []
