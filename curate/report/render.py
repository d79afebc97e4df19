"""The page: the parts built by :mod:`curate.report.sections`, laid out by a Jinja2 template with autoescaping.

Every value reaches the page through the template, which escapes it (``autoescape=True``;
nothing is marked safe), so document text from the rejected outputs, source names and ids
are shown as text whatever they hold. Characters HTML forbids (C0 controls other than tab,
newline and carriage return, DEL, lone surrogates) are shown as U+FFFD.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from typing import Any

from curate import __version__
from curate.errors import CurateError
from curate.report.checks import all_warnings
from curate.report.collect import Run, Val, collect
from curate.report.fmt import fmt_int
from curate.report.sections import SECTIONS, Tag, build, slug
from curate.storage import as_path

_FORBIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def _printable(value: Any) -> Any:
    """What the template prints: text without the characters HTML forbids (escaping is the template's)."""
    if isinstance(value, str) and not hasattr(value, "__html__"):  # markup the template made is already clean
        return _FORBIDDEN.sub("\ufffd", value)
    return value


def environment() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("curate.report", "templates"),
        autoescape=True,
        finalize=_printable,
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
        lstrip_blocks=False,
    )
    env.tests["val"] = lambda c: isinstance(c, Val)
    env.tests["tag"] = lambda c: isinstance(c, Tag)
    env.filters["thousands"] = fmt_int
    env.filters["slug"] = slug
    return env


def render(run: Run, *, title: str = "curate pipeline report", samples: int = 2) -> tuple[str, int]:
    """The page's HTML and the number of charts in it."""
    parts = build(run, samples)
    finished = max((s.mtime for s in run.stages), default=time.time())
    page = (
        environment()
        .get_template("report.html.j2")
        .render(
            title=title,
            version=__version__,
            roots=", ".join(str(r) for r in run.roots),
            n_stages=len(run.stages),
            when=time.strftime("%Y-%m-%d %H:%M", time.localtime(finished)),
            sections=SECTIONS,
            warnings=all_warnings(run),
            parts=parts,
        )
    )
    charts = sum(1 for blocks in parts.values() for b in blocks if getattr(b, "kind", "") == "figure")
    return page + "\n", charts


def write_report(
    paths: Sequence[str | os.PathLike], out: str | os.PathLike, *, title: str | None = None, samples: int = 2
) -> dict[str, Any]:
    """Collect, render and write the page (atomically); returns a summary for the CLI."""
    from curate.storage import write_bytes_atomic

    t0 = time.monotonic()
    run = collect(paths)
    page, charts = render(run, title=title or "curate pipeline report", samples=samples)
    out = as_path(out)
    if out.is_dir():
        raise CurateError(f"{out}: is a directory; --out is the HTML file to write")
    data = page.encode("utf-8", "replace")
    write_bytes_atomic(out, data)
    return {"path": str(out), "stages": [s.label for s in run.stages], "charts": charts, "bytes": len(data),
            "seconds": round(time.monotonic() - t0, 2), "unfinished": [str(p) for p in run.unfinished]}  # fmt: skip
