"""benchmarks/: a script's directory comes first on ``sys.path``, so no name there may shadow a module."""

from __future__ import annotations

import sys
from importlib.metadata import packages_distributions

from tests.conftest import ROOT

BENCH = ROOT / "benchmarks"


def test_no_name_in_benchmarks_shadows_a_standard_or_installed_module():
    names = {p.stem for p in BENCH.glob("*.py")} | {p.name for p in BENCH.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    assert names & (set(sys.stdlib_module_names) | set(packages_distributions())) == set()
    # the one naming: bench_<what>.py for every benchmark (its table keeps <what>.md), _<name>.py for what they share
    scripts = {p.name for p in BENCH.glob("*.py") if not p.name.startswith("_")} - {"demo_hashes.py"}
    assert scripts and all(name.startswith("bench_") for name in scripts), sorted(scripts)
