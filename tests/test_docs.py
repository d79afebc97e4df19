"""The documentation runs: every code block marked runnable, every relative link, no retyped benchmark figure.

A block is runnable when the line before its opening fence is ``<!-- runnable -->``. The
blocks run in the order of ``PAGES`` (and of the page), in one working directory holding the
repository's ``sample_data`` and ``pipelines``: the stage pages chain on the sample data
(download -> extract -> clean -> ... -> report), as a user following them would.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

#: Pages with runnable blocks, in the order a user follows them.
PAGES = [
    "README.md",
    "docs/download.md",
    "docs/extract.md",
    "docs/clean.md",
    "docs/langid.md",
    "docs/filters.md",
    "docs/pii.md",
    "docs/urlfilter.md",
    "docs/quality.md",
    "docs/dedup.md",
    "docs/decontam.md",
    "docs/tokenize.md",
    "docs/report.md",
    "docs/extending.md",
]
RUNNABLE = re.compile(r"^<!-- runnable -->\n```(?:bash|sh)\n(.*?)^```", re.M | re.S)


def runnable_blocks() -> list[tuple[str, int, str]]:
    """(page, block number, code) of every runnable block, in order."""
    out = []
    for page in PAGES:
        path = ROOT / page
        if not path.exists():
            continue
        for k, m in enumerate(RUNNABLE.finditer(path.read_text())):
            out.append((page, k, m.group(1)))
    return out


def test_every_runnable_page_is_listed():
    """A page with runnable blocks that the chain does not know would silently not run."""
    pages = {str(p.relative_to(ROOT)) for p in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]}
    for page in sorted(pages - set(PAGES)):
        assert not RUNNABLE.search((ROOT / page).read_text()), f"{page} has runnable blocks but is not in PAGES"


@pytest.mark.slow
def test_runnable_blocks_run_in_order(tmp_path):
    blocks = runnable_blocks()
    assert len(blocks) >= 8
    for name in ("sample_data", "pipelines"):
        (tmp_path / name).symlink_to(ROOT / name)
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "CURATE_PROGRESS": "log"}
    for page, k, code in blocks:
        r = subprocess.run(["bash", "-c", "set -euo pipefail\n" + code], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=900)  # fmt: skip
        assert r.returncode == 0, f"{page} block {k} failed:\n{code}\n--- stdout\n{r.stdout[-2000:]}\n--- stderr\n{r.stderr[-3000:]}"


LINK = re.compile(r"\]\(([^)#\s]+)(#[^)]*)?\)")


def test_relative_links_resolve():
    for page in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]:
        for m in LINK.finditer(page.read_text()):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)}: broken link {target}"


def test_readme_is_short_and_retypes_no_benchmark_figure():
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) <= 15_500
    # ratios like "15.0x", throughputs and precision/recall figures belong in docs/benchmarks/, written by the benchmarks
    assert not re.search(r"\b\d+(\.\d+)?x\b", text), re.search(r"\b\d+(\.\d+)?x\b", text)
    assert not re.search(r"\b\d[\d,.]* (docs|pages|MB)/s\b", text)
