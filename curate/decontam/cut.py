"""Finding evaluation n-grams in documents and cutting them out (MT-NLG's rule).

The rule, for one document (``cut_spans``), follows Megatron-LM's
``tools/openwebtext/filter_ngrams.py`` (the MT-NLG decontamination code):

1. Take the first match (lowest start; among matches starting at the same word, the
   longest). Its span runs from its first word's first character ``s`` to its last
   word's last character ``e``.
2. Left cut: the removed region starts just after the last *sentence end* (``.``, ``!``
   or ``?``) at or before ``s - cut_chars``, not before the current piece's start. The
   text before it is a piece. With no sentence end there, nothing before ``s`` is kept.
3. Right cut: the removed region ends just after the first sentence end at or after
   ``e + cut_chars``; with none, it runs to the end of the document.
4. A later match that starts inside the removed region extends it to the sentence end
   after its own end + ``cut_chars``; then continue with the rest of the document.
5. Pieces shorter than ``min_piece_chars`` are dropped; a document left with more than
   ``max_pieces`` pieces is dropped whole.

Differences from filter_ngrams.py, all small: step 4 (MT-NLG re-scans only the text after
the region, so the tail of a match that straddles the region's end, fewer than 13 words,
stays in the next piece without any margin); the match end is the exact end of its last
word (MT-NLG adds the length of the space-joined lowercase words, which is off when words
are separated by more than one character); a piece of exactly ``min_piece_chars`` is
kept (MT-NLG keeps only longer ones); at one position the longest match wins (MT-NLG
takes the 13-gram, else the shortest short key); short keys are looked for at every
position (MT-NLG skips a few at the end of documents of exactly 13 words); a key's
frequency is the number of documents that contain it anywhere (MT-NLG's counting pass
skips overlapping matches) and a key is ignored when that number is *over* the limit
(MT-NLG: at or over).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from curate.decontam.index import Index
from curate.decontam.ngrams import batch_words, ngram_keys
from curate.runtime import MapResult
from curate.schema import BASE_FIELDS, rejected_schema, with_column

SENTENCE_ENDS = ".!?"
_META_FIELD = BASE_FIELDS[4]


@dataclass
class Matches:
    """Evaluation keys found in a batch of documents, sorted by (doc, start, -end)."""

    doc: np.ndarray  # int64 index into the batch
    start: np.ndarray  # int64 character offsets
    end: np.ndarray
    key: np.ndarray  # uint64
    long: np.ndarray  # bool: from the n-gram table (else a whole short text)
    row: np.ndarray  # int64: first row of the key in its table
    words: np.ndarray  # int64: words per document of the batch

    def __len__(self) -> int:
        return int(self.doc.size)

    def select(self, mask: np.ndarray) -> Matches:
        return Matches(self.doc[mask], self.start[mask], self.end[mask], self.key[mask], self.long[mask], self.row[mask], self.words)


def find_matches(texts: list[str], index: Index) -> Matches:
    """Every occurrence of an index key in ``texts`` (vectorised: no Python loop per word)."""
    w = batch_words(texts)
    n = index.n
    grams = ngram_keys(w, [n, *index.short_lengths])
    parts = []
    for k, (first, keys) in grams.items():
        is_long = k == n
        table = index.long if is_long else index.short
        pos, row = table.lookup(keys)
        if pos.size == 0:
            continue
        f = first[pos]
        parts.append((w.doc[f], w.start[f], w.end[f + k - 1], keys[pos], np.full(pos.size, is_long), row))
    words = np.bincount(w.doc, minlength=len(texts)) if len(w) else np.zeros(len(texts), dtype=np.int64)
    if not parts:
        z = np.zeros(0, dtype=np.int64)
        return Matches(z, z, z, np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.bool_), z, words)
    cols = [np.concatenate([p[i] for p in parts]) for i in range(6)]
    order = np.lexsort((-cols[2], cols[1], cols[0]))
    return Matches(*(c[order] for c in cols), words)


def in_sorted(sorted_arr: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Boolean mask: which of ``q`` are in the sorted array."""
    if sorted_arr.size == 0 or q.size == 0:
        return np.zeros(q.size, dtype=np.bool_)
    pos = np.searchsorted(sorted_arr, q)
    pos[pos == sorted_arr.size] = 0
    return sorted_arr[pos] == q


def id_hashes(ids: list[Any]) -> np.ndarray:
    """xxh3-64 of each document id (a collision only costs a re-scan, never a wrong cut)."""
    h = xxhash.xxh3_64_intdigest
    return np.fromiter((h(("" if i is None else str(i)).encode("utf-8", "surrogatepass")) for i in ids), dtype=np.uint64, count=len(ids))


def _last_end(text: str, lo: int, hi: int, ends: str) -> int:
    """Index of the last sentence end in ``text[lo:hi+1]``, or -1."""
    if hi < lo:
        return -1
    return max(text.rfind(c, lo, hi + 1) for c in ends)


def _first_end(text: str, lo: int, ends: str) -> int:
    """Index of the first sentence end at or after ``lo``, or -1."""
    found = [i for i in (text.find(c, lo) for c in ends) if i >= 0]
    return min(found) if found else -1


def cut_spans(
    text: str, spans: list[tuple[int, int]], cut_chars: int = 200, ends: str = SENTENCE_ENDS
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Pieces left and regions removed, as (start, end) offsets in order; ``spans`` sorted by (start, -end).

    See the module docstring for the rule. Pieces are not yet filtered by length.
    """
    length = len(text)

    def right_end(e: int) -> int:
        q = _first_end(text, e + cut_chars, ends) if e + cut_chars < length else -1
        return q + 1 if q >= 0 else length

    pieces: list[tuple[int, int]] = []
    removed: list[tuple[int, int]] = []
    seg, i = 0, 0
    while seg < length:
        if i == len(spans):
            pieces.append((seg, length))
            break
        s, e = spans[i]
        p = _last_end(text, seg, s - cut_chars, ends)
        if p >= seg:
            pieces.append((seg, p + 1))
        cut_from = p + 1 if p >= seg else seg
        cut_to = right_end(e)
        i += 1
        while i < len(spans) and spans[i][0] < cut_to:  # a match that starts inside the region extends it
            cut_to = max(cut_to, right_end(spans[i][1]))
            i += 1
        removed.append((cut_from, cut_to))
        seg = cut_to
    return pieces, removed


def _piece_meta(meta: str | None, parent: str, k: int, offset: int) -> str:
    obj: dict[str, Any]
    if meta is None:
        obj = {}
    else:
        try:
            parsed = json.loads(meta)
        except ValueError:
            parsed = meta
        obj = parsed if isinstance(parsed, dict) else {"parent_meta": parsed}
    obj = {**obj, "decontam_parent": parent, "decontam_piece": k, "decontam_offset": offset}
    return json.dumps(obj, ensure_ascii=False)


def _set_counters() -> dict[str, int]:
    return {
        "docs_contaminated": 0,
        "docs_dropped": 0,
        "docs_emptied": 0,
        "pieces_kept": 0,
        "pieces_dropped": 0,
        "chars_removed": 0,
        "matches": 0,
    }


def shard_cut_docs(counts: Any, ignored: np.ndarray) -> np.ndarray:
    """The sorted id hashes of one shard's documents that hold a key not in ``ignored`` (from its count file)."""
    from curate.storage import np_load

    with np_load(counts, mmap=False) as z:
        docs, keys = z["docs"], z["keys"]
    if len(ignored):
        docs = docs[~in_sorted(np.asarray(ignored), keys)]
    return np.unique(docs)


@dataclass
class DecontamStage:
    """The cutting pass: a map stage over documents, given the index and the counting pass's results.

    ``work`` is the folder with ``index/`` and ``ignored.npy`` (keys over the frequency limit);
    ``counts`` this shard's count file, whose documents with a key not ignored are the ones to
    cut (so no process holds the documents to cut of the whole corpus). Only those documents
    are tokenised again; every other document passes through untouched. ``shared`` (Ray):
    handles from ``Executor.share`` to the index and to the ignored keys, put in the object
    store once.
    """

    evals: list[str]
    eval_fields: list[str]
    eval_splits: list[str]
    eval_fingerprint: str
    ngram: int = 13
    min_ngram: int = 8
    cut_chars: int = 200
    min_piece_chars: int = 200
    max_pieces: int = 10
    freq_limit: int = 10
    sentence_ends: str = SENTENCE_ENDS
    work: str = ""
    shared: tuple[Any, Any] | None = None
    counts: str = ""  # this shard's count file (its (id hash, key) pairs): the documents to cut are its own

    # -- lazily opened work files (memory maps; never pickled to workers)
    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def _load(self) -> None:
        if getattr(self, "_index", None) is None:
            from curate.storage import as_path, np_load

            work = as_path(self.work)
            if self.shared is not None:
                self._index = self.shared[0].get()
                self._ignored = self.shared[1].get()
            else:
                self._index = Index.open(work / "index")
                self._ignored = np_load(work / "ignored.npy")
            self._cut_docs = shard_cut_docs(as_path(self.counts), self._ignored)

    def __call__(self, table: pa.Table) -> MapResult:
        self._load()
        if "meta" not in table.column_names:
            table = with_column(table, _META_FIELD, pa.nulls(table.num_rows, pa.string()))
        totals: dict[str, int] = _set_counters()
        per_set: dict[str, dict[str, int]] = {}
        counters: dict[str, Any] = {"decontam": totals, "decontam_per_eval_set": per_set}
        if not getattr(self, "_counted", False):  # once per shard: its documents to cut
            self._counted = True
            counters["decontam_docs_to_cut"] = int(len(self._cut_docs))
        no_rejects = rejected_schema(table.schema).empty_table()
        ids = table.column("id").to_pylist()
        cand = np.flatnonzero(in_sorted(self._cut_docs, id_hashes(ids)))
        if cand.size == 0:
            return MapResult(table, no_rejects, counters)
        texts = [t or "" for t in table.column("text").take(pa.array(cand)).to_pylist()]
        metas = table.column("meta").take(pa.array(cand)).to_pylist()
        m = find_matches(texts, self._index)
        m = m.select(~in_sorted(self._ignored, m.key))
        bounds = np.searchsorted(m.doc, np.arange(len(texts) + 1))
        outcome: dict[int, list[Piece]] = {}  # input row -> its kept pieces (none: dropped)
        rej_rows: list[int] = []
        rej_new: list[Piece | None] = []
        reasons: list[str] = []
        for j, row in enumerate(cand.tolist()):
            a, b = int(bounds[j]), int(bounds[j + 1])
            if a == b:  # only too-common n-grams, or an id-hash collision: untouched
                continue
            text, parent, meta = texts[j], ids[row], metas[j]
            spans = list(dict.fromkeys(zip(m.start[a:b].tolist(), m.end[a:b].tolist())))
            pieces = list(enumerate(cut_spans(text, spans, self.cut_chars, self.sentence_ends)[0]))
            kept = [(k, p) for k, p in pieces if p[1] - p[0] >= self.min_piece_chars]
            short = [(k, p) for k, p in pieces if p[1] - p[0] < self.min_piece_chars]
            dropped = len(kept) > self.max_pieces
            sets = {
                sid
                for r, lg in zip(m.row[a:b].tolist(), m.long[a:b].tolist())
                for sid in (self._index.long if lg else self._index.short).sets_of(r)
            }
            counts = {
                "docs_contaminated": 1,
                "docs_dropped": int(dropped),
                "docs_emptied": int(not kept),
                "pieces_kept": 0 if dropped else len(kept),
                "pieces_dropped": len(short) + (len(kept) if dropped else 0),
                "chars_removed": len(text) - (0 if dropped else sum(e - s for _, (s, e) in kept)),
                "matches": b - a,
            }
            for target in [totals] + [per_set.setdefault(self._index.set_names[sid], _set_counters()) for sid in sorted(sets)]:
                for key, value in counts.items():
                    target[key] += value

            def piece(k: int, s: int, e: int, parent: str = parent, text: str = text, meta: str | None = meta) -> Piece:
                return Piece(f"{parent}-{k}", text[s:e], _piece_meta(meta, parent, k, s))

            outcome[row] = [] if dropped else [piece(k, s, e) for k, (s, e) in kept]
            if dropped or not pieces:
                rej_rows.append(row)
                rej_new.append(None)
                reasons.append("decontam_too_many_pieces" if dropped else "decontam_emptied")
            else:
                for k, (s, e) in short:
                    rej_rows.append(row)
                    rej_new.append(piece(k, s, e))
                    reasons.append("decontam_short_piece")
        out_rows: list[int] = []
        out_new: list[Piece | None] = []
        for i in range(table.num_rows):  # input order; a split document's pieces take its place
            if i in outcome:
                out_rows.extend([i] * len(outcome[i]))
                out_new.extend(outcome[i])
            else:
                out_rows.append(i)
                out_new.append(None)
        rejected = _assemble(table, rej_rows, rej_new).append_column(
            pa.field("reason", pa.string(), nullable=False), pa.array(reasons, pa.string())
        )
        return MapResult(_assemble(table, out_rows, out_new), rejected, counters)


class Piece(NamedTuple):
    """A piece of a split document: its new id, text and meta."""

    id: str
    text: str
    meta: str


def _assemble(table: pa.Table, rows: list[int], new: list[Piece | None]) -> pa.Table:
    """``table.take(rows)``, with the id, text and meta of row k replaced by ``new[k]`` when it is a piece."""
    out = table.take(pa.array(rows, pa.int64()))
    repl = [(k, p) for k, p in enumerate(new) if p is not None]
    if not repl:
        return out
    mask = np.zeros(len(rows), dtype=np.bool_)
    mask[[k for k, _ in repl]] = True
    for i, col in enumerate(("id", "text", "meta")):
        f = out.schema.field(col)
        values = pa.array([p[i] for _, p in repl], f.type)
        out = out.set_column(
            out.schema.get_field_index(col), f, pc.replace_with_mask(out.column(col).combine_chunks(), pa.array(mask), values)
        )
    return out
