"""The ``filter`` stage: published heuristic quality rules, chosen per source.

Rule sets are registered by name (``curate.registry.rule_set``; one module each, found
without a list here): ``gopher_quality`` and ``gopher_repetition`` (gopher.py), ``c4``
(c4.py), ``fineweb`` (fineweb.py); and, opt-in (it runs only where a config names it, with
the word list the config gives), ``flagged_words`` (flagged.py). An installed package adds
its own through the ``curate.rules`` entry point. Each has named presets, its published definitions: the
default one is what its authors published (the Gopher paper's wording, the TFDS code that
built C4, the datatrove code that built FineWeb); ``datatrove`` is datatrove 0.10.1's filter
with its defaults, decision for decision. A config's ``preset`` picks them for every rule set
at once: ``published`` (default), ``datatrove``, or ``fineweb`` (datatrove's, with C4's
terminal-punctuation line rule off, as FineWeb was filtered); ``presets`` overrides it per rule
set and a source entry (``{rules: [...], preset: NAME}``) per source.

A document runs through the rule sets its source is given in the config, in that order, and
is rejected with the first rule it fails as its reason (``gopher_quality:mean_word_length``).
Word splitting and every other feature is computed once per document and shared (text.py).
Curated and non-prose sources (code, maths, subtitles) get few or no prose rules: the shipped
config ``curate/resources/filters.yaml`` follows the MT-NLG practice of filtering CommonCrawl
and keeping the Pile subsets' own curation. docs/filters.md describes every rule and preset.
"""

from __future__ import annotations

import difflib
import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from curate.config import check_keys, load_yaml
from curate.errors import CurateError
from curate.registry import rule_sets as _registry
from curate.registry import stage
from curate.runtime import Batch, Counters, Decisions, DocStage, param
from curate.stages.filters.base import RuleSet
from curate.stages.filters.flagged import load_word_list
from curate.stages.filters.text import Doc
from curate.storage import file_sha256


def known_rule_sets() -> dict[str, RuleSet]:
    """Every registered rule set (built-in and installed), in their default order (``RuleSet.order``)."""
    return {e.name: e.obj for e in sorted(_registry.entries(), key=lambda e: (e.obj.order, e.name))}


def default_rule_sets() -> dict[str, RuleSet]:
    """The rule sets that run by default (not opt-in)."""
    return {name: rs for name, rs in known_rule_sets().items() if not rs.opt_in}


def all_rules() -> list[str]:
    """The default rule sets in the order they run (cheap repetition checks first, as FineWeb's pipeline)."""
    return list(default_rule_sets())


#: Config-wide presets, each a rule for which of a rule set's own presets it means.
PRESETS: dict[str, str] = {
    "published": "each rule set's published definition",
    "datatrove": "datatrove 0.10.1's filters (a rule set without a datatrove preset: its published one)",
    "fineweb": "datatrove's, as FineWeb ran them (a rule set's own fineweb preset where it has one)",
}


def config_preset(preset: str, rs: RuleSet) -> str:
    """The rule set's own preset a config-wide preset means."""
    if preset == "fineweb" and "fineweb" in rs.presets:
        return "fineweb"
    if preset in ("datatrove", "fineweb") and "datatrove" in rs.presets:
        return "datatrove"
    return rs.published


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
        if name not in (known := known_rule_sets()):
            check_keys({name: None}, known, where, path)
        if name not in out:
            out.append(name)
    return out


def _check_name(value: Any, allowed: list[str], where: str, path: str) -> str:
    """``value`` if it is one of ``allowed``; else a one-line error naming ``where``."""
    if isinstance(value, str) and value in allowed:
        return value
    close = difflib.get_close_matches(str(value), allowed, n=1) if isinstance(value, str) else []
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise CurateError(f"{path}: {where} must be one of {', '.join(allowed)}, got {value!r}{hint}")


def preset_names(rule_set: str) -> list[str]:
    """What ``presets.<rule_set>`` accepts: the rule set's own presets and the config-wide ones."""
    own = known_rule_sets()[rule_set].presets
    return [*own, *(p for p in PRESETS if p not in own)]


def resolve_preset(rule_set: str, name: str) -> str:
    """A config-wide or per-rule-set preset name -> the rule set's own preset."""
    rs = known_rule_sets()[rule_set]
    return name if name in rs.presets else config_preset(name, rs)


def _check_value(rule_set: str, key: str, value: Any, default: Any, path: str) -> Any:
    where = f"thresholds.{rule_set}.{key}"
    rs = known_rule_sets()[rule_set]
    choices = rs.choices.get(key)
    if choices:
        return _check_name(value, list(choices), where, path)
    if key in rs.file_options:
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise CurateError(f"{path}: {where} must be a file path, got {value!r}")
        return value
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
    """Which rule sets run on which sources, in which presets, and the thresholds that differ from them."""

    # (glob, rule sets) or (glob, rule sets, config-wide preset or None); the first match wins
    sources: list[tuple[Any, ...]] = field(default_factory=list)
    default: list[str] = field(default_factory=all_rules)  # for sources no glob matches
    thresholds: dict[str, dict[str, Any]] = field(default_factory=dict)  # overrides only
    preset: str = "published"  # config-wide preset
    presets: dict[str, str] = field(default_factory=dict)  # per rule set, over ``preset``

    def __post_init__(self) -> None:
        self.sources = [(str(s[0]), list(s[1]), s[2] if len(s) > 2 else None) for s in self.sources]
        where = "FilterConfig"
        _check_name(self.preset, list(PRESETS), "preset", where)
        for name, value in self.presets.items():
            _check_name(name, list(known_rule_sets()), "presets", where)
            _check_name(value, preset_names(name), f"presets.{name}", where)
        for glob, _, preset in self.sources:
            if preset is not None:
                _check_name(preset, list(PRESETS), f"sources.{glob}.preset", where)

    @classmethod
    def from_mapping(cls, data: Any, path: str = "config") -> FilterConfig:
        """Validate a parsed YAML mapping (unknown keys, rule sets, presets, thresholds are errors)."""
        data = check_keys(data, {"preset", "presets", "default", "sources", "thresholds"}, "the filter config", path)
        preset = _check_name(data.get("preset", "published"), list(PRESETS), "preset", path)
        presets = {
            name: _check_name(value, preset_names(name), f"presets.{name}", path)
            for name, value in check_keys(data.get("presets"), known_rule_sets(), "presets", path).items()
        }
        default = parse_rules(data.get("default", all_rules()), "default", path)
        raw_sources = data.get("sources") or {}
        if not isinstance(raw_sources, dict):
            raise CurateError(f"{path}: sources must be a mapping of source globs to rule-set lists")
        sources: list[tuple[Any, ...]] = []
        for glob, entry in raw_sources.items():
            where = f"sources.{glob}"
            source_preset = None
            if isinstance(entry, dict):
                entry = check_keys(entry, {"rules", "preset"}, where, path)
                if "preset" in entry:
                    source_preset = _check_name(entry["preset"], list(PRESETS), f"{where}.preset", path)
                entry = entry.get("rules")
            sources.append((str(glob), parse_rules(entry or [], where, path), source_preset))
        thresholds: dict[str, dict[str, Any]] = {}
        known = known_rule_sets()
        for rs_name, overrides in check_keys(data.get("thresholds"), known, "thresholds", path).items():
            rs = known[rs_name]
            overrides = check_keys(overrides, rs.defaults, f"thresholds.{rs_name}", path)
            thresholds[rs_name] = {k: _check_value(rs_name, k, v, rs.defaults[k], path) for k, v in overrides.items()}
        return cls(sources=sources, default=default, thresholds=thresholds, preset=preset, presets=presets)

    def entry_for(self, source: str) -> tuple[list[str], str | None]:
        """``(rule sets, the source's own preset or None)`` for a document's source."""
        for glob, rules, preset in self.sources:
            if source == glob or fnmatch.fnmatchcase(source, glob):
                return rules, preset
        return self.default, None

    def rules_for(self, source: str) -> list[str]:
        return self.entry_for(source)[0]

    def preset_for(self, rule_set: str, source_preset: str | None = None) -> str:
        """The rule set's own preset for a source: the source's preset, else ``presets``, else ``preset``."""
        name = source_preset or self.presets.get(rule_set) or self.preset
        return resolve_preset(rule_set, name)

    def with_preset(self, preset: str) -> FilterConfig:
        """The same config with one config-wide preset for every rule set and source (``--preset``)."""
        return FilterConfig(
            sources=[(g, r, None) for g, r, _ in self.sources], default=self.default, thresholds=self.thresholds, preset=preset
        )

    def definitions(self) -> dict[str, dict[str, Any]]:
        """``"rule_set/preset"`` -> every threshold and option it runs with, for each one in use."""
        out: dict[str, dict[str, Any]] = {}
        for rules, source_preset in [(self.default, None), *((r, p) for _, r, p in self.sources)]:
            for name in rules:
                preset = self.preset_for(name, source_preset)
                out[f"{name}/{preset}"] = known_rule_sets()[name].thresholds(self.thresholds.get(name), preset)
        return dict(sorted(out.items()))

    def opt_in_used(self) -> list[str]:
        """The opt-in rule sets (flagged_words) some source or the default is given."""
        used = {name for rules in [self.default, *(r for _, r, _ in self.sources)] for name in rules}
        return [name for name, rs in known_rule_sets().items() if rs.opt_in and name in used]

    def to_params(self) -> dict[str, Any]:
        return {
            "preset": self.preset,
            "presets": {name: self.preset_for(name) for name in [*default_rule_sets(), *self.opt_in_used()]},
            "default": self.default,
            "sources": [[g, r] if p is None else [g, r, p] for g, r, p in self.sources],
            "thresholds": self.thresholds,
            "definitions": self.definitions(),
        }


@stage("filter", section="select", order=10)
@dataclass
class FilterStage(DocStage):
    """Heuristic quality rules: Gopher quality and repetition, C4, FineWeb (published definitions).

    Each document goes through the rule sets its source is given in the config, in order,
    and is rejected with the first rule it fails as its reason (e.g.
    `gopher_quality:mean_word_length`). The default config filters CommonCrawl and other
    web text with all four, gives the Pile's curated prose subsets only the repetition
    rules, and leaves code, maths and subtitles alone. C4 keeps only a page's kept lines.
    Presets: `published` (the Gopher paper, the TFDS code that built C4, the code that built
    FineWeb), `datatrove` (datatrove 0.10.1's filters, decision for decision), `fineweb`
    (datatrove's, as FineWeb was filtered: C4's terminal-punctuation line rule off).

    \b
    Example:
      curate filter --in out/langid --out out/filter
      curate filter --in out/langid --out out/filter_c4 --rules c4 --config my_filters.yaml
      curate filter --in out/langid --out out/filter_fw --preset fineweb
    """

    name: ClassVar[str] = "filter"
    error_reasons: ClassVar[frozenset[str]] = frozenset({"invalid_utf8"})
    invalid_utf8: ClassVar[str] = "reject"
    sections: ClassVar[dict[str, str]] = {"rules": "counters.rules", "lines": "counters.lines"}
    rules: str | None = param(None, f"Rule sets to use (comma-separated): {', '.join(default_rule_sets())}, "
                              f"{', '.join(n for n, rs in known_rule_sets().items() if rs.opt_in)} (opt-in: only where the config "
                              "names it) [default: all; the config decides which apply to which source].", metavar="NAMES")  # fmt: skip
    config: str | None = param(None, "Per-source rule sets, presets and threshold overrides "
                               "[default: curate/resources/filters.yaml].", metavar="YAML")  # fmt: skip
    preset: str | None = param(
        None,
        "One preset for every rule set and source, over the config's: published (the papers and "
        "the code that built C4 and FineWeb), datatrove (datatrove 0.10.1's filters), fineweb "
        "(datatrove's as FineWeb ran them) [default: the config's].",
        choices=tuple(PRESETS),
        metavar="NAME",
        record=False,
    )  # fmt: skip  (recorded in config)

    def __post_init__(self) -> None:
        if isinstance(self.config, FilterConfig):
            self.filter_config = self.config
        else:
            path = self.config or str(default_config_path())
            self.filter_config = FilterConfig.from_mapping(load_yaml(path), path)
        if self.preset is not None:
            _check_name(self.preset, list(PRESETS), "--preset", "command line")
            self.filter_config = self.filter_config.with_preset(self.preset)
        self.enabled = parse_rules(self.rules) if self.rules is not None else [*all_rules(), *self.filter_config.opt_in_used()]
        self._word_lists: dict[str, str] = {}  # file -> sha256, of the word lists in use
        for name, rs in known_rule_sets().items():
            keys = rs.file_options
            if not keys or name not in self.enabled or name not in self.filter_config.opt_in_used():
                continue
            for definition, th in self.filter_config.definitions().items():
                if definition.startswith(name + "/"):
                    for key in keys:
                        wl = load_word_list(th[key])  # a missing or malformed list is an error now, before any work
                        self._word_lists[wl.path] = file_sha256(Path(wl.path))
        self._thresholds: dict[tuple[str, str], dict[str, Any]] = {}
        self._plans: dict[str, tuple[tuple[tuple[RuleSet, dict[str, Any]], ...], bool]] = {}

    def derived_params(self) -> dict[str, Any]:
        """The rule sets in use and the whole resolved config (presets and thresholds), not the option strings."""
        out: dict[str, Any] = {"rules": self.enabled, "config": self.filter_config.to_params()}
        if self._word_lists:
            out["word_lists"] = dict(sorted(self._word_lists.items()))
        return out

    def thresholds(self, rule_set: str, preset: str) -> dict[str, Any]:
        """The thresholds and options a rule set runs with in a preset (the config's overrides applied)."""
        key = (rule_set, preset)
        th = self._thresholds.get(key)
        if th is None:
            th = self._thresholds[key] = known_rule_sets()[rule_set].thresholds(self.filter_config.thresholds.get(rule_set), preset)
        return th

    def _plan(self, source: str) -> tuple[tuple[tuple[RuleSet, dict[str, Any]], ...], bool]:
        """``((rule set, thresholds), ...)`` for a source, and whether whitespace-only text goes to
        the rules: only where datatrove keeps it (its repetition filter alone), else it is ``empty``."""
        plan = self._plans.get(source)
        if plan is None:
            rules, source_preset = self.filter_config.entry_for(source)
            steps = []
            judge_blank = True
            for name in rules:
                if name in self.enabled:
                    preset = self.filter_config.preset_for(name, source_preset)
                    steps.append((known_rule_sets()[name], self.thresholds(name, preset)))
                    judge_blank = judge_blank and name == "gopher_repetition" and preset == "datatrove"
            plan = self._plans[source] = (tuple(steps), judge_blank and bool(steps))
        return plan

    def check(self, text: str, source: str, counters: Counters) -> tuple[str | None, str]:
        """``(reason or None, text)`` for one document; the text changes when a rule removes lines."""
        plan, judge_blank = self._plan(source or "")
        if not plan:
            counters.add("docs_unfiltered")
            return None, text
        counters.add("docs_checked")
        if not text.strip() and not (text and judge_blank):
            counters.add("bad_input", "empty")
            return "empty", text
        doc = Doc(text)
        for rs, th in plan:
            failed = rs.check(doc, th, counters.level("lines", rs.name) if rs.line_counters else {})
            if failed is not None:
                counters.add("rules", rs.name, failed)
                return f"{rs.name}:{failed}", doc.text
        return None, doc.text

    def decide_batch(self, batch: Batch) -> Decisions:
        sources = batch.column("source")
        counters = Counters()
        reasons: list[str | None] = []
        out_texts: list[str] = []
        changed = False
        for text, source in zip(batch.texts, sources):
            reason, new = self.check(text, source, counters)
            reasons.append(reason)
            if reason is None and new is not text:  # a rule removed lines of a kept document
                changed = True
                out_texts.append(new)
            else:
                out_texts.append(text)  # rejected documents keep the text they came with
        return Decisions(reasons, out_texts if changed else None, counters=counters)
