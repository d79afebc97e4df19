"""Scoring (``curate quality score``): a map stage that writes each document's ``quality_score`` and keeps documents by mode.

``quality_score`` is the model's probability of the positive label, cross-fitted: from the model
of the document's fold, so the training documents themselves get scores from a model that never
saw them. Modes: ``annotate`` (keep all), ``threshold`` (score >= T) or ``pareto`` (GPT-3: keep
when a Pareto(alpha) draw exceeds ``1 - score``; see :func:`~curate.stages.quality.data.pareto_draws`
for the exact formula, seeded by (seed, id)). Models are checked and loaded by :mod:`curate.fasttext`.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from curate.dataset import Inputs, decode_texts, open_parquet, repair_utf8
from curate.errors import CurateError
from curate.fasttext import classifier, model_fingerprint, read_model_info, resolve_label
from curate.registry import stage
from curate.runtime import Batch, Counters, Decisions, DocStage, param
from curate.runtime.params import Common
from curate.runtime.stage import MapResult
from curate.runtime.stage import _result as stage_result
from curate.schema import BASE_FIELDS, STAGE_FIELDS
from curate.stages.quality.data import POS_LABEL, SCORE_NORMALIZE_MODES, fold_of, normalize_text, pareto_draws
from curate.stages.quality.train import model_file, recorded_normalize, training_record

log = logging.getLogger("curate")

MODES = ("annotate", "threshold", "pareto")
HIST_BUCKETS = 10
BUCKET_KEYS = [f"{i / HIST_BUCKETS:.1f}-{(i + 1) / HIST_BUCKETS:.1f}" for i in range(HIST_BUCKETS)]


def _bucket(scores: np.ndarray) -> np.ndarray:
    return np.minimum((scores.astype(np.float64) * HIST_BUCKETS).astype(np.int64), HIST_BUCKETS - 1)


def _histograms(sources: list[str], scores: np.ndarray, keep: np.ndarray) -> tuple[dict, dict, dict]:
    """Per source: {bucket: count} of all and of kept documents (all 10 buckets, zeros too), and the sum of scores."""
    names, inverse = np.unique(np.asarray(sources, dtype=object), return_inverse=True)
    cells = inverse.astype(np.int64) * HIST_BUCKETS + _bucket(scores)
    size = len(names) * HIST_BUCKETS
    all_counts = np.bincount(cells, minlength=size).reshape(len(names), HIST_BUCKETS)
    kept_counts = np.bincount(cells[keep], minlength=size).reshape(len(names), HIST_BUCKETS)
    sums = np.bincount(inverse, weights=scores.astype(np.float64), minlength=len(names))
    hist_all = {str(n): dict(zip(BUCKET_KEYS, map(int, row))) for n, row in zip(names, all_counts)}
    hist_kept = {str(n): dict(zip(BUCKET_KEYS, map(int, row))) for n, row in zip(names, kept_counts)}
    return hist_all, hist_kept, {str(n): float(v) for n, v in zip(names, sums)}


@dataclass
class Scorer:
    """One classifier of a ``quality score`` run: its model files (one per fold), label, text preparation and column."""

    source: str  # what --model named: a `quality train` directory (cross-fitted) or a model file
    models: list[str]
    fold_seed: int
    label: str
    normalize: str
    column: str
    fingerprint: str

    def scores(self, lines: list[str]) -> np.ndarray:
        """Scores of prepared one-line texts; cross-fitted, each by the model of its text's fold (NaN: no prediction)."""
        if len(self.models) == 1:
            return classifier(self.models[0]).probabilities(lines, self.label)
        fold = fold_of(lines, self.fold_seed, len(self.models))
        out = np.full(len(lines), np.nan, dtype=np.float32)
        for k, path in enumerate(self.models):
            rows = np.nonzero(fold == k)[0]
            if len(rows):
                out[rows] = classifier(path).probabilities([lines[i] for i in rows], self.label)
        return out


def _per_model(values: list[str], n: int, what: str) -> list[str]:
    """One value per model: given once (for all) or once per --model; a one-line error otherwise."""
    if len(values) == n:
        return list(values)
    if len(values) == 1:
        return list(values) * n
    raise CurateError(f"{len(values)} {what} for {n} models: give one (for all) or one per --model, in the order of the models")


def _scorer(model: str, label: str, normalize: str, column: str) -> Scorer:
    """Check one --model (a `quality train` directory or a model file) and its label; one-line errors before any worker starts."""
    model = str(Path(model).expanduser().absolute())  # workers (Ray tasks) run elsewhere
    trained = training_record(model) if Path(model).is_dir() else None
    if trained is not None and trained.get("folds", 1) > 1:  # cross-fitted: one model per fold
        models, fold_seed = [str(Path(model) / m) for m in trained["models"]], int(trained["fold_seed"])
    else:
        model = str(model_file(model))
        models, fold_seed = [model], 0
    for m in models:
        info = read_model_info(m)
    label = resolve_label(info, label)
    fps = [model_fingerprint(m) for m in models]
    fingerprint = fps[0] if len(fps) == 1 else hashlib.sha256(" ".join(fps).encode()).hexdigest()[:16]
    if normalize == "auto":
        normalize = recorded_normalize(model) or "none"
    return Scorer(model, models, fold_seed, label, normalize, column, fingerprint)


_RESERVED = {f.name for f in BASE_FIELDS} | (set(STAGE_FIELDS) - {"quality_score"})


@stage("quality score", section="select", order=41)
@dataclass
class QualityStage(DocStage):
    """Score documents with fastText classifiers (quality_score, or a column per model) and keep them by mode.

    pareto keeps a document when (1 - u)^(-1/alpha) - 1 > 1 - score, u = (xxh64(id, seed) >> 11) / 2^53:
    with probability (2 - score)^-alpha, the same documents for any sharding or --workers.
    Dropped documents get reason `quality` (`unscored`: no score, e.g. an empty text).
    Score only CommonCrawl with --only-sources 'cc/*' (other documents pass through, scores empty).
    Several --model options score in one pass, each into its --column (the first one's score
    decides the mode). _SUCCESS holds per-source histograms (of the first column).

    \b
    Examples:
      curate quality score --in out/cc_extract --out out/quality --model out/quality_model \\
          --only-sources 'cc/*' --mode pareto --seed 1
      curate quality score --in out/cc --out out/scored --model fasttext_oh_eli5.bin --label __label__hq \\
          --normalize dclm --column dclm_score --model out/quality_model --label hq --normalize auto --column ours
    """

    name: ClassVar[str] = "quality"
    title: ClassVar[str] = "quality score"
    sections: ClassVar[dict[str, str]] = {"quality": "counters.score_hist", "quality_model": "params.model"}
    model: list[str] = param(help="The directory `quality train --out` wrote (cross-fitted: each document is scored by the model of "
                             "its fold, which never trained on it), or one fastText classifier (.bin or .ftz). Repeatable: "
                             "several classifiers in one pass, each with its --label, --normalize and --column (in order).",
                             metavar="DIR|FILE", required=True, multiple=True)  # fmt: skip
    label: list[str] = param([POS_LABEL], "The model's positive label: its score is the label's probability "
                             "(e.g. __label__hq for DCLM's fasttext_oh_eli5). Once for all models or once per --model.",
                             metavar="NAME", multiple=True)  # fmt: skip
    column: list[str] = param([], "The float32 column of each model's score [default: quality_score; several models: required, one "
                              "per --model]. It must not exist in the input.", metavar="NAME", multiple=True,
                              show_default=False)  # fmt: skip
    mode: str = param("annotate", "annotate: keep all; threshold: keep score >= T; pareto: keep when pareto(alpha) > 1 - score (GPT-3).",
                      choices=MODES)  # fmt: skip
    threshold: float = param(0.5, "Threshold of --mode threshold.", min=0.0, max=1.0, relevant=lambda s: s.mode == "threshold")
    alpha: float = param(9.0, "Pareto shape of --mode pareto.", min=0.0, min_open=True, relevant=lambda s: s.mode == "pareto")
    seed: int = param(0, "Seed of --mode pareto (with each document's id).", relevant=lambda s: s.mode == "pareto")
    normalize: list[str] = param(["auto"], "Text preparation before scoring, once for all models or once per --model; auto: the "
                                 "one in the model's metrics (written by `quality train`), else none (whitespace and newlines "
                                 "folded only, as datatrove's classifier filter does); dclm: newlines to spaces and nothing else, "
                                 "as DCLM scores with its classifier. Use what the model was trained on.",
                                 choices=("auto", *SCORE_NORMALIZE_MODES), multiple=True)  # fmt: skip

    def __post_init__(self) -> None:
        if isinstance(self.model, str):
            self.model = [self.model]
        self.label, self.normalize, self.column = (
            [v] if isinstance(v, str) else list(v) for v in (self.label, self.normalize, self.column)
        )
        if self.mode not in MODES:
            raise CurateError(f"unknown mode {self.mode!r}; choose one of: {', '.join(MODES)}")
        for n in self.normalize:
            if n != "auto" and n not in SCORE_NORMALIZE_MODES:
                raise CurateError(f"unknown normalisation {n!r}; choose one of: auto, {', '.join(SCORE_NORMALIZE_MODES)}")
        if not 0.0 <= self.threshold <= 1.0:
            raise CurateError(f"--threshold must be between 0 and 1, got {self.threshold}")
        if not self.alpha > 0:
            raise CurateError(f"--alpha must be positive, got {self.alpha}")
        n = len(self.model)
        if not n:
            raise CurateError("no --model given")
        columns = self.column or (["quality_score"] if n == 1 else [])
        if len(columns) != n:
            raise CurateError(f"{len(columns)} --column values for {n} models: name each model's score column, once per --model")
        for c in columns:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", c) or c in _RESERVED:
                raise CurateError(f"--column {c!r}: not a name a score column can take (a letter or _, then letters, digits or _; "
                                  "not a column curate writes)")  # fmt: skip
        if len(set(columns)) != n:
            raise CurateError(f"--column names a column twice: {', '.join(columns)}")
        labels, norms = _per_model(self.label, n, "--label values"), _per_model(self.normalize, n, "--normalize values")
        self.scorers = [_scorer(m, lab, nm, c) for m, lab, nm, c in zip(self.model, labels, norms, columns)]
        self._auto = [asked == "auto" for asked in norms]
        self.model = [s.source for s in self.scorers]
        self.label = [s.label for s in self.scorers]
        self.normalize = [s.normalize for s in self.scorers]
        self.column = columns

    def derived_params(self) -> dict[str, Any]:
        """The models by content (fingerprint) and how many folds they score; one model's settings as single values."""
        first = self.scorers[0]
        if len(self.scorers) == 1:  # as before several models: a quality_model path, a label, a normalisation
            p: dict[str, Any] = {"model": self.model[0], "label": first.label, "normalize": first.normalize,
                                 "column": first.column, "model_fingerprint": first.fingerprint}  # fmt: skip
            if len(first.models) > 1:
                p["folds"] = len(first.models)
            return p
        return {"model": self.model[0], "models": list(self.model), "model_fingerprint": [s.fingerprint for s in self.scorers],
                "folds": [len(s.models) for s in self.scorers]}  # fmt: skip

    def inputs(self, common: Common) -> Inputs:
        """The inputs, checked to hold none of the score columns (one-line error naming it)."""
        inputs = super().inputs(common)
        seen: set[str] = set()
        for f in inputs.files:
            if str(f.parent) in seen and f not in inputs.foreign:
                continue
            seen.add(str(f.parent))
            names = set(open_parquet(f).schema_arrow.names)
            for c in self.column:
                if c in names and (c != "quality_score" or self.column != ["quality_score"] or len(self.scorers) > 1):
                    raise CurateError(f"{f}: the input already has a column {c!r}; name another with --column")
        for s, auto in zip(self.scorers, self._auto):  # logged once all is checked: an error stays the only line
            if auto:
                how = " (from the model's metrics)" if recorded_normalize(s.source) else ""
                log.info("quality score: %s: text normalisation %s%s", s.column, s.normalize, how)
        return inputs

    def summary(self, record: dict[str, Any]) -> list[str]:
        return [*super().summary(record), *score_lines(record)]

    def scores(self, texts: list[str | None]) -> np.ndarray:
        """The first model's scores of ``texts`` (NaN: not scored)."""
        return self._score_all(texts)[0][0]

    def _score_all(self, texts: list[str | None]) -> tuple[list[np.ndarray], Counters]:
        """Every model's scores of ``texts`` (None: invalid UTF-8), and why some are NaN (per column: reason -> documents)."""
        unscored = Counters()
        prepared: dict[str, list[str]] = {}
        out = []
        invalid = np.array([t is None for t in texts], dtype=bool)
        for s in self.scorers:
            if s.normalize not in prepared:
                prepared[s.normalize] = [normalize_text(t, s.normalize) if t is not None else "" for t in texts]
            lines = prepared[s.normalize]
            empty = np.array([not line.strip() for line in lines], dtype=bool) & ~invalid
            rows = np.nonzero(~(empty | invalid))[0]
            scores = np.full(len(texts), np.nan, dtype=np.float32)
            if len(rows):
                scores[rows] = s.scores([lines[i] for i in rows])
            none = np.isnan(scores) & ~empty & ~invalid
            for reason, mask in (("invalid_utf8", invalid), ("empty", empty), ("no_prediction", none)):
                if mask.any():
                    unscored.add(s.column, reason, n=int(mask.sum()))
            out.append(scores)
        return out, unscored

    def __call__(self, table: pa.Table) -> MapResult:
        """As DocStage, but text that is not valid UTF-8 is kept, repaired, and gets NaN scores (counted), not a guess."""
        counters = Counters()
        decoded = decode_texts(table.column("text"))
        if any(t is None for t in decoded):
            table, repaired = repair_utf8(table)
            counters["invalid_utf8_repaired"] = repaired
        d = self.decide_batch(Batch(table, decoded))  # type: ignore[arg-type]
        counters.merge(d.counters)
        return stage_result(table, d, counters)

    def decide_batch(self, batch: Batch) -> Decisions:
        table = batch.table
        n = table.num_rows
        ids = table.column("id").to_pylist()
        if n:
            all_scores, unscored = self._score_all(batch.texts)  # type: ignore[arg-type]
        else:
            all_scores, unscored = [np.zeros(0, dtype=np.float32) for _ in self.scorers], Counters()
        scores = all_scores[0]
        scored = ~np.isnan(scores)
        if self.mode == "threshold":
            keep = scores >= np.float32(self.threshold)
        elif self.mode == "pareto":
            keep = pareto_draws(ids, self.seed, self.alpha) > 1.0 - scores.astype(np.float64)
        else:
            keep = np.ones(n, dtype=bool)
        sources = [s or "" for s in batch.column("source")]
        hist_all, hist_kept, score_sum = _histograms([s for s, ok in zip(sources, scored) if ok], scores[scored], keep[scored])
        counters = Counters(scored=int(scored.sum()), score_hist={"all": hist_all, "kept": hist_kept}, score_sum=score_sum)
        if unscored:
            counters["unscored"] = dict(unscored)
        if self.mode == "pareto":
            counters["pareto_expected_kept"] = float(np.sum((2.0 - scores[scored].astype(np.float64)) ** -self.alpha))
        reasons = [None if k else ("quality" if ok else "unscored") for k, ok in zip(keep.tolist(), scored.tolist())]
        columns: dict[Any, Any] = {}
        for s, sc in zip(self.scorers, all_scores):
            key: Any = "quality_score" if s.column == "quality_score" else pa.field(s.column, pa.float32())
            columns[key] = pa.array(sc, type=pa.float32())
        return Decisions(reasons, columns=columns, counters=counters)


def score_lines(record: dict[str, Any]) -> list[str]:
    """Per-source lines for the CLI: documents scored, mean score, kept, and a 10-bucket histogram."""
    c = record.get("counters", {})
    hist_all = c.get("score_hist", {}).get("all", {})
    hist_kept = c.get("score_hist", {}).get("kept", {})
    lines = []
    for src in sorted(hist_all):
        counts = [hist_all[src].get(k, 0) for k in BUCKET_KEYS]
        n = sum(counts)
        kept = sum(hist_kept.get(src, {}).get(k, 0) for k in BUCKET_KEYS)
        mean = c.get("score_sum", {}).get(src, 0.0) / n if n else 0.0
        pct = f" ({100.0 * kept / n:.1f}%)" if n else ""
        lines.append(f"  {src}: {n:,} scored, mean score {mean:.3f}, kept {kept:,}{pct}; per 0.1: {' '.join(map(str, counts))}")
    if "pareto_expected_kept" in c:
        lines.append(f"  pareto: {c['pareto_expected_kept']:.1f} documents expected to be kept, sum of (2 - score)^-alpha")
    for col, reasons in sorted((c.get("unscored") or {}).items()):
        lines.append(f"  {col}: not scored (NaN): " + ", ".join(f"{r} {n:,}" for r, n in sorted(reasons.items())))
    if c.get("passed_through"):
        lines.append(f"  passed through unscored (--only-sources): {c['passed_through']:,}")
    return lines
