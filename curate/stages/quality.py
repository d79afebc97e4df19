"""Quality classifier (GPT-3 / MT-NLG): fastText learns curated text (positives) vs raw CommonCrawl (negatives).

Three parts:

* Training data (:func:`build_training_data`): documents of the positive and negative dataset
  directories, optionally limited to some sources, are streamed twice. The first pass hashes
  only the ids: each document's sampling key is ``xxh64(id, seed=k_sample)``, and the
  ``--max-docs-per-class`` smallest keys of each class are kept (a bottom-k sample: the same
  documents whatever the sharding or reading order, O(k) memory). The larger class is cut to
  the smaller one's size. The second pass normalises the selected texts (:func:`normalize_text`)
  and writes one fastText line per document; a document is held out for evaluation when
  ``xxh64(id, seed=k_valid) / 2**64 < valid_fraction``, and both files are written in the
  order of a third hash (a deterministic shuffle: fastText must not see one class first; the
  files are the same bytes whatever the sharding or order of the inputs). Memory: the k
  smallest keys per class, and about 150 bytes per selected document (its line's place).
* Training and evaluation (:func:`train_classifier`): ``fasttext.train_supervised`` in a
  fresh process (see :func:`_run_in_fresh_process`). Cross-fitting by default: each sampled
  document is in one of K folds (:func:`fold_of`, a hash of its normalised text), model k is trained on
  the other folds, and precision, recall and F1 at score >= 0.5 and ROC AUC (numpy, ties
  averaged) come from every document's score by the model that did not see it. With
  ``folds=1``: one model and a held-out split. With ``threads=1`` and a seed a model file is
  the same bytes on every run; with more threads fastText updates the weights without locks
  (Hogwild) and is not.
* Scoring (:class:`QualityStage`): a map stage that writes ``quality_score``, the model's
  probability of the positive label (cross-fitted: from the model of the document's fold, so
  the training documents themselves get scores from a model that never saw them), and keeps documents by mode: ``annotate`` (all),
  ``threshold`` (score >= T) or ``pareto`` (GPT-3: keep when a Pareto(alpha) draw exceeds
  ``1 - score``; see :func:`pareto_draws` for the exact formula, seeded by (seed, id)).

Model files are checked before fastText reads them (:func:`read_model_info`): fastText
itself loops forever on a truncated model and accepts a 4-byte file as an empty model.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import mmap
import os
import re
import shutil
import struct
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from curate.dataset import Inputs, dataset_inputs, decode_texts, iter_dataset
from curate.errors import CurateError
from curate.runtime import Common, Context, MapResult, MapStage, Stage, param
from curate.schema import STAGE_FIELDS, source_matcher, with_column
from curate.storage import write_json_atomic

log = logging.getLogger("curate")

POS_LABEL = "__label__hq"
NEG_LABEL = "__label__cc"
LABEL_PREFIX = "__label__"
NORMALIZE_MODES = ("lower_punct", "lower", "none")
MODES = ("annotate", "threshold", "pareto")
HIST_BUCKETS = 10
BUCKET_KEYS = [f"{i / HIST_BUCKETS:.1f}-{(i + 1) / HIST_BUCKETS:.1f}" for i in range(HIST_BUCKETS)]
_SCORE_FIELD = STAGE_FIELDS["quality_score"]
_MASK64 = (1 << 64) - 1

# --------------------------------------------------------------------------- normalisation

_PUNCT = re.compile(r"([^\w\s])")


def normalize_text(text: str, mode: str = "lower_punct") -> str:
    """One line of text for fastText; the same function at training and scoring time.

    * ``lower_punct`` (what ``curate quality train`` uses by default): lowercase, every
      character that is neither a letter/digit/underscore nor whitespace becomes its own
      token (``"end."`` -> ``"end ."``), all whitespace (newlines too) folded to one space.
    * ``lower``: lowercase and whitespace folded.
    * ``none``: whitespace folded only (for foreign models trained on raw lines with the
      newlines replaced, as datatrove's classifier filter feeds them).

    Always: NUL becomes a space (fastText splits on it) and ``__label__`` becomes ``label``,
    so no word of a document can be read as a fastText label.
    """
    if mode == "lower_punct":
        text = " ".join(_PUNCT.split(text.lower()))  # split() with a group keeps the separators: 3x faster than sub()
    elif mode == "lower":
        text = text.lower()
    elif mode != "none":
        raise CurateError(f"unknown normalisation {mode!r}; choose one of: {', '.join(NORMALIZE_MODES)}")
    if "\x00" in text:
        text = text.replace("\x00", " ")
    if LABEL_PREFIX in text:
        text = text.replace(LABEL_PREFIX, " label ")
    return " ".join(text.split())


# --------------------------------------------------------------------------- hashing


def _sub_seed(seed: int, purpose: str) -> int:
    """A 64-bit seed for one use of the user's seed (sampling, held-out split, shuffle)."""
    return xxhash.xxh64_intdigest(f"curate-quality:{purpose}:{seed}".encode())


def hash_ids(ids: Iterable[str], seed: int) -> np.ndarray:
    """``xxh64(id as UTF-8, seed=seed mod 2**64)`` of every id, as uint64 (a null id hashes as "")."""
    s = seed & _MASK64
    ids = list(ids)
    return np.fromiter(
        (xxhash.xxh64_intdigest((i or "").encode("utf-8", "surrogatepass"), s) for i in ids), dtype=np.uint64, count=len(ids)
    )


def uniforms(ids: Iterable[str], seed: int) -> np.ndarray:
    """One uniform number in [0, 1) per id: ``(xxh64(id, seed) >> 11) / 2**53`` (53 random bits, exact in float64)."""
    return (hash_ids(ids, seed) >> np.uint64(11)).astype(np.float64) * 2.0**-53


def pareto_draws(ids: Iterable[str], seed: int, alpha: float) -> np.ndarray:
    """The Pareto (Lomax) draw of each document: ``(1 - u) ** (-1 / alpha) - 1``, ``u = uniforms(ids, seed)``.

    This is the inverse CDF of what ``numpy.random.pareto(alpha)`` draws (numpy computes it
    as ``expm1(E / alpha)`` with ``E = -log(1 - u)`` exponential; so do we, for precision).
    A document is kept when its draw is ``> 1 - score``, which happens with probability
    ``(2 - score) ** -alpha``: 1 at score 1, 2.6% at 0.5, 0.2% at 0 for alpha 9.
    """
    u = uniforms(ids, seed)
    return np.expm1(-np.log1p(-u) / alpha)


# --------------------------------------------------------------------------- fastText model files

_MAGIC = 793712314
_MAX_VERSION = 12
_KSUB = 256  # product quantizer centroids per sub-vector
_MODEL_KINDS = {1: "cbow", 2: "skipgram", 3: "supervised"}


@dataclass(frozen=True)
class ModelInfo:
    """What a fastText ``.bin``/``.ftz`` file holds, read without loading its matrices."""

    path: str
    version: int
    kind: str
    dim: int
    word_ngrams: int
    nwords: int
    labels: tuple[str, ...]
    quantized: bool
    size: int


class _Truncated(Exception):
    pass


def _unpack(fmt: str, buf: Any, pos: int) -> tuple:
    end = pos + struct.calcsize(fmt)
    if end > len(buf):
        raise _Truncated
    return struct.unpack_from(fmt, buf, pos)


def _skip_pq(buf: Any, pos: int) -> int:
    dim, _nsubq, _dsub, _lastdsub = _unpack("<4i", buf, pos)
    if dim < 0:
        raise ValueError("negative product-quantizer size")
    return pos + 16 + dim * _KSUB * 4


def _skip_matrix(buf: Any, pos: int, quantized: bool) -> int:
    if not quantized:
        m, n = _unpack("<qq", buf, pos)
        if m < 0 or n < 0:
            raise ValueError("negative matrix size")
        return pos + 16 + m * n * 4
    qnorm, m, n, codesize = _unpack("<?qqi", buf, pos)  # packed: 1 + 8 + 8 + 4 bytes
    if m < 0 or n < 0 or codesize < 0:
        raise ValueError("negative matrix size")
    pos = _skip_pq(buf, pos + 21 + codesize)
    if qnorm:
        pos = _skip_pq(buf, pos + m)
    return pos


def read_model_info(path: str | os.PathLike) -> ModelInfo:
    """Check that ``path`` is a complete fastText model and read its labels (one-line errors).

    Walks fastText's file layout (magic, version, args, dictionary, input and output
    matrices, dense or product-quantized) and checks the sizes add up to the file's size.
    """
    p = Path(path)
    if not p.exists():
        raise CurateError(f"{p}: no such model file")
    if p.is_dir():
        raise CurateError(f"{p}: is a directory, not a fastText model file")
    size = p.stat().st_size
    not_ft = f"{p}: not a fastText model (it does not start with fastText's file signature)"
    if size < 8:
        raise CurateError(not_ft)
    try:
        with open(p, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            magic, version = _unpack("<ii", buf, 0)
            if magic != _MAGIC:
                raise CurateError(not_ft)
            if version > _MAX_VERSION:
                raise CurateError(f"{p}: fastText model format version {version} is newer than this fastText reads ({_MAX_VERSION})")
            args = _unpack("<12id", buf, 8)
            dim, word_ngrams, model_kind = args[0], args[5], args[7]
            pos = 8 + struct.calcsize("<12id")
            n_entries, nwords, nlabels, _ntokens, prune = _unpack("<iiiqq", buf, pos)
            pos += 28
            if n_entries != nwords + nlabels or min(n_entries, nwords, nlabels) < 0 or not 0 < dim < 1_000_000:
                raise ValueError("inconsistent dictionary header")
            labels: list[str] = []
            for _ in range(n_entries):
                end = buf.find(b"\0", pos)
                if end < 0:
                    raise _Truncated
                if end + 10 > size:
                    raise _Truncated
                if buf[end + 9] == 1:
                    labels.append(buf[pos:end].decode("utf-8", "replace"))
                pos = end + 10
            pos += max(prune, 0) * 8
            (quant_input,) = _unpack("<?", buf, pos)
            pos = _skip_matrix(buf, pos + 1, quant_input)
            (qout,) = _unpack("<?", buf, pos)
            pos = _skip_matrix(buf, pos + 1, quant_input and qout)
    except _Truncated:
        raise CurateError(f"{p}: truncated fastText model ({size:,} bytes; the file ends inside its header or dictionary)") from None
    except (ValueError, struct.error, OverflowError) as exc:
        raise CurateError(f"{p}: corrupt fastText model ({exc})") from None
    except OSError as exc:
        raise CurateError(f"{p}: cannot read: {exc.strerror or exc}") from None
    if pos != size:
        what = "truncated" if pos > size else "corrupt"
        raise CurateError(f"{p}: {what} fastText model (its layout needs {pos:,} bytes, the file has {size:,})")
    if len(labels) != nlabels:
        raise CurateError(f"{p}: corrupt fastText model (dictionary lists {nlabels} labels, found {len(labels)})")
    return ModelInfo(
        str(p), version, _MODEL_KINDS.get(model_kind, str(model_kind)), dim, word_ngrams, nwords, tuple(labels), quant_input, size
    )


def resolve_label(info: ModelInfo, label: str) -> str:
    """The model's label named ``label`` (``hq`` finds ``__label__hq``); a one-line error listing the labels otherwise."""
    if info.kind != "supervised":
        raise CurateError(f"{info.path}: a fastText {info.kind} (word-vector) model, not a classifier")
    if label in info.labels:
        return label
    if LABEL_PREFIX + label in info.labels:
        return LABEL_PREFIX + label
    shown = ", ".join(info.labels[:20]) + (f", ... ({len(info.labels)} labels)" if len(info.labels) > 20 else "")
    raise CurateError(f"{info.path}: the model has no label {label!r}; its labels: {shown or '(none)'}; choose one with --label")


def model_fingerprint(path: str | os.PathLike) -> str:
    """sha256 of the size and the first and last MiB: cheap on a 4 GB model, changes when it is retrained."""
    p = Path(path)
    size = p.stat().st_size
    h = hashlib.sha256(str(size).encode())
    with open(p, "rb") as fh:
        h.update(fh.read(1 << 20))
        if size > 2 << 20:
            fh.seek(size - (1 << 20))
            h.update(fh.read())
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=16)
def load_model(path: str) -> Any:
    """The fastText model at ``path``, loaded once per process (workers call this lazily)."""
    import fasttext

    read_model_info(path)  # fastText hangs on truncated files: check before it reads
    try:
        return fasttext.load_model(path)
    except (ValueError, RuntimeError, MemoryError) as exc:
        raise CurateError(f"{path}: fastText cannot load the model: {exc}") from None


def predict_scores(model: Any, lines: list[str], label: str) -> np.ndarray:
    """Probability of ``label`` for each normalised one-line text (float32, clipped to [0, 1])."""
    if not lines:
        return np.zeros(0, dtype=np.float32)
    labels, probs = model.predict(lines, k=-1, threshold=0.0, on_unicode_error="replace")
    out = np.zeros(len(lines), dtype=np.float32)
    for i, (labs, ps) in enumerate(zip(labels, probs)):
        for lab, pr in zip(labs, ps):
            if lab == label:
                out[i] = pr
                break
    return np.clip(out, 0.0, 1.0)


# --------------------------------------------------------------------------- the scoring map stage


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


MODEL_FILE = "model.bin"


def model_file(path: str | os.PathLike) -> Path:
    """A model file, or the directory `curate quality train --out DIR` wrote (its model.bin)."""
    p = Path(path)
    return p / MODEL_FILE if p.is_dir() and (p / MODEL_FILE).is_file() else p


@dataclass
class QualityStage(MapStage):
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
    threshold: float = param(0.5, "Threshold of --mode threshold.", min=0.0, max=1.0)
    alpha: float = param(9.0, "Pareto shape of --mode pareto.", min=0.0, min_open=True)
    seed: int = param(0, "Seed of --mode pareto (with each document's id).")
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

    def params(self) -> dict[str, Any]:
        p: dict[str, Any] = {"model": self.model, "model_fingerprint": self.fingerprint, "label": self.label, "mode": self.mode}
        if len(self.fold_models) > 1:
            p["folds"] = len(self.fold_models)
        p["normalize"] = self.normalize
        if self.mode == "threshold":
            p["threshold"] = self.threshold
        if self.mode == "pareto":
            p["alpha"] = self.alpha
            p["seed"] = self.seed
        return p

    def summary(self, record: dict[str, Any]) -> list[str]:
        return [*super().summary(record), *score_lines(record)]

    def scores(self, texts: list[str | None]) -> np.ndarray:
        """Scores of ``texts``; cross-fitted, each by the model of its text's fold."""
        lines = [normalize_text(t or "", self.normalize) for t in texts]
        if len(self.fold_models) == 1:
            return predict_scores(load_model(self.fold_models[0]), lines, self.label)
        fold = fold_of(lines, self.fold_seed, len(self.fold_models))
        out = np.zeros(len(lines), dtype=np.float32)
        for k, path in enumerate(self.fold_models):
            rows = np.nonzero(fold == k)[0]
            if len(rows):
                out[rows] = predict_scores(load_model(path), [lines[i] for i in rows], self.label)
        return out

    def __call__(self, table: pa.Table) -> MapResult:
        n = table.num_rows
        texts = decode_texts(table.column("text"))
        undecodable = sum(t is None for t in texts)
        ids = table.column("id").to_pylist()
        scores = self.scores(texts) if n else np.zeros(0, dtype=np.float32)
        if self.mode == "threshold":
            keep = scores >= np.float32(self.threshold)
        elif self.mode == "pareto":
            keep = pareto_draws(ids, self.seed, self.alpha) > 1.0 - scores.astype(np.float64)
        else:
            keep = np.ones(n, dtype=bool)
        scored = with_column(table, _SCORE_FIELD, pa.array(scores, type=pa.float32()))
        mask = pa.array(keep, type=pa.bool_())
        kept = scored.filter(mask)
        rejected = scored.filter(pc.invert(mask))
        rejected = rejected.append_column("reason", pa.array(["quality"] * rejected.num_rows, pa.string()))
        hist_all, hist_kept, score_sum = _histograms([s or "" for s in table.column("source").to_pylist()], scores, keep)
        counters: dict[str, Any] = {"scored": n, "score_hist": {"all": hist_all, "kept": hist_kept}, "score_sum": score_sum}
        if self.mode == "pareto":
            counters["pareto_expected_kept"] = float(np.sum((2.0 - scores.astype(np.float64)) ** -self.alpha))
        if undecodable:
            counters["undecodable_text"] = undecodable
        return MapResult(kept, rejected, counters)


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


# --------------------------------------------------------------------------- training data


@dataclass
class ClassInput:
    """One class of training data: dataset directories and the sources taken from them."""

    label: str
    inputs: list[str]
    sources: str | None = None  # comma-separated globs; None: every source

    @property
    def name(self) -> str:
        return "positive" if self.label == POS_LABEL else "negative"


def _matched_batches(ci: ClassInput, columns: list[str]) -> Iterator[pa.Table]:
    match = source_matcher(ci.sources)
    for table in iter_dataset(ci.inputs, columns=columns):
        if table.num_rows == 0:
            continue
        if ci.sources:
            src = table.column("source")
            wanted = [s for s in pc.unique(src).to_pylist() if match(s)]
            if not wanted:
                continue
            table = table.filter(pc.is_in(src, value_set=pa.array(wanted, src.type)))
        yield table


def _bottom_k(ci: ClassInput, k: int, seed: int) -> tuple[np.ndarray, int, dict[str, int]]:
    """The ``k`` smallest sampling keys of a class, its document count and documents per source (pass 1: ids only)."""
    best = np.zeros(0, dtype=np.uint64)
    total = 0
    per_source: dict[str, int] = {}
    for table in _matched_batches(ci, ["id", "source"]):
        keys = hash_ids(table.column("id").to_pylist(), seed)
        total += len(keys)
        for s, cnt in zip(*np.unique(np.asarray(table.column("source").to_pylist(), dtype=object), return_counts=True)):
            per_source[s] = per_source.get(s, 0) + int(cnt)
        best = np.concatenate([best, keys])
        if len(best) > k:
            best = np.partition(best, k - 1)[:k]
    return np.sort(best), total, per_source


def fold_of(lines: Iterable[str], seed: int, folds: int) -> np.ndarray:
    """The cross-fitting fold of each document: ``xxh64(normalised text, seed') % folds``, at training and scoring time.

    By the text, not the id: exact copies of a document (not yet deduplicated when quality
    runs) fall in its fold, so the model that scores it has not trained on them either.
    """
    return (hash_ids(lines, _sub_seed(seed, "fold")) % np.uint64(folds)).astype(np.int64)


@dataclass
class TrainingData:
    """The sampled, normalised fastText lines, each in one part (a cross-fitting fold, or train 0 / held-out 1)."""

    raw_path: Path
    index: dict[int, list[tuple[int, int, int, int]]]  # part -> (shuffle key, offset, length, positive) per line
    part_docs: dict[int, dict[str, int]]  # part -> label -> documents
    available: dict[str, int]
    per_class: int
    selected_sources: dict[str, dict[str, int]]
    empty_skipped: int
    train_path: Path | None = None  # with one model: the lines of part 0 and of part 1, shuffled
    valid_path: Path | None = None
    valid_labels: np.ndarray | None = None

    @property
    def train_docs(self) -> dict[str, int]:
        return self.part_docs.get(0, {})

    @property
    def valid_docs(self) -> dict[str, int]:
        return self.part_docs.get(1, {})

    def write(self, path: Path, parts: Iterable[int]) -> np.ndarray:
        """The lines of ``parts`` to ``path`` in shuffle-key order (the same bytes whatever the reading order); their labels."""
        entries = sorted(e for part in parts for e in self.index.get(part, []))
        with open(self.raw_path, "rb") as src_fh, open(path, "wb") as out:
            fd = src_fh.fileno()
            for _key, off, length, _pos in entries:
                out.write(os.pread(fd, length, off))
        return np.asarray([e[3] for e in entries], dtype=np.int8)


def build_training_data(
    pos: ClassInput,
    neg: ClassInput,
    work: Path,
    *,
    max_docs_per_class: int,
    valid_fraction: float,
    seed: int,
    normalize: str = "lower_punct",
    folds: int = 1,
) -> TrainingData:
    """Sample and normalise the fastText lines of both classes, balanced, into ``work``.

    With ``folds`` 1, ``work/train.txt`` and ``work/valid.txt`` (a held-out ``valid_fraction``)
    are written, shuffled. With ``folds`` K > 1 every line is in the fold :func:`fold_of` gives
    its document, and :meth:`TrainingData.write` makes each fold's training file.
    """
    if max_docs_per_class < 1:
        raise CurateError(f"--max-docs-per-class must be at least 1, got {max_docs_per_class}")
    if not 0.0 <= valid_fraction < 1.0:
        raise CurateError(f"--valid-fraction must be in [0, 1), got {valid_fraction}")
    if folds < 1:
        raise CurateError(f"--folds must be at least 1, got {folds}")
    k_sample, k_valid, k_shuffle = (_sub_seed(seed, p) for p in ("sample", "valid", "shuffle"))
    classes = [pos, neg]
    scans = {ci.label: _bottom_k(ci, max_docs_per_class, k_sample) for ci in classes}
    for ci in classes:
        if scans[ci.label][1] == 0:
            where = ", ".join(ci.inputs) + (f" (sources {ci.sources})" if ci.sources else "")
            raise CurateError(f"no {ci.name} training documents in {where}")
    per_class = min(max_docs_per_class, *(scans[ci.label][1] for ci in classes))
    cut = {label: best[per_class - 1] for label, (best, _, _) in scans.items()}

    work.mkdir(parents=True, exist_ok=True)
    raw_path = work / "unshuffled.txt"
    # Lines go to one file in reading order; (shuffle key, offset, length, positive) per line and part.
    index: dict[int, list[tuple[int, int, int, int]]] = {}
    part_docs: dict[int, dict[str, int]] = {}
    taken = {ci.label: 0 for ci in classes}
    selected_sources: dict[str, dict[str, int]] = {ci.label: {} for ci in classes}
    empty = 0
    with open(raw_path, "wb") as raw:
        offset = 0
        for ci in classes:
            positive = int(ci.label == POS_LABEL)
            for table in _matched_batches(ci, ["id", "text", "source"]):
                ids = table.column("id").to_pylist()
                sel = np.nonzero(hash_ids(ids, k_sample) <= cut[ci.label])[0]
                if len(sel) == 0:
                    continue
                sel_ids = [ids[i] for i in sel]
                texts = decode_texts(table.column("text").take(pa.array(sel)))
                sources = table.column("source").take(pa.array(sel)).to_pylist()
                held = (hash_ids(sel_ids, k_valid).astype(np.float64) * 2.0**-64 < valid_fraction).astype(np.int64)
                shuffle = hash_ids(sel_ids, k_shuffle)
                for j, (text, src) in enumerate(zip(texts, sources)):
                    if taken[ci.label] >= per_class:  # only duplicate ids can push a class past its cut
                        break
                    taken[ci.label] += 1
                    norm = normalize_text(text or "", normalize)
                    if not norm:
                        empty += 1
                        continue
                    selected_sources[ci.label][src] = selected_sources[ci.label].get(src, 0) + 1
                    line = f"{ci.label} {norm}\n".encode()
                    raw.write(line)
                    part = int(fold_of([norm], seed, folds)[0]) if folds > 1 else int(held[j])
                    index.setdefault(part, []).append((int(shuffle[j]), offset, len(line), positive))
                    offset += len(line)
                    counts = part_docs.setdefault(part, {c.label: 0 for c in classes})
                    counts[ci.label] += 1
    data = TrainingData(
        raw_path=raw_path,
        index=index,
        part_docs=part_docs,
        available={label: total for label, (_, total, _) in scans.items()},
        per_class=per_class,
        selected_sources=selected_sources,
        empty_skipped=empty,
    )
    for label in (POS_LABEL, NEG_LABEL):
        kept = sum(c.get(label, 0) for part, c in part_docs.items() if folds > 1 or part == 0)
        if kept == 0:
            raise CurateError(f"no {'positive' if label == POS_LABEL else 'negative'} documents left for training (all empty or held out)")
    if folds == 1:  # one model: the classic train/held-out files, shuffled
        data.train_path, data.valid_path = work / "train.txt", work / "valid.txt"
        data.write(data.train_path, [0])
        data.valid_labels = data.write(data.valid_path, [1])
        raw_path.unlink()
    return data


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
    try:
        model = fasttext.train_supervised(**args)
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
    dim: int = 64
    min_count: int = 1
    bucket: int = 1_000_000
    max_docs_per_class: int = 100_000
    valid_fraction: float = 0.1
    seed: int = 0
    threads: int = 1
    normalize: str = "lower_punct"
    folds: int = 5

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


def _train_one(train_path: Path, model_path: Path, config: TrainConfig, docs: int) -> Any:
    """Train one fastText model on ``train_path`` into ``model_path`` (in a fresh process); the loaded model."""
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
    return load_model.__wrapped__(str(model_path))  # not the cache: the file was just replaced


def _predict_file(model: Any, path: Path) -> np.ndarray:
    return np.concatenate([predict_scores(model, lines, POS_LABEL) for lines in _read_valid(path)] or [np.zeros(0, np.float32)])


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
            model = _train_one(data.train_path, out / MODEL_FILE, config, sum(data.train_docs.values()))
            models.append(MODEL_FILE)
            words.append(len(model.words))
            labels_all.append(data.valid_labels)
            scores_all.append(_predict_file(model, data.valid_path))
            if keep_data:
                for name, f in (("train", data.train_path), ("valid", data.valid_path)):
                    dest = out / f"{MODEL_FILE}.{name}.txt"
                    os.replace(f, dest)
                    kept_files[name] = str(dest)
        else:
            for k in range(folds):
                train_k, valid_k = work / f"fold-{k}.train.txt", work / f"fold-{k}.valid.txt"
                data.write(train_k, [p for p in range(folds) if p != k])
                labels = data.write(valid_k, [k])
                n_train = total - sum(data.part_docs.get(k, {}).values())
                model = _train_one(train_k, out / f"fold-{k}.bin", config, n_train)
                models.append(f"fold-{k}.bin")
                words.append(len(model.words))
                labels_all.append(labels)
                scores_all.append(_predict_file(model, valid_k))
                del model
                for name, f in (("train", train_k), ("valid", valid_k)):
                    if keep_data:
                        dest = out / f"fold-{k}.{name}.txt"
                        os.replace(f, dest)
                        kept_files[f"fold-{k}.{name}"] = str(dest)
                    else:
                        f.unlink()
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
    pos: list[str] = param([], "Dataset directory of high-quality documents (repeatable), e.g. the cleaned Pile subsets.",
                           metavar="DIR", multiple=True, required=True)  # fmt: skip
    neg: list[str] = param([], "Dataset directory of raw web documents (repeatable), e.g. the CommonCrawl extract.",
                           metavar="DIR", multiple=True, required=True)  # fmt: skip
    pos_sources: str | None = param(None, "Take positives only from these sources (comma-separated globs, e.g. "
                                    "'pile/Wikipedia,pile/OpenWebText2').", metavar="GLOBS")  # fmt: skip
    neg_sources: str | None = param(None, "Take negatives only from these sources (e.g. 'cc/*').", metavar="GLOBS")
    epoch: int = param(5, "fastText epochs.", min=1)
    lr: float = param(0.1, "fastText learning rate.", min=0.0, min_open=True)
    word_ngrams: int = param(2, "Word n-grams (2: words and bigrams).", min=1)
    dim: int = param(64, "Embedding dimension.", min=1)
    min_count: int = param(1, "Drop words seen fewer times.", min=1)
    bucket: int = param(1_000_000, "Hash buckets for n-grams; the model holds (words + bucket) x dim floats (1M x 64: 256 MB).", min=0)
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
    keep_data: bool = param(False, "Keep the fastText training and held-out files in OUT (*.train.txt, *.valid.txt).",
                            record=False)  # fmt: skip

    def __post_init__(self) -> None:
        from curate.runtime import default_workers

        self.config = TrainConfig(
            epoch=self.epoch, lr=self.lr, word_ngrams=self.word_ngrams, dim=self.dim, min_count=self.min_count, bucket=self.bucket,
            max_docs_per_class=self.max_docs_per_class, valid_fraction=self.valid_fraction, seed=self.seed,
            threads=self.threads or default_workers(), normalize=self.normalize, folds=self.folds,
        )  # fmt: skip
        self.config.check()

    def params(self) -> dict[str, Any]:
        return {
            "pos_sources": self.pos_sources,
            "neg_sources": self.neg_sources,
            "config": {k: getattr(self.config, k) for k in TrainConfig.__dataclass_fields__},
        }

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
