"""The data side of the quality classifier: text normalisation, id hashing, the Pareto draws, the training sample.

Training data (:func:`build_training_data`): documents of the positive and negative dataset
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
Cross-fitting puts each document in a fold by a hash of its normalised text (:func:`fold_of`),
at training and at scoring time.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from curate.dataset import decode_texts, iter_dataset
from curate.errors import CurateError
from curate.fasttext import LABEL_PREFIX
from curate.schema import source_matcher

POS_LABEL = "__label__hq"
NEG_LABEL = "__label__cc"
NORMALIZE_MODES = ("lower_punct", "lower", "none")
#: Scoring also takes ``dclm``: DCLM's own preparation (see :func:`normalize_text`), for its published classifier.
SCORE_NORMALIZE_MODES = (*NORMALIZE_MODES, "dclm")
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

    * ``dclm`` (scoring only): what DCLM's fastText enricher does, ``" ".join(text.strip().splitlines())``
      (mlfoundations/dclm, baselines/mappers/enrichers/quality_prediction_enrichers_calc_fasttext.py):
      line breaks become spaces and nothing else changes.

    Except in ``dclm``: NUL becomes a space (fastText splits on it) and ``__label__`` becomes ``label``,
    so no word of a document can be read as a fastText label.
    """
    if mode == "dclm":  # fastText ignores label tokens when it predicts, and splits at NUL: nothing else is needed
        return " ".join(text.strip().splitlines())
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
