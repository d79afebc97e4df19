"""What a rule set is: named thresholds with published defaults and a check over a :class:`Doc`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from curate.stages.filters.text import Doc

#: ``check(doc, thresholds, counters) -> failed rule name or None``. ``counters`` is a plain
#: dict of numbers for this rule set (e.g. lines removed); a check may replace ``doc.text``.
Check = Callable[[Doc, dict[str, Any], dict[str, int]], str | None]


@dataclass(frozen=True)
class RuleSet:
    """A published set of heuristic rules."""

    name: str
    defaults: dict[str, Any]  # threshold -> published default; None (or false) turns a rule off
    check: Check
    reasons: tuple[str, ...]  # every rule name ``check`` can return, in evaluation order
    reference: str

    def thresholds(self, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
        """The defaults with ``overrides`` applied (keys are checked by the config loader)."""
        return {**self.defaults, **(overrides or {})}


def enabled(value: Any) -> bool:
    """A threshold is on unless it is None or False (0 is a valid threshold)."""
    return value is not None and value is not False
