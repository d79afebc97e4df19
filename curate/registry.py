"""Registries: the stages, extractors, filter rule sets and output formats curate knows, by name.

Each kind is registered where it is defined, by a decorator (``@stage``, ``@extractor``,
``@rule_set``, ``@output_format``); nothing else lists them. ``curate --help``, option
choices (``--extractor``, ``--format``, rule-set names in a filter config) and the tables in
the docs are read from here.

Installed packages add their own through entry points, one group per kind
(:data:`ENTRY_POINT_GROUPS`): an entry point names a module (``mypkg.stages``) whose import
runs its decorators, or an object (``mypkg.stages:Shout``) that is registered under the entry
point's name. Built-in modules are found by walking curate's own packages, so a new module
under ``curate/stages/`` needs no line anywhere else.

Looking a name up imports as little as it can: the built-in modules whose file names match
the name (or start with its last word) are tried first (``dedup fuzzy`` -> ``curate/dedup/fuzzy.py``,
``import`` -> ``curate/stages/importer.py``), then every built-in module, then the entry points.
The naming convention only makes a lookup cheap; a module of any name is still found.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import pkgutil
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from curate.errors import CurateError

log = logging.getLogger("curate")

#: Entry-point group of each registry.
ENTRY_POINT_GROUPS = {
    "stage": "curate.stages",
    "extractor": "curate.extractors",
    "rule_set": "curate.rules",
    "format": "curate.formats",
}

#: The sections of ``curate --help``, in pipeline order.
SECTIONS = ("get data", "clean", "select", "deduplicate", "decontaminate", "produce", "inspect")


@dataclass(frozen=True)
class Entry:
    """One registered object: its name, the object, where it came from, and what its decorator said."""

    name: str
    obj: Any
    module: str
    meta: dict[str, Any] = field(default_factory=dict)


class Registry:
    """Named objects of one kind, registered by decorator or entry point, loaded lazily."""

    def __init__(self, kind: str, packages: tuple[str, ...]) -> None:
        self.kind = kind
        self.group = ENTRY_POINT_GROUPS[kind]
        self.packages = packages  # built-in packages whose modules may register this kind
        self._entries: dict[str, Entry] = {}
        self._builtins_loaded = False
        self._plugins_loaded = False
        self._loading_plugin: str | None = None

    # -- registering
    def add(self, name: str, obj: Any, module: str | None = None, **meta: Any) -> Any:
        """Register ``obj`` under ``name``; registering the same object twice is harmless, another one is an error.

        ``module`` is where it is defined (default: the object's own ``__module__``; an instance such
        as a rule set passes its caller's).
        """
        if not name or not isinstance(name, str):
            raise ValueError(f"a {self.kind} needs a name, got {name!r}")
        module = module or getattr(obj, "__module__", None) or type(obj).__module__
        old = self._entries.get(name)
        if old is not None and old.obj is not obj and (old.module != module or _qualname(old.obj) != _qualname(obj)):
            raise CurateError(f"two {self.kind}s are registered as {name!r}: {old.module} and {module}")
        self._entries[name] = Entry(name, obj, module, dict(meta))
        return obj

    def decorator(self, name: str, **meta: Any) -> Callable[[Any], Any]:
        def register(obj: Any) -> Any:
            return self.add(name, obj, **meta)

        return register

    # -- looking up
    def get(self, name: str) -> Entry:
        """The entry ``name``; a one-line error listing the known names when there is none."""
        if name not in self._entries:
            self._load_guesses(name)
        if name not in self._entries and not self._plugins_loaded:
            for ep in _entry_points(self.group):  # an installed package's, by the entry point's name
                if ep.name == name:
                    self._load_entry_point(ep)
        if name not in self._entries:
            self.load_all()
        if name not in self._entries:
            known = ", ".join(self.names()) or "none"
            raise CurateError(f"unknown {self.kind} {name!r} (known: {known})")
        return self._entries[name]

    def __contains__(self, name: str) -> bool:
        try:
            self.get(name)
        except CurateError:
            return False
        return True

    def names(self) -> list[str]:
        """Every registered name (built-in and installed), in registration order."""
        self.load_all()
        return list(self._entries)

    def entries(self) -> list[Entry]:
        self.load_all()
        return list(self._entries.values())

    def loaded(self) -> dict[str, Entry]:
        """What is registered so far, without importing anything."""
        return dict(self._entries)

    # -- loading
    def load_all(self) -> None:
        """Import every built-in module of this kind's packages, then the installed entry points."""
        if not self._builtins_loaded:
            # The flag is set after the imports: a module that reads this registry while it is being imported
            # (a class body listing the choices, say) loads the rest here too, instead of seeing a partial list.
            for module in builtin_modules(self.packages):
                _import(module)
            self._builtins_loaded = True
        if not self._plugins_loaded:
            self._plugins_loaded = True
            for ep in _entry_points(self.group):
                self._load_entry_point(ep)

    def _load_guesses(self, name: str) -> None:
        """Import the built-in modules whose names match ``name`` (and the modules of a matching package) until it is found."""
        words = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w]
        if not words:
            return
        packages: list[str] = []
        for module in builtin_modules(self.packages):
            stem = module.rsplit(".", 1)[-1].lower().lstrip("_")
            parts = stem.split("_")
            inside = any(module.startswith(p + ".") for p in packages)
            if inside or stem in words or words[-1] in parts or stem.rstrip("s") in words or stem.startswith(words[-1]):
                _import(module)
                if name in self._entries:
                    return
                if hasattr(sys.modules.get(module), "__path__"):
                    packages.append(module)

    def _load_entry_point(self, ep: Any) -> None:
        try:
            obj = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not break curate
            log.warning("curate: the %s entry point %r (%s) failed to load: %s: %s", self.group, ep.name, ep.value, type(exc).__name__, exc)
            return
        if ":" in ep.value and ep.name not in self._entries:  # an object, not a module of decorators
            meta = getattr(obj, "__curate_meta__", {}) or {}
            self.add(ep.name, obj, **meta)


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', repr(obj))}"


def _import(module: str) -> None:
    importlib.import_module(module)


def _entry_points(group: str) -> list[Any]:
    from importlib.metadata import entry_points

    return sorted(entry_points(group=group), key=lambda ep: ep.name)


_MODULES: dict[tuple[str, ...], list[str]] = {}


def builtin_modules(packages: tuple[str, ...]) -> list[str]:
    """Every module of curate's ``packages`` (found on disk, not imported: a package's ``__init__`` may be heavy)."""
    if packages not in _MODULES:
        found: list[str] = []

        def walk(name: str, paths: list[str]) -> None:
            for info in sorted(pkgutil.iter_modules(paths), key=lambda i: i.name):
                if info.name.startswith("_"):  # compiled kernels and private helpers register nothing
                    continue
                found.append(f"{name}.{info.name}")
                if info.ispkg:
                    walk(f"{name}.{info.name}", [os.path.join(p, info.name) for p in paths])

        for pkg in packages:
            spec = importlib.util.find_spec(pkg)
            if spec is None or not spec.submodule_search_locations:
                continue
            found.append(pkg)
            walk(pkg, list(spec.submodule_search_locations))
        _MODULES[packages] = found
    return _MODULES[packages]


# --------------------------------------------------------------------------- the registries

STAGE_PACKAGES = ("curate.stages", "curate.dedup", "curate.decontam")

stages = Registry("stage", STAGE_PACKAGES)
extractors = Registry("extractor", ("curate.stages.extract",))
rule_sets = Registry("rule_set", ("curate.stages.filters",))
formats = Registry("format", ("curate.formats",))


def stage(command: str, *, section: str, order: float = 100.0, group: str | None = None) -> Callable[[type], type]:
    """Register a stage class as the command ``command`` (``"clean"``, or ``"dedup fuzzy"`` inside a group).

    ``section`` is its heading in ``curate --help`` (one of :data:`SECTIONS`), ``order`` its
    place in that section (pipeline order; lower first). A command with a space (``"dedup
    lines"``) joins that group, which is created when no other stage made it.
    """
    if section not in SECTIONS:
        raise ValueError(f"section {section!r} is not one of {', '.join(SECTIONS)}")
    return stages.decorator(command, section=section, order=order)


def extractor(name: str, *, help: str, order: float = 100.0, comments: bool = False) -> Callable[[Callable[..., str]], Callable[..., str]]:  # noqa: A002
    """Register ``fn(html: str) -> str`` as the main-content extractor ``name`` (``--extractor name``).

    ``comments=True``: ``fn`` also takes ``comments: bool`` (keep comment sections; ``curate extract --comments``).
    """
    return extractors.decorator(name, help=help, order=order, comments=comments)


def rule_set(obj: Any) -> Any:
    """Register a filter rule set (a ``curate.stages.filters.base.RuleSet``) under its ``name``."""
    return rule_sets.add(obj.name, obj, module=sys._getframe(1).f_globals.get("__name__"))


def output_format(name: str, *, help: str) -> Callable[[type], type]:  # noqa: A002
    """Register a shard format class (see ``curate/formats``) as ``--format name``."""
    return formats.decorator(name, help=help)


def stage_commands() -> Iterator[tuple[str, type, dict[str, Any]]]:
    """``(command, class, meta)`` of every stage, built-in and installed, in ``--help`` order."""
    entries = stages.entries()
    for e in sorted(entries, key=lambda e: (SECTIONS.index(e.meta.get("section", "inspect")), e.meta.get("order", 100.0), e.name)):
        yield e.name, e.obj, e.meta


def extractor_names() -> list[str]:
    """The ``--extractor`` choices, in their declared order."""
    return [e.name for e in sorted(extractors.entries(), key=lambda e: (e.meta.get("order", 100.0), e.name))]
