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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from curate.errors import CurateError
from curate.fasttext import classifier, model_fingerprint, read_model_info, resolve_label
from curate.registry import stage
from curate.runtime import Batch, Counters, Decisions, DocStage, param
from curate.stages.quality.data import NORMALIZE_MODES, POS_LABEL, fold_of, normalize_text, pareto_draws
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


@stage("quality score", section="select", order=41)
@dataclass
class QualityStage(DocStage):
    """Score documents with a fastText classifier (quality_score) and keep them by mode.

    pareto keeps a document when (1 - u)^(-1/alpha) - 1 > 1 - score, u = (xxh64(id, seed) >> 11) / 2^53:
    with probability (2 - score)^-alpha, the same documents for any sharding or --workers.
    Dropped documents get reason `quality`. Score only CommonCrawl with --only-sources 'cc/*'
    (other documents pass through, quality_score empty). _SUCCESS holds per-source histograms.

    \b
    Examples:
      curate quality score --in out/cc_extract --out out/quality --model out/quality_model \\
          --only-sources 'cc/*' --mode pareto --seed 1
      curate quality score --in out/cc --out out/dclm --model fasttext_oh_eli5.bin --label __label__hq \\
          --normalize none --mode annotate
    """

    name: ClassVar[str] = "quality"
    title: ClassVar[str] = "quality score"
    sections: ClassVar[dict[str, str]] = {"quality": "counters.score_hist", "quality_model": "params.model"}
    model: str = param(help="The directory `quality train --out` wrote (cross-fitted: each document is scored by the model of its "
                       "fold, which never trained on it), or one fastText classifier (.bin or .ftz).", metavar="DIR|FILE",
                       required=True)  # fmt: skip
    label: str = param(POS_LABEL, "The model's positive label: quality_score is its probability "
                       "(e.g. __label__hq for DCLM's fasttext_oh_eli5).", metavar="NAME")  # fmt: skip
    mode: str = param("annotate", "annotate: keep all; threshold: keep score >= T; pareto: keep when pareto(alpha) > 1 - score (GPT-3).",
                      choices=MODES)  # fmt: skip
    threshold: float = param(0.5, "Threshold of --mode threshold.", min=0.0, max=1.0, relevant=lambda s: s.mode == "threshold")
    alpha: float = param(9.0, "Pareto shape of --mode pareto.", min=0.0, min_open=True, relevant=lambda s: s.mode == "pareto")
    seed: int = param(0, "Seed of --mode pareto (with each document's id).", relevant=lambda s: s.mode == "pareto")
    normalize: str = param("auto", "Text normalisation before scoring; auto: the one in the model's metrics (written by `quality train`), "
                           "else none (whitespace and newlines folded only, as datatrove's classifier filter does; use what the "
                           "model was trained on).", choices=("auto", *NORMALIZE_MODES))  # fmt: skip

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise CurateError(f"unknown mode {self.mode!r}; choose one of: {', '.join(MODES)}")
        if self.normalize != "auto" and self.normalize not in NORMALIZE_MODES:
            raise CurateError(f"unknown normalisation {self.normalize!r}; choose one of: {', '.join(NORMALIZE_MODES)}")
        if not 0.0 <= self.threshold <= 1.0:
            raise CurateError(f"--threshold must be between 0 and 1, got {self.threshold}")
        if not self.alpha > 0:
            raise CurateError(f"--alpha must be positive, got {self.alpha}")
        self.model = str(Path(self.model).expanduser().absolute())  # workers (Ray tasks) run elsewhere
        trained = training_record(self.model) if Path(self.model).is_dir() else None
        if trained is not None and trained.get("folds", 1) > 1:  # cross-fitted: one model per fold
            self.fold_models = [str(Path(self.model) / m) for m in trained["models"]]
            self.fold_seed = int(trained["fold_seed"])
        else:
            self.model = str(model_file(self.model))
            self.fold_models = [self.model]
            self.fold_seed = 0
        for m in self.fold_models:
            info = read_model_info(m)  # one-line errors before any worker starts
        self.label = resolve_label(info, self.label)
        fps = [model_fingerprint(m) for m in self.fold_models]
        self.fingerprint = fps[0] if len(fps) == 1 else hashlib.sha256(" ".join(fps).encode()).hexdigest()[:16]
        if self.normalize == "auto":
            recorded = recorded_normalize(self.model)
            self.normalize = recorded or "none"
            log.info("quality score: text normalisation %s%s", self.normalize, " (from the model's metrics)" if recorded else "")

    def derived_params(self) -> dict[str, Any]:
        """The models by content (fingerprint) and how many folds they score."""
        p: dict[str, Any] = {"model_fingerprint": self.fingerprint}
        if len(self.fold_models) > 1:
            p["folds"] = len(self.fold_models)
        return p

    def summary(self, record: dict[str, Any]) -> list[str]:
        return [*super().summary(record), *score_lines(record)]

    def scores(self, texts: list[str | None]) -> np.ndarray:
        """Scores of ``texts``; cross-fitted, each by the model of its text's fold."""
        lines = [normalize_text(t or "", self.normalize) for t in texts]
        if len(self.fold_models) == 1:
            return classifier(self.fold_models[0]).probabilities(lines, self.label)
        fold = fold_of(lines, self.fold_seed, len(self.fold_models))
        out = np.zeros(len(lines), dtype=np.float32)
        for k, path in enumerate(self.fold_models):
            rows = np.nonzero(fold == k)[0]
            if len(rows):
                out[rows] = classifier(path).probabilities([lines[i] for i in rows], self.label)
        return out

    def decide_batch(self, batch: Batch) -> Decisions:
        table = batch.table
        n = table.num_rows
        ids = table.column("id").to_pylist()
        scores = self.scores(batch.texts) if n else np.zeros(0, dtype=np.float32)
        if self.mode == "threshold":
            keep = scores >= np.float32(self.threshold)
        elif self.mode == "pareto":
            keep = pareto_draws(ids, self.seed, self.alpha) > 1.0 - scores.astype(np.float64)
        else:
            keep = np.ones(n, dtype=bool)
        hist_all, hist_kept, score_sum = _histograms([s or "" for s in batch.column("source")], scores, keep)
        counters = Counters(scored=n, score_hist={"all": hist_all, "kept": hist_kept}, score_sum=score_sum)
        if self.mode == "pareto":
            counters["pareto_expected_kept"] = float(np.sum((2.0 - scores.astype(np.float64)) ** -self.alpha))
        reasons = [None if k else "quality" for k in keep.tolist()]
        return Decisions(reasons, columns={"quality_score": pa.array(scores, type=pa.float32())}, counters=counters)


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
    if c.get("passed_through"):
        lines.append(f"  passed through unscored (--only-sources): {c['passed_through']:,}")
    return lines
