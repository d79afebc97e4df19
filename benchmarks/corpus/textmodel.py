"""The text model: a walk over real sentences of one language (and topic), and sentence splitting."""

from __future__ import annotations

import random
import re

import numpy as np


class Chain:
    """A walk over real sentences of one language (and topic).

    Tokens (words, or characters for Chinese and Japanese) of all sentences are one array with
    an end-of-sentence token between sentences. Positions are grouped by their context (the
    previous ``order`` tokens); the walk copies the source text and, with probability ``q``
    at each token, jumps to a random position with the same context: an order-2 (words) or
    order-3 (characters) Markov chain that keeps runs of real text.
    """

    def __init__(self, sentences: list[str], chars: bool) -> None:
        self.chars = chars
        self.order = 3 if chars else 2
        index: dict[str, int] = {"": 0}
        toks = [0] * self.order
        starts = []
        for s in sentences:
            parts = list(s) if chars else s.split()
            if not parts:
                continue
            starts.append(len(toks))
            toks.extend(index.setdefault(w, len(index)) for w in parts)
            toks.append(0)
        self.vocab = list(index)
        t = np.asarray(toks, dtype=np.int64)
        v = len(self.vocab)
        o = self.order
        key = np.zeros(len(t), dtype=np.int64)
        for k in range(1, o + 1):
            key[o:] = key[o:] * v + t[o - k : len(t) - k]
        key[:o] = -1
        order = np.argsort(key, kind="stable")
        brk = np.flatnonzero(np.diff(key[order])) + 1  # where a new context starts in sorted order
        bounds = np.concatenate([[0], brk, [len(t)]])
        gid = np.searchsorted(brk, np.arange(len(t)), side="right")
        lo = np.empty(len(t), dtype=np.int32)
        cnt = np.empty(len(t), dtype=np.int32)
        lo[order] = bounds[gid]
        cnt[order] = bounds[gid + 1] - bounds[gid]
        self.tokens = t.astype(np.int32)
        self.sorted_pos = order.astype(np.int32)
        self.lo = lo
        self.cnt = cnt
        self.starts = np.asarray(starts, dtype=np.int32)
        self.n_tokens = len(toks) - len(starts) - o
        self._views = None

    def state(self) -> dict:
        """Plain data (numpy arrays, lists) for the cache: no class reference in the pickle."""
        return {k: v for k, v in self.__dict__.items() if k != "_views"}

    @classmethod
    def from_state(cls, state: dict) -> Chain:
        obj = cls.__new__(cls)
        obj.__dict__.update(state)
        obj._views = None
        return obj

    def views(self):
        if self._views is None:
            self._views = (memoryview(self.tokens), memoryview(self.sorted_pos), memoryview(self.lo), memoryview(self.cnt),
                           memoryview(self.starts))  # fmt: skip
        return self._views

    def sentences(self, rng: random.Random, n: int, q: float = 0.3, cont: float = 0.5, max_len: int = 70) -> list[str]:
        """``n`` sentences; at a sentence end the walk goes on to the next real sentence with probability ``cont``."""
        tokens, spos, lo, cnt, starts = self.views()
        vocab = self.vocab
        join = "" if self.chars else " "
        max_len = max_len * 3 if self.chars else max_len
        out = []
        rnd = rng.random
        n_starts = len(starts)
        p = starts[int(rnd() * n_starts)]
        for _ in range(n):
            words = []
            while True:
                t = tokens[p]
                if t == 0 or len(words) >= max_len:
                    break
                words.append(vocab[t])
                p += 1
                if rnd() < q:
                    c = cnt[p]
                    if c > 1:
                        p = spos[lo[p] + int(rnd() * c)]
            if words:
                s = join.join(words)
                if len(words) >= max_len and s[-1] not in ".!?。！？":
                    s += "。" if self.chars else "."
                out.append(s)
            if tokens[p] == 0 and p + 1 < len(tokens) and rnd() < cont:
                p += 1
            else:
                p = starts[int(rnd() * n_starts)]
        return out

    def words(self, rng: random.Random, n: int) -> list[str]:
        """``n`` random tokens of the vocabulary (as they occur: frequent ones more often)."""
        tokens = self.views()[0]
        out = []
        size = len(self.tokens)
        while len(out) < n:
            t = tokens[int(rng.random() * size)]
            if t:
                out.append(self.vocab[t])
        return out


_CASED_START = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'”’)]))\s+(?=[\"“‘(\[¿¡]?[A-ZÀ-ÖØ-ÞА-ЯЁΑ-Ω0-9])")
_ANY_END = re.compile(r"(?<=[.!?؟।॥።។።።])\s+")
_CJK_END = re.compile(r"(?<=[。！？!?])")


def split_sentences(para: str, chars: bool) -> list[str]:
    para = re.sub(r"\s+", " ", para).strip()
    if not para:
        return []
    if chars:
        parts = _CJK_END.split(para.replace(" ", ""))
    elif any(c.isupper() for c in para[:300]):
        parts = _CASED_START.split(para)
    else:
        parts = _ANY_END.split(para)
    out = []
    for s in parts:
        s = s.strip()
        n = len(s) if chars else len(s.split())
        if (chars and 6 <= n <= 300) or (not chars and 3 <= n <= 120):
            out.append(s)
    return out
