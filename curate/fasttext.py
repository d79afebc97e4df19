"""fastText model files, read once: checked, described, and predicted with (the compiled kernel where it can).

One reader of fastText's binary format (version 12, as fastText 0.9.x writes ``.bin`` and
``.ftz``; version 11 is read too): :class:`ModelFile` maps the file and walks its layout once
(magic and version, the args, the dictionary, the input and output matrices, dense or
product-quantized) and checks that the sizes add up to the file's size. fastText itself loops
forever on a truncated model and accepts a 4-byte file as an empty model, so no file reaches
the library unchecked. From that one walk come

* :class:`ModelInfo` (:func:`read_model_info`): kind, loss, labels, word n-grams, whether the
  input is quantized, without touching the matrices (cheap on a 4 GB model);
* :class:`KernelModel` (:meth:`ModelFile.kernel`, :func:`load_kernel`): the arrays the compiled
  kernel ``curate/_fasttext.c`` runs. fastText's own ``predict`` spends most of its time building
  a ``std::string`` per token and character n-gram; the kernel does the same arithmetic on the
  bytes where they are (the same tokens, hashes, pruning and buckets, the hidden vector summed
  in float32 in fastText's order, the same hierarchical-softmax search or softmax), so its labels
  and probabilities are fastText's bit for bit, several times faster. It runs supervised models
  with a hierarchical-softmax, softmax or one-vs-all output, a dense or product-quantized input (norms
  quantized or not) and a dense output; for anything else, or when it was not built, the
  fastText library predicts.

:class:`Classifier` (:func:`classifier`, once per process) puts them together: top-1 predictions
through the kernel where it runs the model (``CURATE_FASTTEXT=library`` forces the library),
one label's probability (:meth:`Classifier.probabilities`) through the kernel too.

A low-level module: it imports no stage, not the runtime, not the executor. Inside it ``import
fasttext`` is the fastText library, not this module (imports are absolute).
"""

from __future__ import annotations

import array
import functools
import hashlib
import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from curate.errors import CurateError

try:  # setup.py builds it (optional)
    from curate import _fasttext as _native
except ImportError:  # no C compiler at install time: the fasttext library predicts
    _native = None

MAGIC = 793712314
VERSION = 12  # what fastText 0.9.x writes, and the newest it reads
KSUB = 256  # product-quantizer centroids per sub-vector
LABEL_PREFIX = "__label__"
MODEL_KINDS = {1: "cbow", 2: "skipgram", 3: "supervised"}
LOSSES = {1: "hs", 2: "ns", 3: "softmax", 4: "ova"}
_HS, _SOFTMAX, _OVA, _SUPERVISED = 1, 3, 4, 3
_KERNEL_LOSS = {_SOFTMAX: 0, _HS: 1, _OVA: 2}  # fastText's loss -> the kernel's (LOSS_SOFTMAX, LOSS_HS, LOSS_OVA)
_ARGS_FMT = "<12id"
_DICT_FMT = "<iiiqq"


class Args(NamedTuple):
    """The training arguments a model file stores (fastText's ``Args::save``)."""

    dim: int
    ws: int
    epoch: int
    min_count: int
    neg: int
    word_ngrams: int
    loss: int
    model: int
    bucket: int
    minn: int
    maxn: int
    lr_update_rate: int
    t: float


@dataclass(frozen=True)
class ModelInfo:
    """What a fastText ``.bin``/``.ftz`` file holds, read without loading its matrices."""

    path: str
    version: int
    kind: str
    loss: str
    dim: int
    word_ngrams: int
    nwords: int
    labels: tuple[str, ...]
    quantized: bool
    size: int


@dataclass(frozen=True)
class _Quantizer:
    """A product quantizer's header and where its ``dim * KSUB`` float32 centroids start."""

    dim: int
    nsubq: int
    dsub: int
    lastdsub: int
    centroids: int


@dataclass(frozen=True)
class _Matrix:
    """Where one matrix lies: dense (``rows x cols`` float32 at ``data``) or product-quantized (codes at ``data``)."""

    quantized: bool
    rows: int
    cols: int
    data: int
    codesize: int = 0
    pq: _Quantizer | None = None
    norm_codes: int = -1  # quantized norms: ``rows`` codes, then their quantizer
    norm_pq: _Quantizer | None = None


class _Truncated(Exception):
    pass


def _unpack(fmt: str, buf: Any, pos: int) -> tuple:
    end = pos + struct.calcsize(fmt)
    if end > len(buf):
        raise _Truncated
    return struct.unpack_from(fmt, buf, pos)


def _read_pq(buf: Any, pos: int) -> tuple[_Quantizer, int]:
    dim, nsubq, dsub, lastdsub = _unpack("<4i", buf, pos)
    if dim < 0:
        raise ValueError("negative product-quantizer size")
    return _Quantizer(dim, nsubq, dsub, lastdsub, pos + 16), pos + 16 + dim * KSUB * 4


def _read_matrix(buf: Any, pos: int, quantized: bool) -> tuple[_Matrix, int]:
    if not quantized:
        m, n = _unpack("<qq", buf, pos)
        if m < 0 or n < 0:
            raise ValueError("negative matrix size")
        return _Matrix(False, m, n, pos + 16), pos + 16 + m * n * 4
    qnorm, m, n, codesize = _unpack("<?qqi", buf, pos)  # packed: 1 + 8 + 8 + 4 bytes
    if m < 0 or n < 0 or codesize < 0:
        raise ValueError("negative matrix size")
    codes = pos + 21
    pq, pos = _read_pq(buf, codes + codesize)
    norm_codes, norm_pq = -1, None
    if qnorm:
        norm_codes = pos
        norm_pq, pos = _read_pq(buf, pos + m)
    return _Matrix(True, m, n, codes, codesize, pq, norm_codes, norm_pq), pos


class ModelFile:
    """A fastText model file mapped into memory, its layout walked once; one-line errors for anything else.

    Holds the header (``version``, ``args``), the dictionary (``labels``, and where each entry
    ends), and where the pruned n-gram map and both matrices lie; :meth:`kernel` reads those.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        p = Path(path)
        if not p.exists():
            raise CurateError(f"{p}: no such model file")
        if p.is_dir():
            raise CurateError(f"{p}: is a directory, not a fastText model file")
        self.path = str(p)
        self.size = size = p.stat().st_size
        not_ft = f"{p}: not a fastText model (it does not start with fastText's file signature)"
        if size < 8:
            raise CurateError(not_ft)
        try:
            with open(p, "rb") as fh:
                self.buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as exc:
            raise CurateError(f"{p}: cannot read: {exc.strerror or exc}") from None
        try:
            self._walk(not_ft)
        except BaseException as exc:
            self.close()
            if isinstance(exc, _Truncated):
                raise CurateError(
                    f"{p}: truncated fastText model ({size:,} bytes; the file ends inside its header or dictionary)"
                ) from None
            if isinstance(exc, (ValueError, struct.error, OverflowError)):
                raise CurateError(f"{p}: corrupt fastText model ({exc})") from None
            if isinstance(exc, OSError):
                raise CurateError(f"{p}: cannot read: {exc.strerror or exc}") from None
            raise

    def _walk(self, not_ft: str) -> None:
        """Read the header and the dictionary, place the matrices, check that the layout ends where the file does."""
        buf, size, p = self.buf, self.size, self.path
        magic, self.version = _unpack("<ii", buf, 0)
        if magic != MAGIC:
            raise CurateError(not_ft)
        if self.version > VERSION:
            raise CurateError(f"{p}: fastText model format version {self.version} is newer than this fastText reads ({VERSION})")
        self.args = args = Args(*_unpack(_ARGS_FMT, buf, 8))
        pos = 8 + struct.calcsize(_ARGS_FMT)
        n_entries, self.nwords, self.nlabels, _ntokens, self.prune_size = _unpack(_DICT_FMT, buf, pos)
        pos += struct.calcsize(_DICT_FMT)
        if n_entries != self.nwords + self.nlabels or min(n_entries, self.nwords, self.nlabels) < 0 or not 0 < args.dim < 1_000_000:
            raise ValueError("inconsistent dictionary header")
        self.dictionary = pos
        self.ends = array.array("q")  # where each entry's word ends: its NUL, then an int64 count and an int8 type
        labels: list[str] = []
        for _ in range(n_entries):
            end = buf.find(b"\0", pos)
            if end < 0 or end + 10 > size:
                raise _Truncated
            if buf[end + 9] == 1:
                labels.append(buf[pos:end].decode("utf-8", "replace"))
            self.ends.append(end)
            pos = end + 10
        self.labels = tuple(labels)
        self.prune_map = pos  # prune_size pairs of int32 (bucket, row)
        pos += max(self.prune_size, 0) * 8
        (quant,) = _unpack("<?", buf, pos)
        self.input, pos = _read_matrix(buf, pos + 1, quant)
        (self.qout,) = _unpack("<?", buf, pos)
        self.output, pos = _read_matrix(buf, pos + 1, quant and self.qout)
        if pos != size:
            what = "truncated" if pos > size else "corrupt"
            raise CurateError(f"{p}: {what} fastText model (its layout needs {pos:,} bytes, the file has {size:,})")
        if len(labels) != self.nlabels:
            raise CurateError(f"{p}: corrupt fastText model (dictionary lists {self.nlabels} labels, found {len(labels)})")

    @property
    def info(self) -> ModelInfo:
        a = self.args
        kind, loss = MODEL_KINDS.get(a.model, str(a.model)), LOSSES.get(a.loss, str(a.loss))
        return ModelInfo(
            self.path, self.version, kind, loss, a.dim, a.word_ngrams, self.nwords, self.labels, self.input.quantized, self.size
        )

    def close(self) -> None:
        self.buf.close()

    def __enter__(self) -> ModelFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _array(self, dtype: str, count: int, offset: int, align: int = 0) -> np.ndarray:
        """A copy, not a view: the kernel must not read a file that may be rewritten in place (and the mapping can close).

        ``align``: the copy starts at a multiple of that many bytes (the input matrix: a 256-byte row in 4 cache lines, not 5).
        """
        src = np.frombuffer(self.buf, dtype=dtype, count=count, offset=offset)
        if not align:
            return src.copy()
        raw = np.empty(src.nbytes + align, np.uint8)
        start = -raw.ctypes.data % align
        out = raw[start : start + src.nbytes].view(src.dtype)
        out[:] = src
        return out

    def kernel(self) -> KernelModel | None:
        """The model as the compiled kernel runs it, or None: not a kind it runs, or no kernel (the fastText library predicts)."""
        if _native is None:
            return None
        try:
            return self._kernel()
        except (ValueError, struct.error, IndexError):
            return None

    def _kernel(self) -> KernelModel | None:
        a, buf = self.args, self.buf
        dim, bucket, nwords, nlabels, size = a.dim, a.bucket, self.nwords, self.nlabels, len(self.ends)
        if self.version != VERSION or a.model != _SUPERVISED or a.loss not in _KERNEL_LOSS or dim < 1 or bucket < 1:
            return None
        starts = [self.dictionary, *(e + 10 for e in self.ends[:-1])]
        words = [buf[s:e] for s, e in zip(starts, self.ends)]
        counts = [struct.unpack_from("<q", buf, e + 1)[0] for e in self.ends]
        types = [buf[e + 9] for e in self.ends]
        if types[:nwords] != [0] * nwords or types[nwords:] != [1] * nlabels:
            return None
        prune_size = self.prune_size
        prune_map = np.full(1, -1, np.int32)
        if prune_size > 0:
            pairs = self._array("<i4", 2 * prune_size, self.prune_map).reshape(-1, 2)
            prune_map = np.full(bucket, -1, np.int32)
            if pairs[:, 0].min() < 0 or pairs[:, 0].max() >= bucket:
                return None
            prune_map[pairs[:, 0]] = pairs[:, 1]
        inp = self.input
        empty_f = np.zeros(1, np.float32)
        codes, centroids, dense, norms = np.zeros(1, np.uint8), empty_f, empty_f, empty_f
        nsubq = dsub = lastdsub = 0
        if inp.cols != dim:
            return None
        if inp.quantized:
            pq = inp.pq
            assert pq is not None
            nsubq, dsub, lastdsub = pq.nsubq, pq.dsub, pq.lastdsub
            if pq.dim != dim or inp.codesize != inp.rows * nsubq or nsubq < 1 or dsub * (nsubq - 1) + lastdsub != dim:
                return None
            codes = self._array("u1", inp.codesize, inp.data)
            centroids = self._array("<f4", dim * KSUB, pq.centroids)
            norms = np.ones(inp.rows, np.float32)
            if inp.norm_pq is not None:  # each row's norm, product-quantized on its own (one sub-quantizer of dimension 1)
                npq = inp.norm_pq
                if (npq.dim, npq.nsubq, npq.dsub, npq.lastdsub) != (1, 1, 1, 1):
                    return None
                norms = self._array("<f4", KSUB, npq.centroids)[self._array("u1", inp.rows, inp.norm_codes)]
        else:
            dense = self._array("<f4", inp.rows * inp.cols, inp.data, align=64)
        out = self.output
        if self.qout or out.cols != dim or out.rows != nlabels:
            return None
        output = self._array("<f4", out.rows * out.cols, out.data)
        rows = inp.rows
        ngram_rows = bucket if prune_size < 0 else 0 if prune_size == 0 else int(prune_map.max()) + 1
        if rows < nwords + ngram_rows:  # every id the kernel can make must be a row
            return None
        if b"</s>" not in words[:nwords]:
            return None
        # the vocabulary as an open-addressing table by fastText's hash (the kernel builds it): a power of two of slots, half free
        vocab_bytes = b"".join(words)
        if len(vocab_bytes) > 0xFFFFFFFF:
            return None
        vocab_offsets = np.zeros(size + 1, np.int64)
        np.cumsum([len(w) for w in words], out=vocab_offsets[1:])
        nslots = 1 << max(4, (2 * size).bit_length())
        slots = np.full(4 * nslots, 0xFFFFFFFF, np.uint32)  # hash, id (-1: empty), offset, length
        _native.build_vocab(vocab_bytes, vocab_offsets, slots)
        hs = a.loss == _HS
        left, right = _huffman(counts[nwords:]) if hs else (np.zeros(1, np.int32), np.zeros(1, np.int32))
        fields = (
            dim, a.minn, a.maxn, a.word_ngrams, bucket, nwords, _KERNEL_LOSS[a.loss], nlabels, prune_size, nsubq, dsub, lastdsub, int(inp.quantized),
            rows, words.index(b"</s>"), nslots,
            codes, centroids, dense, norms, np.ascontiguousarray(output), left, right, prune_map, slots, vocab_bytes, LABEL_PREFIX.encode(),
        )  # fmt: skip
        return KernelModel(list(self.labels), fields)


def read_model_info(path: str | os.PathLike) -> ModelInfo:
    """Check that ``path`` is a complete fastText model and read what it is (one-line errors)."""
    with ModelFile(path) as f:
        return f.info


def check_classifier(info: ModelInfo) -> None:
    """A one-line error unless the model is a supervised classifier."""
    if info.kind != "supervised":
        raise CurateError(f"{info.path}: a fastText {info.kind} (word-vector) model, not a classifier")


def resolve_label(info: ModelInfo, label: str) -> str:
    """The model's label named ``label`` (``hq`` finds ``__label__hq``); a one-line error listing the labels otherwise."""
    check_classifier(info)
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


# --------------------------------------------------------------------------- the compiled kernel


def _huffman(counts: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """fastText's hierarchical-softmax tree over labels sorted by count (HierarchicalSoftmaxLoss::buildTree)."""
    osz = len(counts)
    n = 2 * osz - 1
    left, right = [-1] * n, [-1] * n
    count = [float(c) for c in counts] + [1e15] * (osz - 1)
    leaf, node = osz - 1, osz
    for i in range(osz, n):
        mini = [0, 0]
        for j in range(2):
            if leaf >= 0 and count[leaf] < count[node]:
                mini[j], leaf = leaf, leaf - 1
            else:
                mini[j], node = node, node + 1
        left[i], right[i] = mini
        count[i] = count[mini[0]] + count[mini[1]]
    return np.array(left, np.int32), np.array(right, np.int32)


def _pack(texts: list[str]) -> tuple[bytes, np.ndarray]:
    """The texts as the kernel reads them: UTF-8 lines (a lone surrogate becomes ``?``), and their offsets (one copy joins them)."""
    data = [t.encode("utf-8", "replace") for t in texts]
    offsets = np.zeros(len(data) + 1, np.int64)
    np.cumsum([len(d) + 1 for d in data], out=offsets[1:])
    data.append(b"")
    return b"\n".join(data), offsets


@dataclass
class KernelModel:
    """A supervised fastText model the kernel can run; :meth:`predict` gives top-1 labels and probabilities."""

    labels: list[str]
    fields: tuple

    def predict(self, texts: list[str]) -> tuple[list[str | None], np.ndarray]:
        """Each text's most probable label (None when fastText would predict nothing) and its probability.

        A text is read as fastText reads one line of ``predict``: it must not hold a newline
        (the caller folds them), and the end-of-sentence token is added.
        """
        data, offsets = _pack(texts)
        idx = np.empty(len(texts), np.int32)
        probs = np.empty(len(texts), np.float32)
        _native.predict(data, offsets, self.fields, idx, probs)
        labels = self.labels
        return [labels[i] if i >= 0 else None for i in idx.tolist()], probs

    def probabilities(self, texts: list[str], label: str) -> np.ndarray:
        """The probability of ``label`` for each one-line text (float32), as ``predict(k=-1, threshold=0.0)`` reports it.

        That is fastText's ``exp(log(p + 1e-5))``; 0 where fastText does not report the label (a
        hierarchical softmax prunes paths below 1e-5), NaN where it predicts nothing (no token).
        """
        data, offsets = _pack(texts)
        probs = np.empty(len(texts), np.float32)
        _native.label_probs(data, offsets, self.fields, self.labels.index(label), probs)
        return probs


def load_kernel(path: str | os.PathLike) -> KernelModel | None:
    """The model in ``path`` ready for the kernel, or None (not a model it runs, not a model at all, or no kernel)."""
    if _native is None:
        return None
    try:
        with ModelFile(path) as f:
            return f.kernel()
    except CurateError:
        return None


# --------------------------------------------------------------------------- classifiers: kernel or library


def _load_library(path: str) -> Any:
    """The fastText library's model of a checked file."""
    from fasttext.FastText import _FastText  # the class fasttext.load_model returns, without any stderr warning

    try:
        return _FastText(model_path=path)
    except (ValueError, RuntimeError, MemoryError) as exc:
        raise CurateError(f"{path}: fastText cannot load the model: {exc}") from None


def label_probabilities(model: Any, lines: list[str], label: str) -> np.ndarray:
    """Probability of ``label`` by the library ``model`` for each one-line text (float32; NaN where fastText predicts nothing)."""
    if not lines:
        return np.zeros(0, dtype=np.float32)
    labels, probs = model.predict(lines, k=-1, threshold=0.0, on_unicode_error="replace")
    out = np.zeros(len(lines), dtype=np.float32)
    for i, (labs, ps) in enumerate(zip(labels, probs)):
        if not len(labs):
            out[i] = np.nan
        for lab, pr in zip(labs, ps):
            if lab == label:
                out[i] = pr
                break
    return out


class Classifier:
    """A fastText classifier file, checked before anything loads it; the kernel and the library model load on first use."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = str(path)
        self._file = ModelFile(self.path)
        self.info = self._file.info
        check_classifier(self.info)

    @functools.cached_property
    def kernel(self) -> KernelModel | None:
        """The kernel's model, or None: the library predicts (a model the kernel does not run, or no kernel)."""
        with self._file:  # its arrays are copies: the mapping closes
            return self._file.kernel()

    @functools.cached_property
    def library(self) -> Any:
        """The fastText library's model."""
        return _load_library(self.path)

    def top1(self, texts: list[str]) -> tuple[list[str | None], list[float]]:
        """Each one-line text's most probable label (None: fastText predicts none) and its probability, as fastText gives them.

        By the kernel where it runs the model; ``CURATE_FASTTEXT=library`` makes the library predict (to compare, or to rule
        the kernel out).
        """
        kernel = None if os.environ.get("CURATE_FASTTEXT") == "library" else self.kernel
        if kernel is not None:
            labels, probs = kernel.predict(texts)
            return labels, probs.tolist()
        labs, ps = self.library.predict(texts, k=1)
        return [lab[0] if len(lab) else None for lab in labs], [float(p[0]) if len(p) else 0.0 for p in ps]

    def probabilities(self, lines: list[str], label: str) -> np.ndarray:
        """Probability of ``label`` for each one-line text as fastText reports it, clipped to [0, 1] (float32; NaN: no prediction).

        By the kernel where it runs the model (``CURATE_FASTTEXT=library``: by the library).
        """
        kernel = None if os.environ.get("CURATE_FASTTEXT") == "library" else self.kernel
        use_kernel = kernel is not None and lines
        out = kernel.probabilities(lines, label) if use_kernel else label_probabilities(self.library, lines, label)  # type: ignore[union-attr]
        return np.clip(out, np.float32(0.0), np.float32(1.0))


@functools.lru_cache(maxsize=16)
def classifier(path: str) -> Classifier:
    """The classifier at ``path``, once per process (workers call this lazily)."""
    return Classifier(path)
