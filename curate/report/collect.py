"""The finished stages of a pipeline run, in order, and what each declares it feeds.

``collect(paths)`` finds the finished stages (a pipeline root holding one directory per
stage, or stage directories, or tokenized prefixes), reads each ``_SUCCESS`` (or
``PREFIX.stats.json``) and orders the stages by the inputs graph their parameters record
(ties broken by the usual pipeline order, then by finishing time).

What a stage feeds is what its record declares: ``sections`` maps a report section to a
dotted path into the record (langid: ``{"languages": "counters.lang", ...}``). Records
written before stages declared it fall back by stage name (:data:`LEGACY_SECTIONS`). Nothing
here looks at the shape of counters to guess what a stage is, and no stage module is
imported: a new stage is reported from its generic fields and declarations alone.
"""

from __future__ import annotations

import heapq
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from curate.errors import CurateError
from curate.report.fmt import FORMATS, fmt_int, num
from curate.storage import as_path

SUCCESS = "_SUCCESS"
#: The pipeline order of stage names (docs/design.md); breaks ties between stages the inputs graph does not order.
PIPELINE_RANK = {
    "download_pile": 0,
    "download_cc": 0,
    "extract": 1,
    "clean": 2,
    "langid": 3,
    "filter": 4,
    "quality_train": 4.5,
    "quality": 5,
    "dedup_exact": 6,
    "dedup_fuzzy": 7,
    "decontam": 8,
    "tokenize": 9,
    "blend": 10,
}
#: What a record without ``sections`` (written before stages declared them) feeds, by its ``stage``.
LEGACY_SECTIONS: dict[str, dict[str, str]] = {
    "langid": {"languages": "counters.lang", "language_scores": "counters.score"},
    "filter": {"rules": "counters.rules", "lines": "counters.lines"},
    "quality": {"quality": "counters.score_hist", "quality_model": "params.model"},
    "quality_train": {"quality_model": "valid"},
    "dedup_exact": {"dedup": "dedup"},
    "dedup_fuzzy": {"dedup": "dedup"},
    "decontam": {"decontam": "counters.decontam_per_eval_set", "decontam_index": "decontam"},
    "tokenize": {"tokens": "per_source"},
    "blend": {"blend": "rows"},
}


@dataclass
class Val:
    """A number shown in the page; ``file``/``key`` say where in which stats file it was read."""

    value: Any
    file: Path | None = None
    key: tuple[Any, ...] | None = None
    fmt: str = "int"

    @property
    def text(self) -> str:
        return FORMATS.get(self.fmt, fmt_int)(self.value)

    @property
    def sourced(self) -> bool:
        return self.file is not None and self.key is not None

    @property
    def data_key(self) -> str:
        return json.dumps(list(self.key or ()))

    @property
    def data_value(self) -> str:
        return json.dumps(self.value)

    @property
    def title(self) -> str | None:
        return f"{int(self.value):,} bytes" if self.fmt == "bytes" and self.value is not None else None


@dataclass
class Section:
    """What one stage feeds one report section: the data at the declared path of its record."""

    stage: Stage
    name: str
    path: tuple[str, ...]
    data: Any

    def val(self, *keys: Any, fmt: str = "int", default: Any = 0) -> Val:
        return self.stage.val(*self.path, *keys, fmt=fmt, default=default)

    def beside(self, key: str) -> Any:
        """A field next to the data (same parent), e.g. ``counters.score_sum`` beside ``counters.score_hist``."""
        return self.stage.get(*self.path[:-1], key)

    def beside_val(self, key: str, fmt: str = "int") -> Val | None:
        v = self.beside(key)
        return None if v is None or isinstance(v, (dict, list)) else self.stage.val(*self.path[:-1], key, fmt=fmt)


@dataclass
class Stage:
    """One finished stage: its directory (or tokenized prefix), name and record."""

    label: str
    path: Path
    name: str
    record: dict[str, Any]
    stats_file: Path | None
    mtime: float
    input_paths: list[str] = field(default_factory=list)  # what its parameters say it read (labels such as pos: removed)
    inputs: list[str] = field(default_factory=list)  # labels of the upstream stages found

    def get(self, *keys: Any, default: Any = None) -> Any:
        """The value at a key path of the record (list items by index), or ``default``."""
        node: Any = self.record
        for k in keys:
            if isinstance(node, dict) and k in node or isinstance(node, list) and isinstance(k, int) and 0 <= k < len(node):
                node = node[k]
            else:
                return default
        return node

    def val(self, *keys: Any, fmt: str = "int", default: Any = 0) -> Val:
        """A number of this stage's record, with where it came from (``default`` when absent: no source)."""
        v = self.get(*keys)
        if v is None or isinstance(v, (dict, list)):
            return Val(default, fmt=fmt)
        return Val(v, self.stats_file, tuple(keys), fmt)

    @property
    def title(self) -> str:
        return str(self.record.get("title") or self.name.replace("_", " "))

    @property
    def who(self) -> str:
        """The label, with the command when that says more (``dedup (dedup exact)``)."""
        return self.label if self.title in (self.label, self.name) else f"{self.label} ({self.title})"

    @property
    def has_docs(self) -> bool:
        return "docs_in" in self.record and "docs_out" in self.record

    @property
    def rejected_dir(self) -> Path | None:
        d = self.path / "_rejected"
        return d if self.path.is_dir() and d.is_dir() else None

    @property
    def rank(self) -> float:
        return PIPELINE_RANK.get(self.name, 5.5)

    @property
    def declared(self) -> bool:
        """Whether the record says what it feeds (else :data:`LEGACY_SECTIONS` by name)."""
        return isinstance(self.record.get("sections"), dict) and bool(self.record["sections"])

    @property
    def sections(self) -> dict[str, str]:
        """Report section -> dotted path into the record: the record's declaration, else the fallback by stage name."""
        if self.declared:
            return {str(k): str(v) for k, v in self.record["sections"].items()}
        return dict(LEGACY_SECTIONS.get(self.name, {}))

    def section(self, name: str) -> Section | None:
        """What this stage feeds section ``name`` (None when it declares nothing for it, or the path holds nothing)."""
        path = self.sections.get(name)
        if not path:
            return None
        keys = tuple(path.split("."))
        data = self.get(*keys)
        return None if data is None else Section(self, name, keys, data)

    @property
    def summary(self) -> list[str]:
        return [str(x) for x in self.record.get("summary") or []]

    def per_source(self) -> dict[str, dict[str, Any]]:
        """The generic per-source flow (docs/bytes in and out, rejected) of a stage with documents."""
        per = self.get("per_source") or {}
        return {str(k): v for k, v in per.items() if isinstance(v, dict) and "docs_in" in v} if self.has_docs else {}


@dataclass
class Run:
    """The stages of a pipeline run, in pipeline order."""

    roots: list[Path]
    stages: list[Stage]
    unfinished: list[Path] = field(default_factory=list)

    def get(self, label: str) -> Stage:
        return next(s for s in self.stages if s.label == label)

    def feeding(self, name: str) -> list[Section]:
        """Every stage's data for report section ``name``, in pipeline order."""
        return [sec for s in self.stages if (sec := s.section(name)) is not None]

    @property
    def doc_stages(self) -> list[Stage]:
        return [s for s in self.stages if s.has_docs]

    @property
    def sources(self) -> list[str]:
        out: set[str] = set()
        for s in self.doc_stages:
            out.update(s.per_source())
        for sec in self.feeding("tokens"):
            if isinstance(sec.data, dict):
                out.update(str(k) for k in sec.data)
        for sec in self.feeding("blend"):
            out.update(str(r.get("name", "")) for r in sec.data or [] if isinstance(r, dict))
        return sorted(x for x in out if x)

    def at(self, raw: str, near: Stage | None = None) -> Stage | None:
        """The stage a path (an input, a model) names: the stage directory it is, or lies in."""
        return _resolve_input(raw, near, self)

    def downstream(self, s: Stage) -> list[Stage]:
        """Every stage that read ``s``, directly or not, in pipeline order."""
        found = {s.label}
        out = []
        for t in self.stages:
            if t.label not in found and any(i in found for i in t.inputs):
                found.add(t.label)
                out.append(t)
        return out

    def upstream(self, s: Stage) -> list[Stage]:
        """``s`` and every stage it read, directly or not, in pipeline order."""
        by_label = {t.label: t for t in self.stages}
        todo, seen = [s.label], {s.label}
        while todo:
            for i in by_label[todo.pop()].inputs:
                if i in by_label and i not in seen:
                    seen.add(i)
                    todo.append(i)
        return [t for t in self.stages if t.label in seen]


# --------------------------------------------------------------------------- reading records


def read_record(path: Path) -> dict[str, Any]:
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
    """The records ``curate download cc`` leaves in DIR/_download/ (one per snapshot) as one stage record."""
    snaps: dict[str, dict[str, Any]] = {}
    summary: list[str] = []
    for f in sorted(d.glob("*.json")):
        try:
            r = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(r, dict) and "snapshot" in r:
            snaps[r["snapshot"]] = {k: r.get(k) for k in ("segments", "downloaded", "present", "failed", "bytes", "wall_seconds")}
            snaps[r["snapshot"]]["files"] = len(r.get("files") or [])
            summary += [str(x) for x in r.get("summary") or []]
    if not snaps:
        return None
    return {
        "stage": "download_cc",
        "title": "download cc",
        "snapshots": snaps,
        "files": sum(s["files"] for s in snaps.values()),
        "bytes_out": sum(int(s.get("bytes") or 0) for s in snaps.values()),
        "wall_seconds": round(sum(num(s.get("wall_seconds")) for s in snaps.values()), 3),
        "params": {},
        "summary": summary
        or [f"{snap}: {fmt_int(s['files'])} WARC files, {fmt_int(s.get('bytes'))} bytes" for snap, s in sorted(snaps.items())],
    }


def stage_at(p: Path, label: str) -> Stage | None:
    """The stage a directory holds, if it is a finished one (``_SUCCESS``, or a CommonCrawl download)."""
    if (p / SUCCESS).is_file():
        f = p / SUCCESS
        rec = read_record(f)
        return Stage(label, p, str(rec.get("stage") or "unknown"), rec, f, f.stat().st_mtime)
    if (p / "_download").is_dir():
        rec = _download_cc_record(p / "_download")
        if rec is not None:
            return Stage(label, p, "download_cc", rec, None, (p / "_download").stat().st_mtime)
    return None


def prefix_stage(stats: Path, label: str) -> Stage | None:
    """A prefix a stage wrote (``PREFIX.stats.json`` of ``curate tokenize --out PREFIX``) as a stage."""
    try:
        rec = json.loads(stats.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or "source" in rec or not rec.get("stage"):
        return None  # per-source prefixes belong to their directory's _SUCCESS
    if "fingerprint" not in rec and rec.get("stage") != "tokenize":
        return None  # not a stage's record (a blend's PREFIX.stats.json beside its _SUCCESS)
    prefix = as_path(str(stats)[: -len(".stats.json")])
    return Stage(label, prefix, str(rec["stage"]), rec, stats, stats.stat().st_mtime)


def collect(paths: Iterable[str | os.PathLike]) -> Run:
    """Find the finished stages under ``paths`` and order them by the pipeline's inputs graph."""
    roots: list[Path] = []
    found: dict[Path, Stage] = {}
    unfinished: list[Path] = []

    def add(stage: Stage | None) -> bool:
        if stage is None:
            return False
        found.setdefault(stage.path.resolve(), stage)
        return True

    for raw in paths:
        p = as_path(raw)
        roots.append(p)
        if p.is_file():
            if p.name == SUCCESS:
                add(stage_at(p.parent, p.parent.name))
            elif not (p.name.endswith(".stats.json") and add(prefix_stage(p, p.name[: -len(".stats.json")]))):
                raise CurateError(f"{p}: not a stage directory, _SUCCESS or PREFIX.stats.json file")
            continue
        if not p.exists():
            stats = as_path(f"{p}.stats.json")
            if stats.is_file() and add(prefix_stage(stats, p.name)):
                continue
            raise CurateError(f"{p}: no such file or directory")
        if add(stage_at(p, p.resolve().name)):
            continue
        n = 0
        for child in sorted(p.iterdir()):
            if child.name.startswith((".", "_")):
                continue
            if child.is_dir():
                if add(stage_at(child, child.name)):
                    n += 1
                    continue
                for stats in sorted(child.glob("*.stats.json")):
                    n += add(prefix_stage(stats, f"{child.name}/{stats.name[: -len('.stats.json')]}"))
                if (child / "_params.json").exists():
                    unfinished.append(child)
            elif child.name.endswith(".stats.json"):
                n += add(prefix_stage(child, child.name[: -len(".stats.json")]))
        if n == 0:
            if (p / "_params.json").exists():
                raise CurateError(f"{p}: the stage has not finished (no {SUCCESS}); run it to completion first")
            raise CurateError(f"{p}: no finished stage here (no {SUCCESS} in it or in its subdirectories)")
    stages = list(found.values())
    _unique_labels(stages)
    run = Run(roots, stages, unfinished)
    _link(run)
    run.stages = _order(stages)
    return run


def _unique_labels(stages: list[Stage]) -> None:
    seen: dict[str, int] = {}
    for s in stages:
        seen[s.label] = seen.get(s.label, 0) + 1
    for s in stages:
        if seen[s.label] > 1:
            s.label = f"{s.path.parent.name}/{s.label}"


_LABELLED = re.compile(r"^[A-Za-z_][\w-]*:(?!//)(.+)$")  # "pos:/data/clean" (quality train); not "s3://..."


def input_path(name: str) -> str:
    """The path of a recorded input name (``pos:out/clean`` -> ``out/clean``)."""
    m = _LABELLED.match(name)
    return m.group(1) if m and len(name.split(":", 1)[0]) > 1 else name


def recorded_inputs(s: Stage) -> list[str]:
    inputs = s.get("params", "inputs") or []
    return [input_path(str(i)) for i in (inputs if isinstance(inputs, list) else [inputs])]


def _link(run: Run) -> None:
    """Fill each stage's ``inputs`` with the labels of the stages it read (by path, else by directory name)."""
    for s in run.stages:
        s.input_paths = recorded_inputs(s)
        labels: list[str] = []
        for raw in s.input_paths:
            target = _resolve_input(raw, s, run)
            if target is not None and target is not s and target.label not in labels:
                labels.append(target.label)
        s.inputs = labels


def candidates(raw: str, s: Stage | None, roots: list[Path]) -> list[Path]:
    """Where a recorded (possibly relative) path may be now: as written, beside the stage, under the roots."""
    m = re.search(r"[*?\[]", raw)
    base = as_path(raw[: m.start()]).parent if m else as_path(raw)
    if base.is_absolute():
        return [base]
    near = [s.path.parent / base] if s is not None else []
    return [Path.cwd() / base, *near, *(r / base for r in roots), *(r.parent / base for r in roots)]


def _resolve_input(raw: str, s: Stage | None, run: Run) -> Stage | None:
    index = {t.path.resolve(): t for t in run.stages}
    for c in candidates(raw, s, run.roots):
        for up in [c, *list(c.parents)[:3]]:
            try:
                hit = index.get(up.resolve())
            except OSError:
                hit = None
            if hit is not None:
                return hit
    base = as_path(re.split(r"[*?\[]", raw, maxsplit=1)[0])
    named = [t for t in run.stages if t.path.name in (base.name, base.parent.name)]
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


def one_stage(path: str | os.PathLike) -> Stage:
    """The stage at one directory, ``_SUCCESS`` or prefix (``curate stats``)."""
    p = as_path(path)
    if p.is_file() and p.name == SUCCESS:
        p = p.parent
    if p.is_dir():
        s = stage_at(p, p.resolve().name)
        if s is not None:
            s.input_paths = recorded_inputs(s)
            return s
        if (p / "_params.json").exists():
            raise CurateError(f"{p}: the stage has not finished (no {SUCCESS}); run it to completion first")
        raise CurateError(f"{p}: not a finished stage directory (no {SUCCESS}); for a whole pipeline use `curate report`")
    stats = p if p.name.endswith(".stats.json") else as_path(f"{p}.stats.json")
    if stats.is_file():
        s = prefix_stage(stats, p.name)
        if s is not None:
            s.input_paths = recorded_inputs(s)
            return s
        raise CurateError(f"{stats}: not the stats of a stage's prefix")
    raise CurateError(f"{p}: no such file or directory")


# --------------------------------------------------------------------------- generic numbers


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
    """What went into and came out of a stage: the generic fields, else what its tokens or blend section holds."""
    if s.has_docs:
        return Flow(s.val("docs_in"), s.val("docs_out"), s.val("bytes_in", fmt="bytes"), s.val("bytes_out", fmt="bytes"))
    f = Flow(bytes_out=s.val("bytes_out", fmt="bytes") if s.get("bytes_out") is not None else None)
    tok = s.section("tokens")
    if tok is not None:
        skipped = tok.beside("skipped")
        skipped_n = sum(num(v) for v in skipped.values()) if isinstance(skipped, dict) else 0
        docs = tok.beside_val("documents")
        f.docs_in = Val(num(docs.value) + skipped_n) if docs is not None and skipped_n else docs
        f.docs_out, f.bytes_in, f.tokens_out = docs, tok.beside_val("bytes", "bytes"), tok.beside_val("tokens")
    blend = s.section("blend")
    if blend is not None and isinstance(blend.data, list):
        rows = [r for r in blend.data if isinstance(r, dict)]
        f.docs_in = Val(sum(int(num(r.get("documents"))) for r in rows))
        f.tokens_in = Val(sum(int(num(r.get("tokens_available"))) for r in rows))
        f.docs_out = blend.beside_val("documents")
        f.tokens_out = blend.beside_val("tokens") or blend.beside_val("total_tokens")
    return f


def rejected_reasons(s: Stage) -> list[tuple[str, dict[str, Any]]]:
    """``(reason, {docs, bytes})`` by documents, most first."""
    rej = s.get("rejected") or {}
    return sorted(((r, v) for r, v in rej.items() if isinstance(v, dict)), key=lambda kv: (-int(num(kv[1].get("docs"))), kv[0]))


def removed(d: dict[str, Any]) -> float:
    """Documents a stage removed from one source (its per-source ``rejected`` counts)."""
    return sum(num(v) for v in (d.get("rejected") or {}).values())


def first_stages(run: Run) -> list[Stage]:
    """Stages with documents that no other found stage feeds: where documents enter the pipeline."""
    doc_labels = {s.label for s in run.doc_stages}
    return [s for s in run.doc_stages if not any(i in doc_labels for i in s.inputs)]


def last_stages(run: Run) -> list[Stage]:
    """Stages with documents that no other found stage with documents reads: where documents leave as documents."""
    read = {i for s in run.doc_stages for i in s.inputs}
    return [s for s in run.doc_stages if s.label not in read]


def bucket_start(key: str) -> float:
    m = re.match(r"\s*([0-9.]+)", str(key))
    try:
        return float(m.group(1)) if m else float("inf")
    except ValueError:
        return float("inf")


def counts(node: Any) -> dict[str, int] | None:
    """A mapping of names to numbers (a histogram, documents per language), else None."""
    if isinstance(node, dict) and node and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in node.values()):
        return {str(k): int(v) for k, v in node.items()}
    return None


def flatten(d: Any, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """``(key path, value)`` pairs of the leaves of a nested mapping."""
    if not isinstance(d, dict):
        return [(prefix, d)]
    out: list[tuple[tuple[str, ...], Any]] = []
    for k, v in d.items():
        key = (*prefix, str(k))
        out.extend(flatten(v, key) if isinstance(v, dict) and v else [(key, v)])
    return out
