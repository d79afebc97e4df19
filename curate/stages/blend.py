"""Blend tokenized sources by weight or epochs into one corpus, or into Megatron's ``--data-path``.

A blend config (YAML) lists sources, each a tokenized prefix (``PREFIX.bin``/``.idx``) or a
dataset directory (tokenized here first), with a ``weight`` or a number of ``epochs``, and
a total token budget. Sources with ``epochs`` take ``epochs x tokens available``; the rest
of the budget is shared by the weighted sources in proportion to their (normalised)
weights, as in the MT-NLG training blend.

In *corpus* mode each source's documents are sampled without replacement within each
epoch (whole epochs, then a seeded prefix of one more permutation, cut at the document
that lands closest to the target: within one document of it), and the sources are
interleaved uniformly at random, all deterministic by seed. Streaming: memory is one
permutation of the largest source (8 bytes per document) and one chunk of the output.
In *megatron-args* mode the weights become ``--data-path "w1 prefix1 w2 prefix2 ..."``
for train-time blending.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from curate import __version__, megatron
from curate.config import check_keys, load_yaml
from curate.dataset import Inputs, files_fingerprint, input_name, is_curate_dir, record_fingerprint
from curate.errors import CurateError
from curate.registry import stage
from curate.runtime import Common, Context, Stage, param
from curate.storage import as_path, rmtree, write_bytes_atomic, write_json_atomic
from curate.targets import read_json

log = logging.getLogger("curate")

TOP_KEYS = {"total_tokens", "sources", "max_epochs", "seed", "tokenizer", "append_eod"}
SOURCE_KEYS = {"name", "path", "weight", "epochs", "sources"}
DEFAULT_MAX_EPOCHS = 10.0
DEFAULT_SEED = 1234
CHUNK_DOCS = 1 << 16
_SUFFIXES = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}


# --------------------------------------------------------------------------- config


@dataclass
class SourceSpec:
    """One source of a blend config."""

    name: str
    path: str
    weight: float | None = None
    epochs: float | None = None
    sources: str | None = None  # of a dataset directory, tokenize only these sources (globs)


@dataclass
class BlendConfig:
    """A parsed blend config."""

    path: str
    sources: list[SourceSpec]
    total_tokens: int | str | None = None  # an int, "auto" or None
    max_epochs: float | None = None
    seed: int | None = None
    tokenizer: str = "gpt2"
    append_eod: bool = True


def parse_number(value: Any, what: str, where: str, positive: bool = True) -> float:
    """A number from YAML: 0.1, 3, "1e-3", "270B"; anything else is a one-line error naming it."""
    if isinstance(value, bool) or value is None:
        raise CurateError(f"{where}: {what} must be a number, got {value!r}")
    if isinstance(value, (int, float)):
        x = float(value)
    else:
        s = str(value).strip().replace("_", "").replace(",", "")
        mult = 1.0
        if s and s[-1].lower() in _SUFFIXES:
            mult = _SUFFIXES[s[-1].lower()]
            s = s[:-1]
        try:
            x = float(s) * mult
        except ValueError:
            raise CurateError(f"{where}: {what} must be a number, got {value!r}") from None
    if not math.isfinite(x) or (positive and x <= 0) or x < 0:
        raise CurateError(f"{where}: {what} must be a {'positive' if positive else 'non-negative'} number, got {value!r}")
    return x


def _expand(path: str, where: str) -> str:
    out = os.path.expanduser(os.path.expandvars(path))
    m = re.search(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", out)
    if m:
        raise CurateError(f"{where}: path {path!r} uses ${m.group(1)}, which is not set in the environment")
    return out


def load_config(path: str | os.PathLike) -> BlendConfig:
    """Read and check a blend config; unknown keys and bad values are one-line errors."""
    raw = load_yaml(path)
    if raw is None:
        raise CurateError(f"{path}: empty blend config (needs sources:)")
    top = check_keys(raw, TOP_KEYS, "the blend config", path)
    sources_raw = top.get("sources")
    if not isinstance(sources_raw, list) or not sources_raw:
        raise CurateError(f"{path}: sources must be a non-empty list of {{name, path, weight or epochs}}")
    specs: list[SourceSpec] = []
    seen: set[str] = set()
    for i, item in enumerate(sources_raw):
        if isinstance(item, dict) and "only_sources" in item:
            raise CurateError(
                f"{path}: sources[{i}]: the key only_sources is now called sources (the sources of a dataset directory to take)"
            )
        s = check_keys(item, SOURCE_KEYS, f"sources[{i}]", path)
        name = s.get("name")
        if not isinstance(name, str) or not name.strip():
            raise CurateError(f"{path}: sources[{i}] needs a name")
        where = f"{path}: source {name!r}"
        if name in seen:
            raise CurateError(f"{where}: listed twice")
        seen.add(name)
        if not isinstance(s.get("path"), str) or not s["path"].strip():
            raise CurateError(f"{where}: needs a path (a tokenized prefix or a dataset directory)")
        has_w, has_e = s.get("weight") is not None, s.get("epochs") is not None
        if has_w == has_e:
            raise CurateError(f"{where}: give exactly one of weight or epochs")
        weight = parse_number(s["weight"], "weight", where) if has_w else None
        epochs = parse_number(s["epochs"], "epochs", where) if has_e else None
        only = s.get("sources")
        if only is not None and not isinstance(only, str):
            only = ",".join(map(str, only)) if isinstance(only, list) else None
            if only is None:
                raise CurateError(f"{where}: sources must be a glob or a list of globs")
        specs.append(SourceSpec(name, _expand(s["path"], where), weight, epochs, only))
    total = top.get("total_tokens")
    if total is not None and not (isinstance(total, str) and total.strip().lower() == "auto"):
        total = int(round(parse_number(total, "total_tokens", str(path))))
    elif isinstance(total, str):
        total = "auto"
    max_epochs = parse_number(top["max_epochs"], "max_epochs", str(path)) if top.get("max_epochs") is not None else None
    seed = top.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise CurateError(f"{path}: seed must be a non-negative integer, got {seed!r}")
    tokenizer = top.get("tokenizer", "gpt2")
    if not isinstance(tokenizer, str):
        raise CurateError(f"{path}: tokenizer must be gpt2 or a path, got {tokenizer!r}")
    append_eod = top.get("append_eod", True)
    if not isinstance(append_eod, bool):
        raise CurateError(f"{path}: append_eod must be true or false, got {append_eod!r}")
    if tokenizer != "gpt2":
        tokenizer = _expand(tokenizer, str(path))
    return BlendConfig(str(path), specs, total, max_epochs, seed, tokenizer, append_eod)


def parse_total_tokens(value: str | None) -> int | str | None:
    """``--total-tokens``: an integer, 270B-style, or ``auto``."""
    if value is None:
        return None
    if value.strip().lower() == "auto":
        return "auto"
    return int(round(parse_number(value, "its value", "--total-tokens")))


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


def _source_prefix(spec: SourceSpec) -> str | None:
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

    p = _source_prefix(spec)
    if p is not None:
        if spec.sources:
            raise CurateError(f"{where}: sources applies to dataset directories, and {p} is a tokenized prefix")
        return inspect_prefix(spec, p, where)
    if not as_path(spec.path).is_dir():
        raise EmptySource(f"no tokenized prefix ({spec.path}.bin and .idx) or dataset directory at {spec.path}")
    prefix = out / "sources" / source_slug(spec.name)
    settings = {"tokenizer": config.tokenizer, "append_eod": config.append_eod, "sources": spec.sources,
                "input": record_fingerprint(as_path(spec.path)) if is_curate_dir(as_path(spec.path)) else None}  # fmt: skip
    stats = read_json(as_path(f"{prefix}.stats.json"))
    work = as_path(f"{prefix}.work")
    if stats is None or stats.get("blend_source") != settings or not megatron.exists(str(prefix)):
        log.info("blend: tokenizing %s (%s) into %s", spec.name, spec.path, prefix)
        try:
            record = tokenize_files(run_map, resolve_inputs([spec.path]), Outputs(as_path(str(prefix)), False),
                                    tokenizer=config.tokenizer, append_eod=config.append_eod, sources=spec.sources,
                                    work_params=settings)  # fmt: skip
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


def partial_count(lengths: np.ndarray, order: np.ndarray, remainder: int) -> int:
    """How many documents of ``order`` come closest to ``remainder`` tokens (ties: fewer)."""
    if remainder <= 0:
        return 0
    cum = np.cumsum(lengths[order], dtype=np.int64)
    j = int(np.searchsorted(cum, remainder, side="left")) + 1  # first count reaching the remainder
    j = min(j, len(order))
    below = int(cum[j - 2]) if j >= 2 else 0
    above = int(cum[j - 1])
    return j if (above - remainder) < (remainder - below) else j - 1


@dataclass
class SourceSelection:
    """The documents one source contributes: ``full`` whole epochs, then ``partial`` more documents."""

    lengths: np.ndarray
    full: int
    partial: int
    seed: int
    key: int

    @property
    def count(self) -> int:
        return self.full * len(self.lengths) + self.partial

    def tokens(self) -> int:
        total = self.full * int(self.lengths.sum())
        if self.partial:
            order = self.epoch_order(self.full)
            total += int(self.lengths[order[: self.partial]].sum())
        return total

    def epoch_order(self, epoch: int) -> np.ndarray:
        return np.random.default_rng([self.seed, self.key, epoch]).permutation(len(self.lengths))

    def stream(self) -> Iterator[np.ndarray]:
        for e in range(self.full):
            yield self.epoch_order(e)
        if self.partial:
            yield self.epoch_order(self.full)[: self.partial]


def select(lengths: np.ndarray, target: int, seed: int, name: str) -> SourceSelection:
    """Whole epochs while they fit the target, then the closest prefix of one more seeded permutation."""
    lengths = np.asarray(lengths, dtype=np.int64)
    available = int(lengths.sum())
    full, remainder = divmod(int(target), available)
    sel = SourceSelection(lengths, full, 0, seed, _source_key(name))
    if remainder:
        sel.partial = partial_count(lengths, sel.epoch_order(full), remainder)
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


@stage("blend", section="produce", order=20)
@dataclass
class BlendStage(Stage):
    """Blend sources by weight or epochs (the MT-NLG table), into a corpus or Megatron's --data-path.

    Each source is a tokenized prefix or a dataset directory (tokenized into OUT/sources/).
    Sources with epochs take that many passes; weighted sources share the rest of
    total_tokens by weight. Documents are sampled without replacement within each epoch.

    \b
    Example BLEND.yaml:
      total_tokens: 1000000          # or 270B, or auto
      max_epochs: 5
      sources:
        - {name: pile/Wikipedia, path: out/tokenized/pile_Wikipedia, weight: 0.04771}
        - {name: cc, path: out/dedup, sources: "cc/*", epochs: 1.0}
    \b
    Examples:
      curate blend --config blend.yaml --out out/blend
      curate blend --config blend.yaml --out out/blend --mode megatron-args
    """

    name: ClassVar[str] = "blend"
    sections: ClassVar[dict[str, str]] = {"blend": "rows"}
    kind: ClassVar[str] = "sink"
    options: ClassVar[tuple[str, ...]] = ("out", "workers", "overwrite", "executor", "ray_address")
    option_help: ClassVar[dict[str, str]] = {
        "out": "Output directory (blend.bin/.idx, or data_path.txt; blend_table.txt, blend.json, _SUCCESS).",
        "workers": "Worker processes for sources that need tokenizing [default: all cores].",
        "overwrite": "Delete what an earlier run wrote to OUT (sources it tokenized included) and start again.",
    }
    checks_ids: ClassVar[bool] = False
    required_columns: ClassVar[tuple[str, ...]] = ()
    config: str = param(help="Sources with a weight or epochs, and total_tokens.", metavar="BLEND.yaml", required=True, record=False)
    mode: str = param("corpus", "corpus: write a sampled, shuffled, tokenized blend; megatron-args: write Megatron's --data-path "
                      "for train-time blending.", choices=("corpus", "megatron-args"))  # fmt: skip
    seed: int | None = param(None, "Sampling seed [default: the config's seed, else 1234].", min=0)
    max_epochs: float | None = param(None, "Most passes over any source [default: the config's max_epochs, else 10].", min=0.0,
                                     min_open=True)  # fmt: skip
    total_tokens: str | None = param(None, "Override the config's total_tokens (e.g. 270B, 1e6, auto).", metavar="N|auto")
    skip_missing: bool = param(False, "Leave out sources that have no documents (no path, an empty prefix, none of their sources), "
                               "each named in a warning line, instead of failing; the other weights renormalise.")  # fmt: skip

    def __post_init__(self) -> None:
        if self.mode not in ("corpus", "megatron-args"):
            raise CurateError(f"--mode must be corpus or megatron-args, got {self.mode!r}")
        self.cfg = load_config(self.config)
        cfg = self.cfg
        self.seed_used = self.seed if self.seed is not None else (cfg.seed if cfg.seed is not None else DEFAULT_SEED)
        self.max_epochs_used = self.max_epochs if self.max_epochs is not None else (cfg.max_epochs if cfg.max_epochs is not None
                                                                                    else DEFAULT_MAX_EPOCHS)  # fmt: skip
        override = parse_total_tokens(self.total_tokens) if isinstance(self.total_tokens, str) else self.total_tokens
        self.budget = override if override is not None else cfg.total_tokens

    def derived_params(self) -> dict[str, Any]:
        """The config by content (its sources and tokenizer) and the values resolved from it."""
        return {
            "config": str(self.config),
            "sources": [asdict(s) for s in self.cfg.sources],
            "tokenizer": self.cfg.tokenizer,
            "append_eod": self.cfg.append_eod,
            "seed": self.seed_used,
            "max_epochs": self.max_epochs_used,
            "total_tokens": self.budget,
        }

    def inputs(self, common: Common) -> Inputs:
        names, prints, locations = [], [], []
        for spec in self.cfg.sources:
            names.append(input_name(spec.path))
            prefix = _source_prefix(spec)
            if prefix is not None:
                stats = read_json(as_path(f"{prefix}.stats.json"))
                fp = (stats or {}).get("fingerprint") or files_fingerprint([as_path(f"{prefix}.bin"), as_path(f"{prefix}.idx")])
                prints.append(fp)
                locations += [as_path(f"{prefix}.bin"), as_path(f"{prefix}.idx")]
            elif as_path(spec.path).is_dir():
                p = as_path(spec.path)
                prints.append(
                    record_fingerprint(p)
                    if is_curate_dir(p) and (p / "_SUCCESS").exists()
                    else files_fingerprint(sorted(p.glob("*.parquet")))
                )
                locations.append(p)
            else:
                prints.append("missing")
        return Inputs(names, [], prints, locations)

    def run(self, ctx: Context) -> dict[str, Any]:
        cfg = self.cfg
        out = ctx.out
        skipped: list[str] = []
        infos = resolve_sources(cfg, out, run_map=ctx.map, skip_missing=self.skip_missing, skipped=skipped)
        rows = plan_blend(infos, self.budget, self.max_epochs_used, self.config)
        tokenizer = next((i.tokenizer for i in infos if i.tokenizer is not None), None)
        seed = self.seed_used
        record: dict[str, Any] = {
            "config": str(self.config),
            "mode": self.mode,
            "seed": seed,
            "max_epochs": self.max_epochs_used,
            "total_tokens": sum(r.target_tokens for r in rows),
            "tokenizer": tokenizer,
            "skipped_sources": skipped,
        }
        if self.mode == "corpus":
            prefix = out / "blend"
            counts = write_blend(rows, prefix, seed, infos[0].dtype)
            title = f"blend of {len(rows)} sources -> {prefix}.bin/.idx (seed {seed})"
            per_source = {r.name: {"documents": r.docs_taken, "tokens": r.tokens_taken} for r in rows}
            stats = {
                "stage": "blend",
                "curate_version": __version__,
                "prefix": str(prefix),
                "tokenizer": tokenizer,
                "dtype": infos[0].dtype.name,
                "dtype_code": megatron.DTYPE_CODES[infos[0].dtype],
                **counts,
                "per_source": per_source,
                "seed": seed,
            }
            write_json_atomic(as_path(f"{prefix}.stats.json"), stats)
            record.update({"prefix": str(prefix), **counts})
        else:
            dp = data_path_string(rows)
            write_bytes_atomic(out / "data_path.txt", (dp + "\n").encode())
            record["data_path"] = dp
            record["data_path_file"] = str(out / "data_path.txt")
            title = f"blend of {len(rows)} sources for train-time blending (Megatron --data-path)"
        if skipped:
            title += f"\n(left out, not found: {', '.join(skipped)}; the other weights are renormalised)"
        table = format_table(rows, title)
        record["rows"] = [r.to_dict() for r in rows]
        record["table"] = table
        write_bytes_atomic(out / "blend_table.txt", (table + "\n").encode())
        write_json_atomic(out / "blend.json", record)
        return record

    def summary(self, record: dict[str, Any]) -> list[str]:
        lines = str(record.get("table", "")).splitlines()
        if record.get("mode") == "corpus":
            lines.append(
                f"  output: {record['prefix']}.bin, {record['prefix']}.idx ({record['documents']:,} docs, {record['tokens']:,} tokens)"
            )
        else:
            lines += [f"--data-path {record['data_path']}", f"  written to {record['data_path_file']}"]
        return lines
