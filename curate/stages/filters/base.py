"""What a rule set is: named presets (published definitions) of thresholds and options, and a
check over a :class:`Doc`.

A rule set is one module that builds a :class:`RuleSet` and registers it with
``curate.registry.rule_set(...)``; the filter stage and its config find it by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from curate.stages.filters.text import Doc

#: ``check(doc, thresholds, counters) -> failed rule name or None``. ``counters`` is a plain
#: dict of numbers for this rule set (e.g. lines removed); a check may replace ``doc.text``.
Check = Callable[[Doc, dict[str, Any], dict[str, int]], str | None]


@dataclass(frozen=True)
class RuleSet:
    """A published set of heuristic rules, in one or more published definitions (presets).

    Every preset has the same keys: thresholds (a number; None turns the rule off), switches
    (true/false), word lists, and options whose values are names (``choices``), such as how
    words are split. ``published`` names the preset that is the rule set's default: the
    definition its authors published (the paper's wording, or the code that built the dataset).
    """

    name: str
    presets: dict[str, dict[str, Any]]  # preset name -> every threshold and option
    published: str  # the default preset
    check: Check
    reasons: tuple[str, ...]  # every rule name ``check`` can return, in evaluation order
    references: dict[str, str]  # preset name -> where its definition comes from
    choices: dict[str, tuple[str, ...]] = field(default_factory=dict)  # option -> its allowed values
    order: float = 100.0  # its place in the default order of rule sets (cheap ones first)
    opt_in: bool = False  # runs only where a config names it (never by default), e.g. one that needs a word list
    file_options: tuple[str, ...] = ()  # options whose value is a file path (checked as a string; its sha256 is recorded)
    line_counters: bool = False  # its check counts removed lines: they are reported under counters.lines.<name>

    @property
    def defaults(self) -> dict[str, Any]:
        """The published preset's thresholds and options."""
        return self.presets[self.published]

    @property
    def reference(self) -> str:
        return self.references[self.published]

    def thresholds(self, overrides: dict[str, Any] | None = None, preset: str | None = None) -> dict[str, Any]:
        """A preset (default: the published one) with ``overrides`` applied (keys are checked by the config loader)."""
        return {**self.presets[preset or self.published], **(overrides or {})}


def enabled(value: Any) -> bool:
    """A threshold is on unless it is None or False (0 is a valid threshold)."""
    return value is not None and value is not False
