"""The blend config (``blend.yaml``): sources with a weight or epochs, the token budget, the tokenizer.

Keys are checked (an unknown key, a source with both weight and epochs, a missing path are
one-line errors naming the file); numbers may be written ``270B``, ``1e6``.
"""

from __future__ import annotations

import logging
import math
import os
import re
from dataclasses import dataclass
from typing import Any

from curate.config import check_keys, load_yaml
from curate.errors import CurateError

log = logging.getLogger("curate")

TOP_KEYS = {"total_tokens", "sources", "max_epochs", "seed", "tokenizer", "append_eod"}
SOURCE_KEYS = {"name", "path", "weight", "epochs", "sources", "buckets"}
DEFAULT_MAX_EPOCHS = 10.0
DEFAULT_SEED = 1234
_SUFFIXES = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}


@dataclass
class SourceSpec:
    """One source of a blend config."""

    name: str
    path: str
    weight: float | None = None
    epochs: float | None = None
    sources: str | None = None  # of a dataset directory, tokenize only these sources (globs)
    buckets: tuple[int, int] | None = None  # of a dataset directory, only documents whose quality_bucket is in [lo, hi]


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


def _buckets(value: Any, where: str) -> tuple[int, int] | None:
    """A source's quality_bucket range: ``15-19``, ``[15, 19]`` or one bucket ``19``; a one-line error otherwise."""
    if value is None:
        return None
    if isinstance(value, bool):
        value = None
    elif isinstance(value, int):
        value = [value, value]
    elif isinstance(value, str) and re.fullmatch(r"\s*\d+\s*(-\s*\d+\s*)?", value):
        parts = [int(x) for x in value.split("-")]
        value = parts * 2 if len(parts) == 1 else parts
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in value)
            and 0 <= value[0] <= value[1] <= 127):  # fmt: skip
        raise CurateError(f"{where}: buckets must be a quality_bucket range such as 15-19 (lo <= hi, 0..127)")
    return (value[0], value[1])


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
        specs.append(SourceSpec(name, _expand(s["path"], where), weight, epochs, only, _buckets(s.get("buckets"), where)))
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
