"""Small helpers of the corpus generator: HTML escaping, weighted choice, slugs, shingles, record ids."""

from __future__ import annotations

import html as htmllib
import random
import re
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the generator's name in what it writes (the manifest's ``generator``, each warcinfo's ``operator``, the marker file):
#: the file it was when the first corpora were built, kept so that a corpus's bytes do not depend on where its code lives
NAME = "benchmarks/chain_corpus.py"


def esc(s: str) -> str:
    return htmllib.escape(s, quote=False)


def attr(s: str) -> str:
    return htmllib.escape(s, quote=True)


def pick(rng: random.Random, weights: dict) -> str:
    r = rng.random() * sum(weights.values())
    for k, w in weights.items():
        r -= w
        if r < 0:
            return k
    return k


def strip_tags(fragment: str) -> str:
    return re.sub(r"\s+", " ", htmllib.unescape(re.sub(r"<[^>]+>", " ", fragment))).strip()


def slugify(s: str, n: int = 60) -> str:
    s = re.sub(r"[^\w]+", "-", s.lower(), flags=re.U).strip("-")
    return s[:n].strip("-") or "page"


def shingles(tokens: list[str], n: int = 5) -> set:
    return {tuple(tokens[i : i + n]) for i in range(max(1, len(tokens) - n + 1))}


def jaccard(a: set, b: set) -> float:
    return len(a & b) / max(1, len(a | b))


def zipf_index(rng: random.Random, scale: float = 3.0, alpha: float = 1.3) -> int:
    """A heavy-tailed small integer: a few big sites, many small ones."""
    return int(scale * ((1.0 - rng.random()) ** (-1.0 / alpha) - 1.0))


def rec_id(rng: random.Random) -> str:
    return f"<urn:uuid:{uuid.UUID(int=rng.getrandbits(128), version=4)}>"
