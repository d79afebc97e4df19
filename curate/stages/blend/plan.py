"""Sources, the plan and the blended corpus: how many tokens each source gives, which documents, in what order.

Each source's documents are sampled without replacement within each epoch (whole epochs,
then a seeded prefix of one more permutation, cut at the document that lands closest to
the target), and the sources are interleaved uniformly at random, deterministic by seed.
Memory does not grow with the sources: a permutation is computed in chunks (a Feistel
bijection, :class:`Permutation`), the lengths are read from the sources' memory-mapped
indexes, and the output's index is written in place as documents arrive.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from curate import megatron
from curate.dataset import is_curate_dir, record_fingerprint
from curate.errors import CurateError
from curate.stages.blend.config import BlendConfig, SourceSpec
from curate.storage import as_path, rmtree, write_json_atomic
from curate.targets import read_json

log = logging.getLogger("curate")

CHUNK_DOCS = 1 << 16  # documents per output chunk


# --------------------------------------------------------------------------- sources


@dataclass
class SourceInfo:
    """A source resolved to a tokenized prefix."""

    spec: SourceSpec
    prefix: str
    documents: int
    tokens: int
    max_doc_tokens: int
    dtype: np.dtype
    tokenizer: dict[str, Any] | None


def _stats_tokenizer(prefix: str) -> dict[str, Any] | None:
    import json

    p = as_path(f"{prefix}.stats.json")
    try:
        return json.loads(p.read_text()).get("tokenizer")
    except (OSError, ValueError):
        return None


class EmptySource(CurateError):
    """A source of the config has no documents (no path, an empty prefix, no document of its sources)."""


def inspect_prefix(spec: SourceSpec, prefix: str, where: str) -> SourceInfo:
    """Counts of a tokenized prefix; an empty one is an error naming the source."""
    ds = megatron.IndexedDataset(prefix)
    if not ds.one_sequence_per_document():
        raise CurateError(
            f"{where}: {prefix} has documents of several sequences (--split-sentences); blend needs one sequence per document"
        )
    n = ds.num_documents
    tokens = ds.num_tokens
    if n == 0 or tokens == 0:
        raise EmptySource(f"{prefix} is empty (0 documents)")
    info = SourceInfo(spec, prefix, n, tokens, int(ds.sequence_lengths.max()), ds.dtype, _stats_tokenizer(prefix))
    del ds
    return info


def source_prefix(spec: SourceSpec) -> str | None:
    """The tokenized prefix a source path names (``X``, ``X.bin`` or ``X.idx``), or None."""
    p = spec.path
    for suffix in (".bin", ".idx"):
        if p.endswith(suffix) and megatron.exists(p[: -len(suffix)]):
            p = p[: -len(suffix)]
    return p if megatron.exists(p) else None


def _resolve_source(spec: SourceSpec, where: str, config: BlendConfig, out: Path, run_map: Any) -> SourceInfo:
    """One source as a tokenized prefix (a dataset directory is tokenized into OUT/sources/ first, or reused)."""
    from curate.dataset import resolve_inputs
    from curate.stages.tokenize import NoDocuments, Outputs, source_slug, tokenize_files

    p = source_prefix(spec)
    if p is not None:
        if spec.sources or spec.buckets:
            what = "sources" if spec.sources else "buckets"
            raise CurateError(f"{where}: {what} applies to dataset directories, and {p} is a tokenized prefix")
        return inspect_prefix(spec, p, where)
    if not as_path(spec.path).is_dir():
        raise EmptySource(f"no tokenized prefix ({spec.path}.bin and .idx) or dataset directory at {spec.path}")
    prefix = out / "sources" / source_slug(spec.name)
    settings = {"tokenizer": config.tokenizer, "append_eod": config.append_eod, "sources": spec.sources,
                **({"buckets": list(spec.buckets)} if spec.buckets else {}),
                "input": record_fingerprint(as_path(spec.path)) if is_curate_dir(as_path(spec.path)) else None}  # fmt: skip
    stats = read_json(as_path(f"{prefix}.stats.json"))
    work = as_path(f"{prefix}.work")
    if stats is None or stats.get("blend_source") != settings or not megatron.exists(str(prefix)):
        log.info("blend: tokenizing %s (%s) into %s", spec.name, spec.path, prefix)
        try:
            record = tokenize_files(run_map, resolve_inputs([spec.path]), Outputs(as_path(str(prefix)), False),
                                    tokenizer=config.tokenizer, append_eod=config.append_eod, sources=spec.sources,
                                    work_params=settings, buckets=spec.buckets)  # fmt: skip
        except NoDocuments as exc:
            rmtree(work, ignore_errors=True)
            raise EmptySource(str(exc)) from None
        except CurateError as exc:
            raise CurateError(f"{where}: {exc}") from exc
        write_json_atomic(as_path(f"{prefix}.stats.json"), {**record, "blend_source": settings})
    if work.exists():  # done (now, or by a run killed before it removed its pieces)
        rmtree(work, ignore_errors=True)
    return inspect_prefix(spec, str(prefix), where)


def resolve_sources(
    config: BlendConfig,
    out: Path,
    *,
    run_map: Any,
    skip_missing: bool = False,
    skipped: list[str] | None = None,
) -> list[SourceInfo]:
    """Each source as a tokenized prefix: prefixes as they are, dataset directories tokenized into OUT/sources/.

    A source tokenized by an earlier run of this blend (same settings and input) is reused.
    With ``skip_missing`` a source without documents (no path, an empty prefix, none of its
    ``sources`` in a directory) is left out with a warning line (its name is appended to
    ``skipped``) instead of being an error.
    """
    from curate.tokenizer import load_tokenizer

    infos: list[SourceInfo] = []
    for spec in config.sources:
        where = f"{config.path}: source {spec.name!r}"
        try:
            infos.append(_resolve_source(spec, where, config, out, run_map))
        except EmptySource as exc:
            if not skip_missing:
                raise CurateError(f"{where}: {exc}; --skip-missing leaves such a source out (the other weights renormalise)") from None
            log.warning("blend: source %r has no documents (%s): left out, the other weights renormalise", spec.name, exc)
            if skipped is not None:
                skipped.append(spec.name)
    if not infos:
        raise CurateError(f"{config.path}: none of its sources exists")
    # all sources must share one tokenizer
    dtypes = {i.dtype for i in infos}
    if len(dtypes) > 1:
        a = infos[0]
        b = next(i for i in infos if i.dtype != a.dtype)
        raise CurateError(f"{config.path}: sources {a.spec.name!r} ({a.dtype}) and {b.spec.name!r} ({b.dtype}) have different token types")
    known = [i for i in infos if i.tokenizer is not None]
    for i in known[1:]:
        if i.tokenizer.get("sha256") != known[0].tokenizer.get("sha256"):
            raise CurateError(
                f"{config.path}: sources {known[0].spec.name!r} ({known[0].tokenizer.get('name')}) and {i.spec.name!r} "
                f"({i.tokenizer.get('name')}) were tokenized with different tokenizers"
            )
    if len(known) < len(infos):
        unknown = ", ".join(i.spec.name for i in infos if i.tokenizer is None)
        log.warning("blend: no .stats.json beside %s; cannot check that they share the other sources' tokenizer", unknown)
    if not known:
        tok = load_tokenizer(config.tokenizer)
        log.info("blend: assuming the sources were tokenized with %s", tok.name)
    return infos


# --------------------------------------------------------------------------- plan


@dataclass
class BlendRow:
    """One line of the blend table."""

    name: str
    prefix: str
    documents: int
    tokens_available: int
    weight: float  # share of the blend's tokens
    epochs: float  # tokens taken / tokens available
    target_tokens: int
    tokens_taken: int
    docs_taken: int = 0
    max_doc_tokens: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "prefix": self.prefix,
            "documents": self.documents,
            "tokens_available": self.tokens_available,
            "weight": self.weight,
            "epochs": self.epochs,
            "target_tokens": self.target_tokens,
            "tokens_taken": self.tokens_taken,
            "docs_taken": self.docs_taken,
        }


def plan_blend(infos: list[SourceInfo], total_tokens: int | str | None, max_epochs: float, where: str) -> list[BlendRow]:
    """Token targets per source: epochs sources first, weighted ones share the rest by weight."""
    fixed = {i.spec.name: int(round(i.spec.epochs * i.tokens)) for i in infos if i.spec.epochs is not None}
    weighted = [i for i in infos if i.spec.weight is not None]
    wsum = sum(i.spec.weight for i in weighted)
    used = sum(fixed.values())
    if weighted:
        if total_tokens is None:
            raise CurateError(f"{where}: total_tokens is required when a source has a weight (a number, e.g. 270B, or auto)")
        if total_tokens == "auto":
            rest = min(i.tokens / (i.spec.weight / wsum) for i in weighted)
            total_tokens = used + int(math.floor(rest))
            log.info("blend: total_tokens auto = %d (no weighted source taken more than once)", total_tokens)
        rest = total_tokens - used
        if rest <= 0:
            raise CurateError(
                f"{where}: the sources given in epochs already take {used:,} tokens, not less than total_tokens {total_tokens:,}"
            )
    else:
        if isinstance(total_tokens, int) and total_tokens != used:
            log.warning("blend: every source is given in epochs; the blend has %d tokens, not total_tokens %d", used, total_tokens)
        total_tokens, rest = used, 0
    exact: dict[str, float] = {k: float(v) for k, v in fixed.items()}
    for i in weighted:
        exact[i.spec.name] = rest * i.spec.weight / wsum
    total = sum(exact.values())
    rows = []
    for i in infos:
        t = int(round(exact[i.spec.name]))
        epochs = exact[i.spec.name] / i.tokens
        if epochs > max_epochs + 1e-9:
            how = f"weight {i.spec.weight:g}" if i.spec.weight is not None else f"epochs {i.spec.epochs:g}"
            raise CurateError(
                f"{where}: source {i.spec.name!r}: {how} needs {epochs:.2f} passes over its {i.tokens:,} tokens "
                f"(more than max_epochs {max_epochs:g}); lower its weight or total_tokens, or raise --max-epochs"
            )
        weight = exact[i.spec.name] / total if total else 0.0
        rows.append(BlendRow(i.spec.name, i.prefix, i.documents, i.tokens, weight, t / i.tokens, t, t, max_doc_tokens=i.max_doc_tokens))
    return rows


def _source_key(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")


ORDER_CHUNK = 1 << 16  # positions of a permutation made at once (512 kB): what a source's order costs in memory


class Permutation:
    """A seeded bijection of ``range(n)``, computed in chunks: memory does not grow with ``n``.

    A balanced Feistel network of four rounds (splitmix64 round functions keyed by the seed)
    over the smallest power-of-two domain of an even number of bits holding ``n``, with cycle
    walking (a value outside ``range(n)`` is encrypted again until it lands inside, which keeps
    the map a bijection of ``range(n)``). The same seed gives the same order on every machine.
    """

    def __init__(self, n: int, seed: Any) -> None:
        self.n = int(n)
        bits = max(2, int(self.n - 1).bit_length())
        self.half = (bits + 1) // 2
        self.mask = np.uint64((1 << self.half) - 1)
        ss = np.random.SeedSequence(seed)
        self.keys = [np.uint64(k) for k in ss.generate_state(4, np.uint64)]

    def _encrypt(self, x: np.ndarray) -> np.ndarray:
        from curate.partitions import mix64

        h = np.uint64(self.half)
        left, right = x >> h, x & self.mask
        for k in self.keys:
            left, right = right, left ^ (mix64(right ^ k) & self.mask)
        return (left << h) | right

    def __call__(self, positions: np.ndarray) -> np.ndarray:
        """The documents at ``positions`` (ints below n) of the permuted order."""
        x = self._encrypt(positions.astype(np.uint64))
        out = x >= np.uint64(self.n)
        while out.any():  # cycle walking: at most a few rounds (the domain is under 4n)
            x[out] = self._encrypt(x[out])
            out = x >= np.uint64(self.n)
        return x.astype(np.int64)

    def chunks(self, stop: int | None = None) -> Iterator[np.ndarray]:
        """The order's first ``stop`` documents (all by default), ``ORDER_CHUNK`` at a time."""
        stop = self.n if stop is None else min(stop, self.n)
        for start in range(0, stop, ORDER_CHUNK):
            yield self(np.arange(start, min(stop, start + ORDER_CHUNK), dtype=np.int64))


def partial_count(lengths: np.ndarray, order: np.ndarray | Iterator[np.ndarray], remainder: int) -> int:
    """How many documents of ``order`` (an array, or its chunks) come closest to ``remainder`` tokens (ties: fewer)."""
    if remainder <= 0:
        return 0
    done, total = 0, 0
    for part in [order] if isinstance(order, np.ndarray) else order:
        cum = total + np.cumsum(np.asarray(lengths[part], dtype=np.int64), dtype=np.int64)
        if len(cum) and cum[-1] >= remainder:
            j = int(np.searchsorted(cum, remainder, side="left")) + 1  # first count reaching the remainder
            below = int(cum[j - 2]) if j >= 2 else total
            above = int(cum[j - 1])
            return done + (j if (above - remainder) < (remainder - below) else j - 1)
        done += len(part)
        total = int(cum[-1]) if len(cum) else total
    return done  # the whole order falls short: all of it


@dataclass
class SourceSelection:
    """The documents one source contributes: ``full`` whole epochs, then ``partial`` more documents.

    ``lengths`` may be the memory-mapped lengths of the source's index: nothing is copied, and
    each epoch's order is a :class:`Permutation` streamed in chunks.
    """

    lengths: np.ndarray
    full: int
    partial: int
    seed: int
    key: int

    @property
    def count(self) -> int:
        return self.full * len(self.lengths) + self.partial

    def tokens(self) -> int:
        total = self.full * int(self.lengths.sum(dtype=np.int64))
        for part in self.epoch_order(self.full).chunks(self.partial) if self.partial else ():
            total += int(self.lengths[part].sum(dtype=np.int64))
        return total

    def epoch_order(self, epoch: int) -> Permutation:
        return Permutation(len(self.lengths), [self.seed, self.key, epoch])

    def stream(self) -> Iterator[np.ndarray]:
        for e in range(self.full):
            yield from self.epoch_order(e).chunks()
        if self.partial:
            yield from self.epoch_order(self.full).chunks(self.partial)


def select(lengths: np.ndarray, target: int, seed: int, name: str) -> SourceSelection:
    """Whole epochs while they fit the target, then the closest prefix of one more seeded permutation."""
    available = int(np.asarray(lengths).sum(dtype=np.int64))
    full, remainder = divmod(int(target), available)
    sel = SourceSelection(lengths, full, 0, seed, _source_key(name))
    if remainder:
        sel.partial = partial_count(lengths, sel.epoch_order(full).chunks(), remainder)
    return sel


class _Stream:
    """Takes the next ``n`` document ids of a selection, crossing epoch boundaries."""

    def __init__(self, sel: SourceSelection) -> None:
        self.it = sel.stream()
        self.buf = np.zeros(0, np.int64)
        self.pos = 0

    def take(self, n: int) -> np.ndarray:
        parts = []
        while n > 0:
            if self.pos >= len(self.buf):
                self.buf, self.pos = next(self.it), 0
            k = min(n, len(self.buf) - self.pos)
            parts.append(self.buf[self.pos : self.pos + k])
            self.pos += k
            n -= k
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def write_blend(rows: list[BlendRow], out_prefix: Path, seed: int, dtype: np.dtype) -> dict[str, Any]:
    """Sample every source and write the interleaved documents to ``out_prefix``; fills rows' taken counts."""
    readers = [megatron.IndexedDataset(r.prefix) for r in rows]
    sels = [select(ds.sequence_lengths, r.target_tokens, seed, r.name) for ds, r in zip(readers, rows)]
    for r, s in zip(rows, sels):
        r.docs_taken = s.count
        r.tokens_taken = 0
    remaining = np.array([s.count for s in sels], dtype=np.int64)
    total_docs = int(remaining.sum())
    if total_docs == 0:
        raise CurateError("blend: the budget selects no documents")
    streams = [_Stream(s) for s in sels]
    rng = np.random.default_rng([seed, 0x626C656E64])  # "blend"
    with megatron.IndexedDatasetWriter(out_prefix, dtype, documents=total_docs) as w:
        while remaining.sum() > 0:
            c = int(min(CHUNK_DOCS, remaining.sum()))
            counts = rng.multivariate_hypergeometric(remaining, c) if len(rows) > 1 else np.array([c])
            labels = np.repeat(np.arange(len(rows)), counts)
            rng.shuffle(labels)
            ids = np.empty(c, np.int64)
            for s, k in enumerate(counts):
                if k:
                    ids[labels == s] = streams[s].take(int(k))
            remaining -= counts
            lengths = np.empty(c, np.int64)
            parts = []
            for j in range(c):
                ds = readers[labels[j]]
                seq = ds[int(ids[j])]
                parts.append(seq)
                lengths[j] = len(seq)
            for s in range(len(rows)):
                rows[s].tokens_taken += int(lengths[labels == s].sum())
            w.add_documents(np.concatenate(parts), lengths)
        docs, tokens = w.finish()
    total = sum(r.tokens_taken for r in rows)
    for r in rows:
        r.epochs = r.tokens_taken / r.tokens_available
        r.weight = r.tokens_taken / total
    return {"documents": docs, "tokens": tokens}


# --------------------------------------------------------------------------- output


def format_table(rows: list[BlendRow], title: str = "") -> str:
    """The MT-NLG-style blend table: source, tokens available, weight, epochs, tokens taken."""
    head = ("source", "tokens available", "weight", "epochs", "tokens taken")
    body = [(r.name, f"{r.tokens_available:,}", f"{r.weight:.5f}", f"{r.epochs:.3f}", f"{r.tokens_taken:,}") for r in rows]
    total = sum(r.tokens_taken for r in rows)
    avail = sum(r.tokens_available for r in rows)
    foot = ("total", f"{avail:,}", f"{sum(r.weight for r in rows):.5f}", f"{total / avail:.3f}" if avail else "-", f"{total:,}")
    widths = [max(len(x[i]) for x in [head, *body, foot]) for i in range(5)]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(cells))

    rule = "  ".join("-" * w for w in widths)
    lines = ([title] if title else []) + [line(head), rule, *(line(b) for b in body), rule, line(foot)]
    return "\n".join(lines)


def _fmt_weight(w: float) -> str:
    return f"{w:.10g}"


def data_path_string(rows: list[BlendRow]) -> str:
    """Megatron's ``--data-path`` value: ``w1 prefix1 w2 prefix2 ...`` (absolute prefixes)."""
    parts = []
    for r in rows:
        prefix = str(as_path(r.prefix).resolve())
        if any(ch.isspace() for ch in prefix):
            raise CurateError(f"{prefix}: Megatron's --data-path cannot hold a path with spaces")
        parts += [_fmt_weight(r.weight), prefix]
    return " ".join(parts)


def parse_data_path(value: str) -> list[tuple[float, str]]:
    """The (weight, prefix) pairs of a ``--data-path`` string, as Megatron reads them."""
    items = value.split()
    if items and items[0] == "--data-path":
        items = items[1:]
    if len(items) % 2:
        raise CurateError("--data-path needs weight and prefix pairs")
    out = []
    for w, p in zip(items[0::2], items[1::2]):
        try:
            out.append((float(w), p))
        except ValueError:
            raise CurateError(f"--data-path: {w!r} is not a weight") from None
    return out
