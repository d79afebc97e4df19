"""The docs' tables of what curate knows, generated from the registries (never typed by hand).

Each table sits in a docs page between two markers::

    <!-- registry:stages -->
    | command | ... |
    <!-- /registry:stages -->

``python -m curate.catalog`` rewrites every such region under ``docs/`` and README.md from
the registries (stages, extractors, rule sets, formats, built-in and installed);
``--check`` exits 1 naming the pages that are out of date (a test runs it). A table lists
what is registered in the Python that runs it: installed plugins appear too.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from curate.registry import extractor_names, extractors, formats, rule_sets, stage_commands

_REGION = re.compile(r"(<!-- registry:(?P<name>[a-z_]+) -->\n)(?P<body>.*?)(<!-- /registry:(?P=name) -->)", re.S)


def _first_line(doc: str | None) -> str:
    return (doc or "").strip().split("\n", 1)[0].rstrip(".")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def stages_table() -> str:
    """Every stage command: its section, what it does, the module that defines it."""
    rows = ["| command | section | what it does | module |", "|---|---|---|---|"]
    for command, cls, meta in stage_commands():
        rows.append(f"| `curate {command}` | {meta.get('section', '')} | {_cell(_first_line(cls.__doc__))} | `{cls.__module__}` |")
    return "\n".join(rows)


def extractors_table() -> str:
    """Every ``--extractor`` choice, in order, with its help."""
    import dataclasses

    from curate.registry import stages

    default_name = next(f.default for f in dataclasses.fields(stages.get("extract").obj) if f.name == "extractor")
    rows = ["| `--extractor` | what it is | module |", "|---|---|---|"]
    for name in extractor_names():
        e = extractors.get(name)
        default = " (default)" if name == default_name else ""
        rows.append(f"| `{name}`{default} | {_cell(str(e.meta.get('help', '')))} | `{e.module}` |")
    return "\n".join(rows)


def rule_sets_table() -> str:
    """Every filter rule set: presets (the published one first), its reasons, opt-in or not."""
    rows = ["| rule set | presets (published first) | reasons | runs | module |", "|---|---|---|---|---|"]
    entries = sorted(rule_sets.entries(), key=lambda e: (e.obj.order, e.name))
    for e in entries:
        rs = e.obj
        presets = [rs.published, *(p for p in rs.presets if p != rs.published)]
        runs = "where a config names it" if rs.opt_in else "by default"
        rows.append(f"| `{rs.name}` | {', '.join(f'`{p}`' for p in presets)} | {', '.join(f'`{r}`' for r in rs.reasons)} | {runs} | "
                    f"`{e.module}` |")  # fmt: skip
    return "\n".join(rows)


def formats_table() -> str:
    """Every ``--format`` choice."""
    from curate.formats import format_names

    rows = ["| `--format` | shards | what it is | module |", "|---|---|---|---|"]
    for name in format_names():
        e = formats.get(name)
        rows.append(f"| `{name}` | `part-*{e.obj.suffix}` | {_cell(str(e.meta.get('help', '')))} | `{e.module}` |")
    return "\n".join(rows)


TABLES: dict[str, Callable[[], str]] = {
    "stages": stages_table,
    "extractors": extractors_table,
    "rule_sets": rule_sets_table,
    "formats": formats_table,
}


def refresh(text: str) -> str:
    """``text`` with every registry region regenerated (unknown region names are an error)."""

    def fill(m: re.Match) -> str:
        name = m.group("name")
        if name not in TABLES:
            raise KeyError(f"unknown registry table {name!r} (known: {', '.join(TABLES)})")
        return f"{m.group(1)}{TABLES[name]()}\n{m.group(4)}"

    return _REGION.sub(fill, text)


def pages(root: Path) -> list[Path]:
    """The pages that may hold registry tables."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in argv
    root = Path(__file__).resolve().parents[1]
    stale = []
    for page in pages(root):
        if not page.exists():
            continue
        old = page.read_text()
        new = refresh(old)
        if new != old:
            stale.append(page)
            if not check:
                page.write_text(new)
    if check and stale:
        print(f"curate.catalog: out of date (run python -m curate.catalog): {', '.join(str(p.relative_to(root)) for p in stale)}")
        return 1
    for p in stale:
        print(f"curate.catalog: rewrote {p.relative_to(root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
