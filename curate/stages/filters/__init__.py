"""The ``filter`` stage: published heuristic quality rules, chosen per source.

Rule sets (one module each): ``gopher_quality`` and ``gopher_repetition`` (gopher.py), ``c4``
(c4.py), ``fineweb`` (fineweb.py). A document runs through the rule sets its source is given
in the config, in that order, and is rejected with the first rule it fails as its reason
(``gopher_quality:mean_word_length``). Word splitting and every other feature is computed once
per document and shared (text.py). Curated and non-prose sources (code, maths, subtitles) get
few or no prose rules: the shipped config ``curate/resources/filters.yaml`` follows the MT-NLG
practice of filtering CommonCrawl and keeping the Pile subsets' own curation.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from curate.config import check_keys, load_yaml
from curate.dataset import decode_texts
from curate.errors import CurateError
from curate.runtime import MapResult, MapStage, param
from curate.schema import BASE_FIELDS, with_column
from curate.stages.filters.base import RuleSet
from curate.stages.filters.c4 import C4
from curate.stages.filters.fineweb import FINEWEB
from curate.stages.filters.gopher import GOPHER_QUALITY, GOPHER_REPETITION
from curate.stages.filters.text import Doc

RULE_SETS: dict[str, RuleSet] = {rs.name: rs for rs in (GOPHER_QUALITY, GOPHER_REPETITION, C4, FINEWEB)}
#: The order FineWeb's production pipeline applies them in (cheap repetition checks first).
ALL_RULES = ["gopher_repetition", "gopher_quality", "c4", "fineweb"]
_TEXT_FIELD = BASE_FIELDS[1]


def default_config_path() -> Path:
    """The shipped per-source config (MT-NLG practice)."""
    return Path(__file__).resolve().parents[2] / "resources" / "filters.yaml"


def parse_rules(value: str | list[str] | None, where: str = "--rules", path: str = "command line") -> list[str]:
    """``"c4,fineweb"`` or a list -> a checked list of rule-set names (``[]`` for none)."""
    if value is None:
        return []
    if not isinstance(value, (str, list)):
        raise CurateError(f"{path}: {where} must be a list of rule-set names, got {value!r}")
    items = [s.strip() for s in value.split(",")] if isinstance(value, str) else list(value)
    out: list[str] = []
    for name in items:
        if not isinstance(name, str) or not name:
            if name == "":
                continue
            raise CurateError(f"{path}: {where} must list rule-set names, got {name!r}")
        if name not in RULE_SETS:
            check_keys({name: None}, RULE_SETS, where, path)
        if name not in out:
            out.append(name)
    return out


def _check_value(rule_set: str, key: str, value: Any, default: Any, path: str) -> Any:
    where = f"thresholds.{rule_set}.{key}"
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise CurateError(f"{path}: {where} must be true or false, got {value!r}")
    elif isinstance(default, list):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise CurateError(f"{path}: {where} must be a list of strings")
    elif value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
        raise CurateError(f"{path}: {where} must be a non-negative number or null (off), got {value!r}")
    return value


@dataclass
class FilterConfig:
    """Which rule sets run on which sources, and the thresholds that differ from the published ones."""

    sources: list[tuple[str, list[str]]] = field(default_factory=list)  # (glob, rule sets); first match wins
    default: list[str] = field(default_factory=lambda: list(ALL_RULES))  # for sources no glob matches
    thresholds: dict[str, dict[str, Any]] = field(default_factory=dict)  # overrides only

    @classmethod
    def from_mapping(cls, data: Any, path: str = "config") -> FilterConfig:
        """Validate a parsed YAML mapping (unknown keys, rule sets, thresholds are errors)."""
        data = check_keys(data, {"default", "sources", "thresholds"}, "the filter config", path)
        default = parse_rules(data.get("default", ALL_RULES), "default", path)
        raw_sources = data.get("sources") or {}
        if not isinstance(raw_sources, dict):
            raise CurateError(f"{path}: sources must be a mapping of source globs to rule-set lists")
        sources = [(str(glob), parse_rules(rules or [], f"sources.{glob}", path)) for glob, rules in raw_sources.items()]
        thresholds: dict[str, dict[str, Any]] = {}
        for rs_name, overrides in check_keys(data.get("thresholds"), RULE_SETS, "thresholds", path).items():
            rs = RULE_SETS[rs_name]
            overrides = check_keys(overrides, rs.defaults, f"thresholds.{rs_name}", path)
            thresholds[rs_name] = {k: _check_value(rs_name, k, v, rs.defaults[k], path) for k, v in overrides.items()}
        return cls(sources=sources, default=default, thresholds=thresholds)

    def rules_for(self, source: str) -> list[str]:
        for glob, rules in self.sources:
            if source == glob or fnmatch.fnmatchcase(source, glob):
                return rules
        return self.default

    def to_params(self) -> dict[str, Any]:
        return {"default": self.default, "sources": [[g, r] for g, r in self.sources], "thresholds": self.thresholds}


@dataclass
class FilterStage(MapStage):
    """Heuristic quality rules: Gopher quality and repetition, C4, FineWeb (published thresholds).

    Each document goes through the rule sets its source is given in the config, in order,
    and is rejected with the first rule it fails as its reason (e.g.
    `gopher_quality:mean_word_length`). The default config filters CommonCrawl and other
    web text with all four, gives the Pile's curated prose subsets only the repetition
    rules, and leaves code, maths and subtitles alone. C4 keeps only a page's kept lines.

    \b
    Example:
      curate filter --in out/langid --out out/filter
      curate filter --in out/langid --out out/filter_c4 --rules c4 --config my_filters.yaml
    """

    name: ClassVar[str] = "filter"
    error_reasons: ClassVar[frozenset[str]] = frozenset({"invalid_utf8"})
    rules: str | None = param(None, "Rule sets to use (comma-separated): gopher_quality, gopher_repetition, c4, fineweb "
                              "[default: all; the config decides which apply to which source].", metavar="NAMES")  # fmt: skip
    config: str | None = param(None, "Per-source rule sets and threshold overrides [default: curate/resources/filters.yaml].",
                               metavar="YAML")  # fmt: skip

    def __post_init__(self) -> None:
        if isinstance(self.config, FilterConfig):
            self.filter_config = self.config
        else:
            path = self.config or str(default_config_path())
            self.filter_config = FilterConfig.from_mapping(load_yaml(path), path)
        self.enabled = parse_rules(self.rules) if self.rules is not None else list(ALL_RULES)
        self.thresholds = {name: rs.thresholds(self.filter_config.thresholds.get(name)) for name, rs in RULE_SETS.items()}
        self._plans: dict[str, tuple[RuleSet, ...]] = {}

    def params(self) -> dict[str, Any]:
        return {"rules": self.enabled, "config": self.filter_config.to_params()}

    def _plan(self, source: str) -> tuple[RuleSet, ...]:
        plan = self._plans.get(source)
        if plan is None:
            plan = self._plans[source] = tuple(RULE_SETS[r] for r in self.filter_config.rules_for(source) if r in self.enabled)
        return plan

    def check(self, text: str, source: str, counters: dict[str, Any]) -> tuple[str | None, str]:
        """``(reason or None, text)`` for one document; the text changes when a rule removes lines."""
        plan = self._plan(source or "")
        if not plan:
            counters["docs_unfiltered"] = counters.get("docs_unfiltered", 0) + 1
            return None, text
        counters["docs_checked"] = counters.get("docs_checked", 0) + 1
        if not text.strip():
            bad = counters.setdefault("bad_input", {})
            bad["empty"] = bad.get("empty", 0) + 1
            return "empty", text
        doc = Doc(text)
        for rs in plan:
            rs_counters = counters.setdefault("lines", {}).setdefault(rs.name, {}) if rs is C4 else {}
            failed = rs.check(doc, self.thresholds[rs.name], rs_counters)
            if failed is not None:
                hits = counters.setdefault("rules", {}).setdefault(rs.name, {})
                hits[failed] = hits.get(failed, 0) + 1
                return f"{rs.name}:{failed}", doc.text
        return None, doc.text

    def __call__(self, table: pa.Table) -> MapResult:
        texts = decode_texts(table.column("text"))
        sources = table.column("source").to_pylist()
        counters: dict[str, Any] = {}
        reasons: list[str | None] = []
        out_texts: list[str | None] = []
        changed = False
        for text, source in zip(texts, sources):
            if text is None:
                bad = counters.setdefault("bad_input", {})
                bad["invalid_utf8"] = bad.get("invalid_utf8", 0) + 1
                reasons.append("invalid_utf8")
                out_texts.append(None)
                continue
            reason, new = self.check(text, source, counters)
            reasons.append(reason)
            out_texts.append(new)
            changed = changed or new is not text
        keep = pa.array([r is None for r in reasons], pa.bool_())
        kept = table.filter(keep)
        if changed:
            kept_texts = [t for t, r in zip(out_texts, reasons) if r is None]
            kept = with_column(kept, _TEXT_FIELD, pa.array(kept_texts, type=pa.large_string()))
        rejected = table.filter(pc.invert(keep))
        rejected = rejected.append_column("reason", pa.array([r for r in reasons if r is not None], pa.string()))
        return MapResult(kept, rejected, counters)
