"""The ``digits`` filter rule set: reject documents that are mostly digits (a rule set is one module)."""

from __future__ import annotations

from typing import Any

from curate.registry import rule_set
from curate.stages.filters.base import RuleSet, enabled
from curate.stages.filters.text import Doc


def _digits(doc: Doc, th: dict[str, Any], counters: dict[str, int]) -> str | None:
    text = doc.text
    limit = th["max_digit_ratio"]
    if enabled(limit) and text and sum(c.isdigit() for c in text) / len(text) > limit:
        return "digit_ratio"
    return None


DIGITS = rule_set(
    RuleSet(
        name="digits",
        presets={"example": {"max_digit_ratio": 0.2}},
        published="example",
        check=_digits,
        reasons=("digit_ratio",),
        references={"example": "an example plugin: more than max_digit_ratio of the characters are digits"},
        order=90,
        opt_in=True,
    )
)
