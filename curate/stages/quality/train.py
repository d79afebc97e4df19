"""Training (``curate quality train``): fastText in a fresh process, evaluated out of sample; the model directory it writes.

:func:`train_classifier` runs ``fasttext.train_supervised`` in a fresh process (see
:func:`_run_in_fresh_process`). Cross-fitting by default: each sampled document is in one of K
folds (:func:`~curate.stages.quality.data.fold_of`, a hash of its normalised text), model k is
trained on the other folds, and precision, recall and F1 at score >= 0.5 and ROC AUC (numpy,
ties averaged) come from every document's score by the model that did not see it. With
``folds=1``: one model and a held-out split. With ``threads=1`` and a seed a model file is the
same bytes on every run; with more threads fastText updates the weights without locks
(Hogwild) and is not. The output directory holds the model files and the record
(:func:`training_record`) that `quality score` reads: the folds, their seed, the normalisation.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from curate.dataset import Inputs, dataset_inputs
from curate.errors import CurateError
from curate.fasttext import Classifier
from curate.registry import stage
from curate.runtime import Common, Context, Stage, param
from curate.stages.quality.data import NEG_LABEL, NORMALIZE_MODES, POS_LABEL, ClassInput, build_training_data
from curate.storage import write_json_atomic

log = logging.getLogger("curate")


MODEL_FILE = "model.bin"
QUANTIZED_FILE = "model.ftz"


def model_file(path: str | os.PathLike) -> Path:
    """A model file, or the directory `curate quality train --out DIR` wrote (its model.bin, or model.ftz quantized)."""
    p = Path(path)
    if p.is_dir():
        for name in (MODEL_FILE, QUANTIZED_FILE):
            if (p / name).is_file():
                return p / name
    return p


# --------------------------------------------------------------------------- evaluation


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float | None:
    """ROC AUC = P(score of a random positive > score of a random negative), ties counting 1/2.

    Mann-Whitney U from average ranks; ``None`` when one class is missing.
    """
    labels = np.asarray(labels).astype(bool)
    scores = np.asarray(scores, dtype=np.float64)
    n_pos = int(labels.sum())
    n_neg = len(labels) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    uniq, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)  # 1-based rank of each tie group's last member
    avg_rank = ends - (counts - 1) / 2.0
    rank_sum = float(avg_rank[inverse][labels].sum())
    return (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


def binary_metrics(labels: np.ndarray, scores: np.ndarray, threshold: float = 0.5) -> dict[str, Any]:
    """Precision, recall, F1 and accuracy of ``score >= threshold`` for the positive class, and ROC AUC."""
    y = np.asarray(labels).astype(bool)
    pred = np.asarray(scores) >= threshold
    tp = int(np.sum(pred & y))
    fp = int(np.sum(pred & ~y))
    fn = int(np.sum(~pred & y))
    tn = int(np.sum(~pred & ~y))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    auc = roc_auc(y, scores)
    return {
        "docs": len(y),
        "positives": int(y.sum()),
        "negatives": int((~y).sum()),
        "threshold": threshold,
        "precision": round(precision, 6),
        "recall": round(recall, 6),
        "f1": round(f1, 6),
        "accuracy": round((tp + tn) / len(y), 6) if len(y) else None,
        "roc_auc": None if auc is None else round(auc, 6),
        "confusion": {"tp": tp, "fp": fp, "fn": fn, "tn": tn},
    }


def _read_valid(path: Path, batch: int = 2000) -> Iterator[list[str]]:
    lines: list[str] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            lines.append(line.rstrip("\n").split(" ", 1)[1] if " " in line else "")
            if len(lines) >= batch:
                yield lines
                lines = []
    if lines:
        yield lines


# --------------------------------------------------------------------------- training


def _train_fasttext(job: tuple[dict[str, Any], str]) -> str | None:
    """Train and save a fastText model (in a fresh process); the error message, or None."""
    import fasttext

    args, out = job
    args = dict(args)
    quantize = args.pop("quantize", False)
    try:
        model = fasttext.train_supervised(**args)
        if quantize:  # product-quantized input (and norms), every row kept: a .ftz, about 8 times smaller
            model.quantize(input=args["input"], qnorm=True, retrain=False, cutoff=0, thread=args["thread"], verbose=0)
    except (RuntimeError, ValueError) as exc:
        return str(exc) or type(exc).__name__
    model.save_model(out)
    return None


def _run_in_fresh_process(fn: Any, arg: Any) -> Any:
    """``fn(arg)`` in a new (spawned) process.

    Measured with fasttext-numpy2-wheel 0.9.2: ``train_supervised`` called a second or third
    time in one process gives other weights than in a fresh process, and often
    ``Encountered NaN`` where a fresh process trains fine (state left over from the previous
    training). In a fresh process, one thread and a seed give the same model bytes every time.
    A process of its own also keeps a fastText crash from taking the CLI with it.
    """
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    try:
        with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
            return pool.submit(fn, arg).result()
    except BrokenProcessPool:
        raise CurateError("the fastText training process died (killed, or out of memory)") from None


@dataclass
class TrainConfig:
    """fastText hyper-parameters and the data draw (see `curate quality train --help`)."""

    epoch: int = 5
    lr: float = 0.1
    word_ngrams: int = 2
    dim: int = 32
    min_count: int = 1
    bucket: int = 100_000
    max_docs_per_class: int = 100_000
    valid_fraction: float = 0.1
    seed: int = 0
    threads: int = 1
    normalize: str = "lower_punct"
    folds: int = 5
    quantize: bool = False

    def check(self) -> None:
        for name in ("epoch", "word_ngrams", "dim", "min_count", "threads", "folds"):
            if getattr(self, name) < 1:
                raise CurateError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if not self.lr > 0:
            raise CurateError(f"--lr must be positive, got {self.lr}")
        if self.bucket < 0:
            raise CurateError(f"--bucket must be >= 0, got {self.bucket}")
        if self.normalize not in NORMALIZE_MODES:
            raise CurateError(f"unknown normalisation {self.normalize!r}; choose one of: {', '.join(NORMALIZE_MODES)}")


def _train_one(train_path: Path, model_path: Path, config: TrainConfig, docs: int) -> Classifier:
    """Train one fastText model on ``train_path`` into ``model_path`` (in a fresh process); the model."""
    tmp = model_path.with_name(f".{model_path.name}.tmp.{os.getpid()}")
    ft_args = {
        "input": str(train_path),
        "lr": config.lr,
        "epoch": config.epoch,
        "wordNgrams": config.word_ngrams,
        "dim": config.dim,
        "minCount": config.min_count,
        "bucket": config.bucket,
        "thread": config.threads,
        "seed": config.seed & 0x7FFFFFFF,
        "loss": "softmax",
        "verbose": 0,
        "quantize": config.quantize,
    }
    try:
        error = _run_in_fresh_process(_train_fasttext, (ft_args, str(tmp)))
        if error and "NaN" in error:
            raise CurateError(
                f"fastText training diverged ({error}) on {docs} documents: too few or too uniform texts for these settings; "
                "add documents or lower --lr"
            )
        if error:
            raise CurateError(f"fastText training failed: {error}")
        os.replace(tmp, model_path)
    except OSError as exc:
        raise CurateError(f"cannot write {model_path}: {exc.strerror or exc}") from None
    finally:
        Path(tmp).unlink(missing_ok=True)
    return Classifier(model_path)  # not the per-process cache: the file was just replaced


def _predict_file(model: Classifier, path: Path) -> np.ndarray:
    return np.concatenate([model.probabilities(lines, POS_LABEL) for lines in _read_valid(path)] or [np.zeros(0, np.float32)])


def train_classifier(
    pos: ClassInput,
    neg: ClassInput,
    out: str | os.PathLike,
    config: TrainConfig,
    *,
    keep_data: bool = False,
) -> dict[str, Any]:
    """Build the training data, train fastText, evaluate out of sample, write the model(s) into ``out``; the record.

    ``config.folds`` K > 1 (cross-fitting): K models ``fold-k.bin``, model k trained on every
    sampled document outside fold k; metrics from each document's score by the model that
    did not see it (all K folds pooled), and `quality score` scores every document with the
    model of its fold, so no document is ever scored by a model that trained on it. K = 1:
    one ``model.bin`` trained on all but a held-out ``valid_fraction``, measured on that.
    The data files live in a temporary directory in ``out`` (kept with ``keep_data``).
    """
    config.check()
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise CurateError(f"{out}: exists and is not a directory (quality train writes a directory)")
    try:
        out.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".data.", dir=out))
    except OSError as exc:
        raise CurateError(f"cannot write {out}: {exc.strerror or exc}") from exc
    t0 = time.perf_counter()
    folds = config.folds
    try:
        data = build_training_data(
            pos,
            neg,
            work,
            max_docs_per_class=config.max_docs_per_class,
            valid_fraction=config.valid_fraction,
            seed=config.seed,
            normalize=config.normalize,
            folds=folds,
        )
        t_data = time.perf_counter() - t0
        total = sum(sum(c.values()) for c in data.part_docs.values())
        if folds > 1:
            log.info("quality train: %d per class (of %d positive, %d negative available); %d models, each on %d of %d folds",
                     data.per_class, data.available[POS_LABEL], data.available[NEG_LABEL], folds, folds - 1, folds)  # fmt: skip
        else:
            log.info("quality train: %d per class (of %d positive, %d negative available); training on %d, holding out %d",
                     data.per_class, data.available[POS_LABEL], data.available[NEG_LABEL], sum(data.train_docs.values()),
                     sum(data.valid_docs.values()))  # fmt: skip
        t1 = time.perf_counter()
        models: list[str] = []
        words: list[int] = []
        labels_all, scores_all = [], []
        kept_files: dict[str, str] = {}
        if folds == 1:
            assert data.train_path is not None and data.valid_path is not None and data.valid_labels is not None
            name = QUANTIZED_FILE if config.quantize else MODEL_FILE
            model = _train_one(data.train_path, out / name, config, sum(data.train_docs.values()))
            models.append(name)
            words.append(len(model.library.words))
            labels_all.append(data.valid_labels)
            scores_all.append(_predict_file(model, data.valid_path))
            if keep_data:
                for name, f in (("train", data.train_path), ("valid", data.valid_path)):
                    dest = out / f"{MODEL_FILE}.{name}.txt"
                    os.replace(f, dest)
                    kept_files[name] = str(dest)
        else:
            paths = [(work / f"fold-{k}.train.txt", work / f"fold-{k}.valid.txt") for k in range(folds)]
            fold_labels = []
            for k, (train_k, valid_k) in enumerate(paths):
                data.write(train_k, [p for p in range(folds) if p != k])
                fold_labels.append(data.write(valid_k, [k]))
            names = [f"fold-{k}.ftz" if config.quantize else f"fold-{k}.bin" for k in range(folds)]
            n_trains = [total - sum(data.part_docs.get(k, {}).values()) for k in range(folds)]
            # folds train at once where cores allow (each in a fresh process with --threads threads)
            parallel = max(1, min(folds, (os.cpu_count() or 1) // max(1, config.threads)))
            log.info("quality train: %d folds, %d at a time", folds, parallel)
            with ThreadPoolExecutor(max_workers=parallel) as pool:
                trained = list(pool.map(lambda k: _train_one(paths[k][0], out / names[k], config, n_trains[k]), range(folds)))
            for k, model in enumerate(trained):
                models.append(names[k])
                words.append(len(model.library.words))
                labels_all.append(fold_labels[k])
                scores_all.append(_predict_file(model, paths[k][1]))
                model.library = None  # type: ignore[assignment]  # one library model in memory at a time
                for name, f in (("train", paths[k][0]), ("valid", paths[k][1])):
                    if keep_data:
                        dest = out / f"fold-{k}.{name}.txt"
                        os.replace(f, dest)
                        kept_files[f"fold-{k}.{name}"] = str(dest)
                    else:
                        f.unlink()
            del trained
        t_train = time.perf_counter() - t1
        labels = np.concatenate(labels_all) if labels_all else np.zeros(0, np.int8)
        scores = np.concatenate(scores_all) if scores_all else np.zeros(0, np.float32)
        metrics = binary_metrics(labels, scores) if len(scores) else None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sampled = {label: sum(c.get(label, 0) for c in data.part_docs.values()) for label in (POS_LABEL, NEG_LABEL)}
    record = {
        "model": str(out / models[0]),
        "models": models,
        "folds": folds,
        "fold_seed": config.seed,
        "model_bytes": sum((out / m).stat().st_size for m in models),
        "labels": {"positive": POS_LABEL, "negative": NEG_LABEL},
        "normalize": config.normalize,
        "config": {k: getattr(config, k) for k in TrainConfig.__dataclass_fields__},
        "inputs": {
            "positive": {"inputs": pos.inputs, "sources": pos.sources},
            "negative": {"inputs": neg.inputs, "sources": neg.sources},
        },
        "data": {
            "available": {"positive": data.available[POS_LABEL], "negative": data.available[NEG_LABEL]},
            "per_class": data.per_class,
            "sampled": {"positive": sampled[POS_LABEL], "negative": sampled[NEG_LABEL]},
            "train": {"positive": data.train_docs.get(POS_LABEL, 0), "negative": data.train_docs.get(NEG_LABEL, 0)} if folds == 1 else None,
            "valid": {"positive": data.valid_docs.get(POS_LABEL, 0), "negative": data.valid_docs.get(NEG_LABEL, 0)} if folds == 1 else None,
            "folds": {str(k): {"positive": c.get(POS_LABEL, 0), "negative": c.get(NEG_LABEL, 0)} for k, c in sorted(data.part_docs.items())}
            if folds > 1
            else None,
            "empty_skipped": data.empty_skipped,
            "sources": {"positive": data.selected_sources[POS_LABEL], "negative": data.selected_sources[NEG_LABEL]},
            "files": kept_files or "temporary (use --keep-data to keep)",
        },
        "vocabulary_words": max(words) if words else 0,
        "valid": metrics,
        "valid_kind": "out-of-fold (cross-fitting)" if folds > 1 else "held-out split",
        "reproducible": config.threads == 1,
        "seconds": {"data": round(t_data, 3), "train": round(t_train, 3), "total": round(time.perf_counter() - t0, 3)},
    }
    write_json_atomic(metrics_path(out / models[0]), record)
    return record


@stage("quality train", section="select", order=40)
@dataclass
class QualityTrain(Stage):
    """Train a fastText classifier: positives (__label__hq) vs negatives (__label__cc), into OUT.

    Documents are sampled reproducibly (a hash of id and --seed), classes are balanced by
    cutting the larger one, and texts are normalised to one line (lower_punct: lowercase,
    punctuation split off, whitespace folded). Cross-fitting (--folds K, default 5): every
    document is in one of K folds by a hash of its text; model k (OUT/fold-k.bin) is trained on
    the other folds. `quality score --model OUT` scores each document with the model of its
    fold, so no document is scored by a model that trained on it (GPT-3 trained on a sample
    of raw CommonCrawl and scored the rest); precision, recall and F1 at score 0.5 and ROC
    AUC come from the same out-of-fold scores of every sampled document. --folds 1: one
    OUT/model.bin and a held-out split (--valid-fraction). Printed and written to OUT/_SUCCESS.

    \b
    Example:
      curate quality train --pos out/clean --pos-sources 'pile/Wikipedia,pile/OpenWebText2' \\
          --neg out/cc_extract --neg-sources 'cc/*' --out out/quality_model
    """

    name: ClassVar[str] = "quality_train"
    sections: ClassVar[dict[str, str]] = {"quality_model": "valid"}
    kind: ClassVar[str] = "sink"
    options: ClassVar[tuple[str, ...]] = ("out", "overwrite")
    option_help: ClassVar[dict[str, str]] = {"out": "Output directory: OUT/model.bin, OUT/model.bin.metrics.json, OUT/_SUCCESS."}
    checks_ids: ClassVar[bool] = False
    required_columns: ClassVar[tuple[str, ...]] = ("id", "text", "source")
    pos: list[str] = param(
        [],
        "Dataset directory of high-quality documents (repeatable), e.g. the cleaned Pile subsets.",
        metavar="DIR",
        multiple=True,
        required=True,
        record=False,
    )  # fmt: skip  (recorded as inputs)
    neg: list[str] = param(
        [],
        "Dataset directory of raw web documents (repeatable), e.g. the CommonCrawl extract.",
        metavar="DIR",
        multiple=True,
        required=True,
        record=False,
    )  # fmt: skip  (recorded as inputs)
    pos_sources: str | None = param(None, "Take positives only from these sources (comma-separated globs, e.g. "
                                    "'pile/Wikipedia,pile/OpenWebText2').", metavar="GLOBS")  # fmt: skip
    neg_sources: str | None = param(None, "Take negatives only from these sources (e.g. 'cc/*').", metavar="GLOBS")
    epoch: int = param(5, "fastText epochs.", min=1)
    lr: float = param(0.1, "fastText learning rate.", min=0.0, min_open=True)
    word_ngrams: int = param(2, "Word n-grams (2: words and bigrams).", min=1)
    dim: int = param(32, "Embedding dimension: the model holds (words + bucket) x dim float32. 32 (and --bucket 100000) "
                     "scored the same out-of-fold AUC as 64 (and 1M) within seed noise on the sample and on a 12,000-document "
                     "set (docs/benchmarks/quality_train.md).", min=1)  # fmt: skip
    min_count: int = param(1, "Drop words seen fewer times.", min=1)
    bucket: int = param(100_000, "Hash buckets for the word bigrams; the model holds (words + bucket) x dim float32: 100k x 32 "
                        "is 12.8 MB a fold plus 128 bytes a word (1M x 64, the former default: 256 MB plus 256 bytes a word, "
                        "at no better AUC).", min=0)  # fmt: skip
    max_docs_per_class: int = param(100_000, "Sample at most N documents per class (by a hash of id and --seed); "
                                    "the larger class is cut to the smaller.", min=1)  # fmt: skip
    valid_fraction: float = param(0.1, "Fraction held out for evaluation (by a hash of id and --seed).", min=0.0, max=1.0, max_open=True)
    seed: int = param(0, "Seed of the sample, the held-out split and fastText.")
    threads: int | None = param(None, "fastText training threads [default: all cores]; only --threads 1 gives the same model "
                                "bytes on every run.", min=1)  # fmt: skip
    normalize: str = param("lower_punct", "Text normalisation (recorded with the model; `quality score` uses the same by default).",
                           choices=NORMALIZE_MODES)  # fmt: skip
    folds: int = param(5, "Cross-fitting folds: K models, each trained without one fold and scoring only it; 1: one model and a "
                       "held-out split. Scoring holds all K models in memory.", min=1)  # fmt: skip
    quantize: bool = param(False, "Product-quantize each model after training (fastText's quantize, every row kept, norms too): "
                           ".ftz files about 8 times smaller (dim / 2 bytes a row instead of dim x 4).",
                           secondary="--no-quantize")  # fmt: skip
    keep_data: bool = param(False, "Keep the fastText training and held-out files in OUT (*.train.txt, *.valid.txt).",
                            record=False)  # fmt: skip

    def __post_init__(self) -> None:
        from curate.runtime import default_workers

        self.config = TrainConfig(
            epoch=self.epoch, lr=self.lr, word_ngrams=self.word_ngrams, dim=self.dim, min_count=self.min_count, bucket=self.bucket,
            max_docs_per_class=self.max_docs_per_class, valid_fraction=self.valid_fraction, seed=self.seed,
            threads=self.threads or default_workers(), normalize=self.normalize, folds=self.folds, quantize=self.quantize,
        )  # fmt: skip
        self.config.check()

    def derived_params(self) -> dict[str, Any]:
        return {"threads": self.config.threads}  # resolved: the default is the machine's cores

    def inputs(self, common: Common) -> Inputs:
        if not self.pos or not self.neg:
            raise CurateError("quality train needs --pos and --neg dataset directories")
        pos, neg = dataset_inputs(self.pos), dataset_inputs(self.neg)
        return Inputs([f"pos:{n}" for n in pos.names] + [f"neg:{n}" for n in neg.names], pos.files + neg.files,
                      pos.fingerprints + neg.fingerprints, pos.locations + neg.locations)  # fmt: skip

    def run(self, ctx: Context) -> dict[str, Any]:
        from curate.storage import as_path

        out = as_path(str(ctx.out))
        if not isinstance(out, Path):
            raise CurateError(f"{out}: quality train writes a local directory (fastText writes local files)")
        return train_classifier(
            ClassInput(POS_LABEL, list(self.pos), self.pos_sources),
            ClassInput(NEG_LABEL, list(self.neg), self.neg_sources),
            out,
            self.config,
            keep_data=self.keep_data,
        )

    def summary(self, record: dict[str, Any]) -> list[str]:
        return train_lines(record)


def metrics_path(model_path: str | os.PathLike) -> Path:
    """MODEL.metrics.json: the train command's record (its ``normalize`` is what scoring uses by default)."""
    return Path(f"{model_path}.metrics.json")


def training_record(model: str | os.PathLike) -> dict[str, Any] | None:
    """What `curate quality train` recorded for a model directory or one of its model files (else None)."""
    import json

    p = Path(model)
    for f in (p / "_SUCCESS", p / f"{MODEL_FILE}.metrics.json") if p.is_dir() else (metrics_path(p), p.parent / "_SUCCESS"):
        try:
            rec = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(rec, dict) and "normalize" in rec and (p.is_dir() or p.name in (rec.get("models") or [p.name])):
            return rec
    return None


def recorded_normalize(model_path: str | os.PathLike) -> str | None:
    """The normalisation recorded by `curate quality train` beside the model, if any."""
    rec = training_record(model_path)
    mode = rec.get("normalize") if rec else None
    return mode if mode in NORMALIZE_MODES else None


def train_lines(record: dict[str, Any]) -> list[str]:
    """The CLI's summary of a training run."""
    d = record["data"]
    m = record.get("valid")
    folds = record.get("folds", 1)
    if folds > 1:
        how = f"{folds} models, each trained on {folds - 1} of {folds} folds of {d['sampled']['positive']:,} + {d['sampled']['negative']:,}"
    else:
        how = f"trained on {d['train']['positive']:,} + {d['train']['negative']:,}"
    lines = [
        f"quality train: {d['per_class']:,} documents per class (of {d['available']['positive']:,} positive, "
        f"{d['available']['negative']:,} negative); {how}, {record['vocabulary_words']:,} words, {record['seconds']['total']:.1f} s"
    ]
    if m:
        auc = "n/a" if m["roc_auc"] is None else f"{m['roc_auc']:.4f}"
        kind = "out-of-fold" if folds > 1 else "held-out"
        lines.append(
            f"  {kind} ({m['positives']:,} positive, {m['negatives']:,} negative): precision {m['precision']:.3f}  "
            f"recall {m['recall']:.3f}  F1 {m['f1']:.3f}  ROC AUC {auc}  (positive {POS_LABEL}, score >= {m['threshold']})"
        )
    else:
        lines.append("  held-out: no documents (--valid-fraction 0 or too few documents): no metrics")
    mb = record["model_bytes"] / 1e6
    where = str(Path(record["model"]).parent)
    lines.append(f"  {'models' if folds > 1 else 'model'}: {where}/{{{','.join(record.get('models') or [])}}} ({mb:.1f} MB)")
    if not record["reproducible"]:
        lines.append(f"  note: trained with {record['config']['threads']} threads: not bit-reproducible (use --threads 1 for that)")
    return lines
