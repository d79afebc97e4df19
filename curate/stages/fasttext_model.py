"""fastText classifiers read from their file and run by a compiled kernel (``_fasttext.c``).

fastText's own ``predict`` spends most of its time building strings: every token and each of
its character n-grams becomes a ``std::string`` before it is hashed. The kernel does the same
arithmetic on the bytes where they are: the same tokens, hashes, pruning and buckets, the
hidden vector summed in float32 in fastText's order, the same hierarchical-softmax search or
softmax. The labels and probabilities are fastText's (tests compare them on real text), about
ten times faster.

:func:`load` reads a model file in fastText's binary format (version 12, as fastText 0.9.x
writes ``.bin`` and ``.ftz``): a supervised model with a hierarchical-softmax or softmax output,
a dense or product-quantized input matrix (norms quantized or not) and a dense output matrix.
For anything else (other versions, a quantized output), or when the kernel was not built, it
returns ``None`` and the caller uses the fasttext library.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

try:  # setup.py builds it (optional)
    from curate.stages import _fasttext as _native
except ImportError:  # no C compiler at install time: the fasttext library predicts
    _native = None

MAGIC, VERSION = 793712314, 12
_LOSS_HS, _LOSS_SOFTMAX, _MODEL_SUPERVISED = 1, 3, 3
KSUB = 256


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ValueError("the file ends early")
        out = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return out

    def array(self, dtype: str, count: int) -> np.ndarray:
        size = np.dtype(dtype).itemsize * count
        if count < 0 or self.pos + size > len(self.data):
            raise ValueError("the file ends early")
        out = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.pos)
        self.pos += size
        return out

    def cstring(self) -> bytes:
        end = self.data.index(b"\0", self.pos)
        out = self.data[self.pos : end]
        self.pos = end + 1
        return out


def fasttext_hash(word: bytes) -> int:
    """fastText's word hash: FNV-1a over the bytes, each sign-extended (``uint32_t(int8_t(c))``)."""
    h = 2166136261
    for c in word:
        h ^= (c - 256 if c > 127 else c) & 0xFFFFFFFF
        h = (h * 16777619) & 0xFFFFFFFF
    return h


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


@dataclass
class FastTextModel:
    """A supervised fastText model the kernel can run; :meth:`predict` gives top-1 labels and probabilities."""

    labels: list[str]
    fields: tuple

    def predict(self, texts: list[str]) -> tuple[list[str | None], np.ndarray]:
        """Each text's most probable label (None when fastText would predict nothing) and its probability.

        A text is read as fastText reads one line of ``predict``: it must not hold a newline
        (the caller folds them), and the end-of-sentence token is added.
        """
        data = [t.encode("utf-8") + b"\n" for t in texts]
        offsets = np.zeros(len(data) + 1, np.int64)
        np.cumsum([len(d) for d in data], out=offsets[1:])
        idx = np.empty(len(data), np.int32)
        probs = np.empty(len(data), np.float32)
        _native.predict(b"".join(data), offsets, self.fields, idx, probs)
        labels = self.labels
        return [labels[i] if i >= 0 else None for i in idx.tolist()], probs


def load(path: str | Path) -> FastTextModel | None:
    """The model in ``path`` ready for the kernel, or None (not a kind it runs, or no kernel): use the fasttext library."""
    if _native is None:
        return None
    try:
        return _parse(Path(path).read_bytes())
    except (ValueError, struct.error, IndexError):
        return None


def _parse(data: bytes) -> FastTextModel | None:
    r = _Reader(data)
    magic, version = r.take("<ii")
    if magic != MAGIC or version != VERSION:
        return None
    dim, _ws, _epoch, _min_count, _neg, word_ngrams, loss, model, bucket, minn, maxn, _lr_update, _t = r.take("<12id")
    if model != _MODEL_SUPERVISED or loss not in (_LOSS_HS, _LOSS_SOFTMAX) or dim < 1 or bucket < 1:
        return None
    size, nwords, nlabels, _ntokens, prune_size = r.take("<iiiqq")
    words: list[bytes] = []
    types: list[int] = []
    counts: list[int] = []
    for _ in range(size):
        w = r.cstring()
        count, etype = r.take("<qb")
        words.append(w)
        types.append(etype)
        counts.append(count)
    if types[:nwords] != [0] * nwords or types[nwords:] != [1] * nlabels or nwords + nlabels != size:
        return None
    prune_map = np.full(1, -1, np.int32)
    if prune_size > 0:
        pairs = r.array("<i4", 2 * prune_size).reshape(-1, 2)
        prune_map = np.full(bucket, -1, np.int32)
        if pairs[:, 0].min() < 0 or pairs[:, 0].max() >= bucket:
            return None
        prune_map[pairs[:, 0]] = pairs[:, 1]
    (quant,) = r.take("<?")
    empty_f = np.zeros(1, np.float32)
    codes, centroids, dense, norms = np.zeros(1, np.uint8), empty_f, empty_f, empty_f
    nsubq = dsub = lastdsub = 0
    if quant:
        qnorm, rows, cols, codesize = r.take("<?qqi")
        if cols != dim:
            return None
        codes = r.array("u1", codesize)
        pq_dim, nsubq, dsub, lastdsub = r.take("<iiii")
        if pq_dim != dim or codesize != rows * nsubq or nsubq < 1 or dsub * (nsubq - 1) + lastdsub != dim:
            return None
        centroids = r.array("<f4", dim * KSUB)
        norms = np.ones(rows, np.float32)
        if qnorm:  # each row's norm, product-quantized on its own (one sub-quantizer of dimension 1)
            norm_codes = r.array("u1", rows)
            npq = r.take("<iiii")
            if npq != (1, 1, 1, 1):
                return None
            norms = r.array("<f4", KSUB)[norm_codes]
    else:
        rows, cols = r.take("<qq")
        if cols != dim:
            return None
        dense = r.array("<f4", rows * cols)
    (qout,) = r.take("<?")
    if qout:
        return None
    out_rows, out_cols = r.take("<qq")
    output = r.array("<f4", out_rows * out_cols)
    if out_cols != dim or out_rows != nlabels:
        return None
    ngram_rows = bucket if prune_size < 0 else 0 if prune_size == 0 else int(prune_map.max()) + 1
    if rows < nwords + ngram_rows:  # every id the kernel can make must be a row
        return None
    if b"</s>" not in words[:nwords]:
        return None
    # the vocabulary as an open-addressing table by fastText's hash
    nslots = max(16, 2 * size + 1)
    slots = np.full(nslots, -1, np.int32)
    for i, w in enumerate(words):
        s = fasttext_hash(w) % nslots
        while slots[s] >= 0:
            s = (s + 1) % nslots
        slots[s] = i
    vocab_offsets = np.zeros(size + 1, np.int64)
    np.cumsum([len(w) for w in words], out=vocab_offsets[1:])
    hs = loss == _LOSS_HS
    left, right = _huffman(counts[nwords:]) if hs else (np.zeros(1, np.int32), np.zeros(1, np.int32))
    fields = (
        dim, minn, maxn, word_ngrams, bucket, nwords, int(hs), nlabels, prune_size, nsubq, dsub, lastdsub, int(quant), rows,
        words.index(b"</s>"), nslots,
        codes, centroids, dense, norms, np.ascontiguousarray(output), left, right, prune_map, slots, b"".join(words), vocab_offsets,
        np.array(types, np.int8), b"__label__",
    )  # fmt: skip
    labels = [w.decode("utf-8", "replace") for w in words[nwords:]]
    return FastTextModel(labels, fields)
