"""The stage runtime (issue 16): one lifecycle for every command, so every guarantee holds everywhere.

Each of the seven failures the issue lists is a test here, on real files and the real CLI:
input destroyed, stale output reported as success, a stage that failed on everything
exiting 0, one flag with two meanings, counting and input checks, errors that are not one
line, and decontam's own parameter recording. Plus: the layout rules, a stage declared in
one module and registered in one line, and the extractors' dependencies on a plain install.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from curate.cli import cli
from curate.dataset import read_success
from tests.conftest import ROOT, SAMPLE, prose

CURATE = [sys.executable, "-m", "curate"]


def invoke(*args, ok: bool = True):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    if ok and result.exit_code != 0:
        raise AssertionError(f"curate {' '.join(map(str, args))} exited {result.exit_code}:\n{result.stdout}\n{result.stderr}")
    return result


def data_digest(path: Path) -> dict[str, str]:
    """sha256 of every data file (shards, tokens) under ``path``: what a user reads."""
    return {
        str(f.relative_to(path)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(path.rglob("*"))
        if f.is_file() and f.suffix in (".parquet", ".bin", ".idx") and "_work" not in f.parts
    }


def write_docs(path: Path, rows: list[dict], name: str = "part-00000.parquet", schema: pa.Schema | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path / name)
    return path


@pytest.fixture(scope="module")
def pile(tmp_path_factory) -> Path:
    """A finished curate dataset: 150 documents of the sample Pile, in 3 shards, cleaned."""
    d = tmp_path_factory.mktemp("runtime")
    invoke("download", "pile", "--dataset", SAMPLE / "pile", "--max-docs", 30, "--shard-docs", 50, "--out", d / "raw")
    invoke("clean", "--in", d / "raw", "--out", d / "clean", "--workers", 1)
    return d / "clean"


# --------------------------------------------------------------------------- 1. input destroyed


@pytest.mark.parametrize(
    "command",
    [
        ["clean"],
        ["langid", "--keep", "all"],
        ["filter"],
        ["dedup", "exact"],
        ["dedup", "fuzzy"],
        ["decontam", "--eval", SAMPLE / "eval" / "lambada_like.jsonl"],
        ["tokenize"],
    ],
    ids=lambda c: " ".join(map(str, c[:2])),
)
def test_output_overlapping_an_input_is_refused_before_anything_is_touched(pile, tmp_path, command):
    x = tmp_path / "x"
    shutil.copytree(pile, x)
    before = data_digest(x)
    for out, how in ((x, "is the input"), (x / "sub", "lies inside the input"), (tmp_path, "contains the input")):
        for extra in ([], ["--overwrite"]):
            r = invoke(*command, "--in", x, "--out", out, *extra, ok=False)
            assert r.exit_code == 1, (out, extra, r.stdout)
            assert (
                r.stderr.strip()
                == f"curate: error: --out {out} {how.replace('the input', f'the input {x}')}; write the output outside the inputs (nothing was changed)"
            )
            assert data_digest(x) == before and not (x / "sub").exists()
    assert pd.read_parquet(x)["id"].is_unique


def test_overwrite_deletes_only_what_curate_wrote(pile, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("precious")
    r = invoke("clean", "--in", pile, "--out", home, "--overwrite", ok=False)
    assert r.exit_code == 1 and "was not written by curate" in r.stderr
    assert (home / "thesis.tex").read_text() == "precious"
    empty = tmp_path / "empty"
    empty.mkdir()
    invoke("clean", "--in", pile, "--out", empty, "--overwrite", "--workers", 1)  # an empty directory is fine
    assert read_success(empty)["docs_out"] > 0


# --------------------------------------------------------------------------- 2. stale output


def test_changed_input_is_never_reported_as_current(pile, tmp_path):
    """Re-run an upstream stage with another parameter, then the downstream command as before: it starts again."""
    lang, filt = tmp_path / "langid", tmp_path / "filter"
    invoke("langid", "--in", pile, "--out", lang, "--keep", "en", "--min-score", "0.65", "--workers", 1)
    invoke("filter", "--in", lang, "--out", filt, "--workers", 1)
    old = read_success(filt)
    r = invoke("--quiet", "filter", "--in", lang, "--out", filt, "--workers", 1)
    assert r.stderr == "" and read_success(filt) == old  # unchanged inputs: nothing to do, said only without --quiet
    invoke("langid", "--in", pile, "--out", lang, "--keep", "en", "--min-score", "0.99", "--workers", 1, "--overwrite")
    r = invoke("--quiet", "filter", "--in", lang, "--out", filt, "--workers", 1)
    assert "was made from other inputs" in r.stderr and str(lang) in r.stderr  # --quiet does not hide it
    new = read_success(filt)
    assert new["docs_in"] == read_success(lang)["docs_out"] < old["docs_in"]
    ref = tmp_path / "ref"
    invoke("filter", "--in", lang, "--out", ref, "--workers", 1)
    assert data_digest(filt) == data_digest(ref)  # the same as a clean run on the new input


def test_changed_parameter_needs_overwrite_unless_nothing_was_finished(pile, tmp_path):
    out = tmp_path / "o"
    invoke("clean", "--in", pile, "--out", out, "--workers", 1)
    r = invoke("clean", "--in", pile, "--out", out, "--max-blank-lines", 5, ok=False)
    assert r.exit_code == 1 and "other parameters (max_blank_lines 2 -> 5); use --overwrite" in r.stderr
    invoke("clean", "--in", pile, "--out", out, "--max-blank-lines", 5, "--overwrite")
    assert read_success(out)["params"]["max_blank_lines"] == 5


def test_deleted_output_files_are_made_again(pile, tmp_path):
    out = tmp_path / "o"
    invoke("clean", "--in", pile, "--out", out, "--workers", 1)
    before = data_digest(out)
    (out / "part-00001.parquet").unlink()
    r = invoke("clean", "--in", pile, "--out", out, "--workers", 1)
    assert "were deleted since it was written" in r.stderr
    assert data_digest(out) == before


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_sample_makefile_rebuilds_exactly_what_changed(tmp_path):
    """The sample Makefile after an upstream change gives, downstream, what a clean run with that change gives."""
    base = ["make", "-s", "-C", str(ROOT / "pipelines" / "sample"), f"CURATE={CURATE[0]} -m curate", f"PYTHON={sys.executable}",
            "WORKERS=1"]  # fmt: skip

    def make(out: Path, *extra: str) -> None:
        subprocess.run([*base, f"OUT={out}", *extra, f"{out}/filter/_SUCCESS"], check=True, capture_output=True, text=True)

    a, b = tmp_path / "a", tmp_path / "b"
    make(a)
    first = data_digest(a / "filter")
    stamp = (a / "clean" / "_SUCCESS").stat().st_mtime_ns
    time.sleep(0.05)  # make compares modification times
    # the user changes langid's parameter by hand, then runs make: make re-runs filter, which starts again
    subprocess.run([*CURATE, "--quiet", "langid", "--in", a / "clean", "--in", a / "cc_extract", "--out", a / "langid", "--keep", "en",
                    "--min-score", "0.9", "--filter-sources", "cc/*", "--workers", "1", "--keep-rejected", "--overwrite"],
                   check=True)  # fmt: skip
    make(a)
    make(b, "LANGID_MIN_SCORE=0.9")
    assert data_digest(a / "langid") == data_digest(b / "langid")
    assert read_success(b / "langid")["docs_out"] < read_success(b / "clean")["docs_out"] + read_success(b / "cc_extract")["docs_out"]
    assert data_digest(a / "filter") == data_digest(b / "filter") != first
    assert (a / "clean" / "_SUCCESS").stat().st_mtime_ns == stamp  # upstream of the change: untouched


# --------------------------------------------------------------------------- 3. a stage that failed on everything


def test_extract_where_every_page_fails_exits_1_naming_the_reason(tmp_path, monkeypatch):
    """What a plain install without lxml_html_clean did: every record extractor_error, exit 0. Now: exit 1, no _SUCCESS."""
    import trafilatura

    def broken(html: str, **options: object) -> str:
        raise ModuleNotFoundError("No module named 'lxml_html_clean'")

    monkeypatch.setattr(trafilatura, "extract", broken)  # the registered extractor calls it; the error comes from where it did
    out = tmp_path / "x"
    r = invoke("extract", "--in", SAMPLE / "cc", "--out", out, "--extractor", "trafilatura", "--record-timeout", 0, "--workers", 1,
               ok=False)  # fmt: skip
    assert r.exit_code == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("curate: error: extract: kept no document: ") and "failed with extractor_error" in last
    assert "No module named 'lxml_html_clean'" in last and "re-run with --overwrite" in last
    assert not (out / "_SUCCESS").exists()


def _dependency_closure(name: str) -> set[str]:
    """Distributions ``name`` needs without any extra (its test extras excluded), following the dependencies' own extras."""
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo: list[tuple[str, str]] = [(name, "")]
    while todo:
        dist, extra = todo.pop()
        key = f"{canonicalize_name(dist)}[{extra}]"
        if key in seen:
            continue
        seen.add(key)
        try:
            reqs = distribution(dist).requires or []
        except PackageNotFoundError:
            continue
        for raw in reqs:
            req = Requirement(raw)
            if req.marker is not None and not req.marker.evaluate({"extra": extra}):
                continue
            todo.append((req.name, ""))
            todo.extend((req.name, e) for e in req.extras)
    return {k.split("[")[0] for k in seen}


def test_extractors_need_only_the_declared_dependencies():
    """Every distribution an extractor imports is among curate's dependencies (not only its test extras)."""
    from packaging.utils import canonicalize_name

    code = (
        "import json, sys\n"
        "from importlib.metadata import packages_distributions\n"
        "from curate.stages.extract.extract_stage import EXTRACTORS\n"
        "from curate.stages.extract.extractors import extractor_function\n"
        "html = '<html><body><article><h1>T</h1><p>' + 'A sentence of words that reads like text. ' * 40 + '</p></article></body></html>'\n"
        "for name in EXTRACTORS:\n"
        "    assert isinstance(extractor_function(name)(html), str), name\n"
        "dists = packages_distributions()\n"
        "print(json.dumps(sorted({d for m in list(sys.modules) for d in dists.get(m.split('.')[0], [])})))\n"
    )
    used = json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)
    allowed = _dependency_closure("curate")
    missing = sorted(d for d in used if canonicalize_name(d) not in allowed and canonicalize_name(d) != "curate")
    assert "lxml-html-clean" in allowed
    assert missing == [], f"imported by the extractors but not a dependency of curate: {missing}"


# --------------------------------------------------------------------------- 4. one meaning per flag


def _commands() -> list[tuple[str, object]]:
    out = []
    ctx = cli.make_context("curate", ["--help"], resilient_parsing=True)
    for name in cli.list_commands(ctx):
        cmd = cli.get_command(ctx, name)
        if hasattr(cmd, "list_commands"):
            sub = cmd.make_context(name, ["--help"], resilient_parsing=True, parent=ctx)
            out += [(f"{name} {s}", cmd.get_command(sub, s)) for s in cmd.list_commands(sub)]
        else:
            out.append((name, cmd))
    return out


def test_shared_flags_mean_the_same_everywhere():
    from curate.runtime import COMMON

    stage_commands = {name: cmd for name, cmd in _commands() if name not in ("inspect", "report", "stats")}
    assert set(stage_commands) == {"download pile", "download cc", "import", "extract", "clean", "langid", "filter", "pii", "urlfilter", "quality train",
                                   "quality score", "quality bucket", "dedup exact", "dedup fuzzy", "dedup lines", "dedup substrings", "decontam", "tokenize",
                                   "blend"}  # fmt: skip
    has = {name: {p.name: p for p in cmd.params} for name, cmd in stage_commands.items()}
    for name, params in has.items():
        assert "overwrite" in params, name
        assert "params" in params, name  # --params YAML everywhere
        if "only_sources" in params:  # always: apply to these sources, pass the others through
            assert params["only_sources"].help == COMMON["only_sources"][2].help, name
    assert "only_sources" not in has["tokenize"] and "sources" in has["tokenize"]  # a sink selects: another name
    assert {n for n, p in has.items() if "only_sources" in p} == {
        "clean",
        "langid",
        "filter",
        "pii",
        "urlfilter",
        "quality score",
        "dedup lines",
        "dedup substrings",
        "decontam",
    }
    overwrite_helps = {p["overwrite"].help for p in has.values()}
    assert len(overwrite_helps) <= 3  # the shared wording, blend's (its tokenized sources) and download cc's (one snapshot)


def test_params_yaml_takes_the_option_names(pile, tmp_path):
    cfg = tmp_path / "langid.yaml"
    cfg.write_text("keep: [all]\nmin_score: 0.3\nworkers: 1\n")
    invoke("langid", "--in", pile, "--out", tmp_path / "o", "--params", cfg)
    rec = read_success(tmp_path / "o")
    assert rec["params"]["min_score"] == 0.3 and rec["params"]["keep"] is None
    invoke("langid", "--in", pile, "--out", tmp_path / "o2", "--params", cfg, "--min-score", "0.5")  # the command line wins
    assert read_success(tmp_path / "o2")["params"]["min_score"] == 0.5
    cfg.write_text("min_scor: 0.3\n")
    r = invoke("langid", "--in", pile, "--out", tmp_path / "o3", "--params", cfg, ok=False)
    assert r.exit_code == 1 and "min_scor" in r.stderr and "min_score" in r.stderr and len(r.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- 5. counting and input checks


ROWS = [
    {"id": "a", "text": prose(1), "source": "cc/x"},
    {"id": "b", "text": None, "source": "cc/x"},
    {"id": "c", "text": prose(2), "source": "cc/x"},
]


def test_null_text_is_counted_in_and_out(tmp_path):
    src = write_docs(tmp_path / "in", ROWS)
    invoke("clean", "--in", src, "--out", tmp_path / "c", "--workers", 1, "--keep-rejected")
    rec = read_success(tmp_path / "c")
    assert (rec["docs_in"], rec["docs_out"], rec["rejected"]["empty"]["docs"]) == (3, 2, 1)
    assert rec["counters"]["null_text"] == 1
    invoke("filter", "--in", src, "--out", tmp_path / "f", "--workers", 1)
    assert read_success(tmp_path / "f")["docs_in"] == 3
    invoke("dedup", "exact", "--in", src, "--out", tmp_path / "d", "--workers", 1)  # was: TypeError
    assert read_success(tmp_path / "d")["docs_in"] == 3


CHECKED = [["clean"], ["dedup", "exact"]]
WITH_TOKENIZE = [*CHECKED, ["tokenize"]]  # tokenize keeps no ids: it checks sources and types only


@pytest.mark.parametrize(
    "rows, schema, message, commands",
    [
        ([{"id": "a", "text": "x y", "source": "s"}, {"id": None, "text": "z", "source": "s"}], None,
         "part-00000.parquet: row 1: id is null", CHECKED),
        ([{"id": "a", "text": "x y", "source": "s"}, {"id": "a", "text": "z", "source": "s"}], None,
         "duplicate id 'a': {dir}/part-00000.parquet row 0 and row 1", CHECKED),
        ([{"id": "a", "text": "x y", "source": None}], None, "part-00000.parquet: row 0: source is null", WITH_TOKENIZE),
        ([{"id": "a", "text": 7, "source": "s"}], pa.schema([("id", pa.string()), ("text", pa.int64()), ("source", pa.string())]),
         "part-00000.parquet: column 'text' has type int64; it must be a string", WITH_TOKENIZE),
        ([{"id": "a", "source": "s"}], None, "part-00000.parquet: missing column(s) text", WITH_TOKENIZE),
    ],
    ids=["null id", "duplicate id", "null source", "integer text", "missing text"],
)  # fmt: skip
def test_bad_ids_sources_and_types_are_one_line_errors(tmp_path, rows, schema, message, commands):
    src = write_docs(tmp_path / "in", rows, schema=schema)
    for cmd in commands:
        r = invoke(*cmd, "--in", src, "--out", tmp_path / "o" / "_".join(cmd), "--workers", 1, ok=False)
        assert r.exit_code == 1, (cmd, r.stdout)
        lines = r.stderr.strip().splitlines()
        assert lines[-1].startswith("curate: error: ") and message.format(dir=src) in lines[-1], (cmd, r.stderr)


def test_ids_from_two_copies_of_a_warc_file_are_an_error(tmp_path):
    warcs = sorted((SAMPLE / "cc").rglob("*.warc.gz"))
    d = tmp_path / "CC-MAIN-2020-50"
    d.mkdir()
    shutil.copy(warcs[0], d / "a.warc.gz")
    shutil.copy(warcs[0], d / "b.warc.gz")
    r = invoke("extract", "--in", d, "--out", tmp_path / "o", "--workers", 1, ok=False)
    assert r.exit_code == 1 and "duplicate id" in r.stderr and "the inputs hold the same records twice" in r.stderr
    assert not (tmp_path / "o" / "_SUCCESS").exists()


# --------------------------------------------------------------------------- 6. errors are one line


def test_a_failing_shard_is_one_line_and_the_advice_fits(pile, tmp_path):
    src = tmp_path / "in"
    shutil.copytree(pile, src)
    (src / "part-00001.parquet").write_bytes(b"PAR1 not parquet PAR1")
    r = invoke("clean", "--in", src, "--out", tmp_path / "o", "--workers", 2, ok=False)
    lines = r.stderr.strip().splitlines()
    failed = [ln for ln in lines if "failed" in ln]
    assert len(failed) == 2, lines  # the shard, once; then the summary line
    assert "part-00001" in failed[0] and "not a readable Parquet file" in failed[0]
    n = len(list(src.glob("part-*.parquet")))
    assert lines[-1] == (f"curate: error: clean: 1 of {n} shard(s) failed (named above); finished shards are kept: "
                         "fix the cause, then re-run to complete the rest")  # fmt: skip


def test_ctrl_c_prints_one_line_whatever_the_worker_count(tmp_path):
    """SIGINT to the whole process group, as a terminal sends it, while two workers (and their extraction helpers) work."""
    from tests.test_extract import make_warc, pages

    for k in range(8):
        make_warc(tmp_path / "in" / "CC-MAIN-2020-50" / f"f{k}.warc.gz", pages(100, start=1000 * k))
    cmd = [*CURATE, "extract", "--in", tmp_path / "in", "--out", tmp_path / "o", "--workers", "2", "--extractor", "trafilatura"]
    # Ctrl-C's default action, as in a terminal: a shell without job control starts background jobs (`make test &`)
    # with SIGINT ignored, and Python keeps an ignored SIGINT ignored (as nohup relies on)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "CURATE_PROGRESS": "log"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    first = proc.stderr.readline()  # the first finished file: the pool is up, both workers are extracting
    assert "done" in first, first
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    lines = [ln for ln in err.strip().splitlines() if ln and "done:" not in ln]
    assert proc.returncode == 130, err
    assert lines == ["curate: interrupted; finished shards are kept: run the same command again to resume"], err
    assert not (tmp_path / "o" / "_SUCCESS").exists() and len(list((tmp_path / "o").glob("part-*"))) < 8
    r = subprocess.run([*cmd[:3], "--quiet", *cmd[3:]], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert not list((tmp_path / "o").rglob(".*.tmp.*"))  # what the killed workers left is cleared
    assert read_success(tmp_path / "o")["docs_out"] == 800


# --------------------------------------------------------------------------- 7. decontam's parameters


def test_decontam_with_a_trailing_slash(pile, tmp_path):
    ev = SAMPLE / "eval" / "lambada_like.jsonl"
    invoke("decontam", "--in", f"{pile}/", "--out", tmp_path / "dc", "--eval", ev, "--workers", 1)
    r = invoke("decontam", "--in", pile, "--out", tmp_path / "dc", "--eval", ev, "--workers", 1)
    assert "nothing to do" in r.stderr


# --------------------------------------------------------------------------- a new stage is one module and one line


def test_a_new_map_stage_is_one_module(pile, tmp_path):
    """tests/toy_stage.py is registered by its own decorator on import: no list names it (tests/test_plugin.py: installed)."""
    import tests.toy_stage  # noqa: F401  (the import registers it)
    from curate.registry import stages

    try:
        r = invoke("shout", "--help")
        assert "Upper-case the text of short documents" in r.stdout and "--max-chars" in r.stdout and "--only-sources" in r.stdout
        assert "shout" in invoke("--help").stdout.split("Clean:")[1].split("Select:")[0]
        invoke("shout", "--in", pile, "--out", tmp_path / "s", "--max-chars", 2000, "--workers", 1, "--keep-rejected")
        rec = read_success(tmp_path / "s")
        df = pd.read_parquet(tmp_path / "s")
        assert (df["text"] == df["text"].str.upper()).all() and rec["params"]["max_chars"] == 2000
        assert rec["docs_in"] == rec["docs_out"] + rec["rejected"]["too_long"]["docs"]
        r = invoke("shout", "--in", pile, "--out", tmp_path / "s", "--max-chars", 10, "--keep-rejected", ok=False)
        assert "other parameters (max_chars 2000 -> 10)" in r.stderr
    finally:
        stages._entries.pop("shout", None)
        cli.commands.pop("shout", None)


# Arguments that make each registered stage constructible (its required parameters), for the checks below.
_REQUIRED = {
    "download pile": {"dataset": str(SAMPLE / "pile")},
    "import": {"dataset": str(SAMPLE / "pile")},
    "download cc": {"snapshot": "CC-MAIN-2020-50", "segments": 1},
    "quality train": {"pos": [str(SAMPLE / "pile")], "neg": [str(SAMPLE / "pile")]},
    "quality score": {"model": str(ROOT / "curate" / "resources" / "lid.176.ftz"), "label": "__label__en"},
    "quality bucket": {"columns": ["quality_score"]},
    "decontam": {"evals": [str(SAMPLE / "eval" / "lambada_like.jsonl")]},
    "blend": {"config": str(ROOT / "pipelines" / "sample" / "blend.yaml")},
}


def _registered_stages():
    from curate.registry import stage_commands

    return [(c, cls) for c, cls, _ in stage_commands() if c != "shout"]


def test_every_declared_field_reaches_the_record(monkeypatch, tmp_path):
    """params() is the declared fields (record=True) plus derived values: no stage lists them again, none can forget one."""
    monkeypatch.setenv("TOKENIZED", str(tmp_path))  # the sample blend config names its prefixes by it
    from curate.runtime import Stage, declared_params

    checked = 0
    for command, cls in _registered_stages():
        assert "params" not in vars(cls), f"{command}: {cls.__name__} overrides params(); declare fields and use derived_params()"
        stage = cls(**_REQUIRED.get(command, {}))
        recorded = stage.params()
        for f, decl in declared_params(cls):
            if decl.record and (decl.relevant is None or decl.relevant(stage)):
                assert f.name in recorded, f"{command}: --{f.name.replace('_', '-')} is declared recorded but is not in params()"
        assert isinstance(stage, Stage)
        checked += 1
    assert checked >= 15


def test_help_and_choices_come_from_the_registries():
    from curate.formats import format_names
    from curate.registry import SECTIONS, stage_commands
    from curate.stages.filters import known_rule_sets

    out = invoke("--help").stdout
    out = out[out.index("Get data:") :]  # the commands, not the intro
    for command, _cls, meta in stage_commands():
        top = command.split(" ")[0]
        assert top in out, command
        assert meta["section"] in SECTIONS
    assert out.index("extract") < out.index("clean") < out.index("filter") < out.index("dedup") < out.index("tokenize")
    fmt = invoke("clean", "--help").stdout
    assert all(f in fmt for f in format_names()) and {"parquet", "jsonl"} <= set(format_names())
    rules = invoke("filter", "--help").stdout.replace("\n", " ")
    assert all(name in " ".join(rules.split()) for name in known_rule_sets())


# --------------------------------------------------------------------------- layout rules


def _imports(path: Path) -> set[str]:
    mods: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            mods.add(node.module)
            mods.update(f"{node.module}.{a.name}" for a in node.names)  # `from curate import stages` imports curate.stages
        elif isinstance(node, ast.Import):
            mods.update(a.name for a in node.names)
    return {m for m in mods if m == "curate" or m.startswith("curate.")}


def test_layout_rules_hold():
    """storage, dataset, schema, the formats and warc packages import no stage, runtime, executor or CLI; the executor no
    stage; stages neither CLI nor executor; the report no stage module; curate.fasttext no stage, runtime, executor or CLI."""
    pkg = ROOT / "curate"
    files = {str(p.relative_to(ROOT).with_suffix("")).replace("/", ".").removesuffix(".__init__"): p for p in pkg.rglob("*.py")}
    stage_mods = {m for m in files if m.startswith(("curate.stages", "curate.dedup", "curate.decontam"))}

    def imports(mod: str) -> set[str]:
        return _imports(files[mod])

    runtime = {m for m in files if m == "curate.runtime" or m.startswith("curate.runtime.")}
    low_level = [
        "curate.storage",
        "curate.dataset",
        "curate.schema",
        "curate.stats",
        "curate.targets",
        "curate.registry",
        "curate.partitions",
    ]
    low_level += [m for m in files if m.startswith(("curate.formats", "curate.warc"))]
    for low in low_level:
        bad = {m for m in imports(low) if m in stage_mods or m in runtime or m in ("curate.executor", "curate.cli")}
        assert not bad, (low, bad)
    assert not {m for m in imports("curate.executor") if m in stage_mods or m in runtime}
    assert not {m for m in imports("curate.registry") if m.startswith("curate.") and not m.startswith("curate.errors")}  # lazily
    # the warc package reads files for the extract stage and knows nothing above it (``from curate import runtime`` included)
    upper = ("curate.stages", "curate.dedup", "curate.decontam", "curate.runtime", "curate.executor", "curate.cli")
    warc_mods = [m for m in files if m.startswith("curate.warc.")]
    assert "curate.warc.records" in warc_mods
    for mod in warc_mods:
        nodes = [n for n in ast.walk(ast.parse(files[mod].read_text())) if isinstance(n, ast.Import | ast.ImportFrom)]
        names = {a.name for n in nodes if isinstance(n, ast.Import) for a in n.names}
        froms = [n for n in nodes if isinstance(n, ast.ImportFrom) and n.module]
        names |= {n.module for n in froms} | {f"{n.module}.{a.name}" for n in froms for a in n.names}
        bad = {m for m in names if any(m == u or m.startswith(u + ".") for u in upper)}
        assert not bad, (mod, bad)
    for mod in stage_mods:
        bad = {m for m in imports(mod) if m in ("curate.cli", "curate.executor")}
        assert not bad, (mod, bad)
    assert not {m for r in files if r.startswith("curate.report.") for m in imports(r) if m in stage_mods}  # the report package
    assert "curate.stages.textcol" not in files and "curate.stages.inspect" not in files
    above = ("curate.stages", "curate.dedup", "curate.decontam", "curate.runtime", "curate.executor", "curate.cli")
    bad = {m for m in imports("curate.fasttext") if m in above or m.startswith(tuple(f"{a}." for a in above))}
    assert not bad, ("curate.fasttext", bad)


def test_no_module_is_a_monolith():
    """A newcomer reads one concern per module: none under curate/ is over ~600 lines."""
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in (ROOT / "curate").rglob("*.py")}
    big = {p: n for p, n in sizes.items() if n > 620}
    assert not big, big


def test_docs_tables_of_the_registries_are_current():
    """The stage, extractor, rule-set and format tables in docs/ are generated (python -m curate.catalog), never retyped."""
    r = subprocess.run([sys.executable, "-m", "curate.catalog", "--check"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    text = (ROOT / "docs" / "extending.md").read_text()
    from curate.registry import extractor_names

    assert all(f"`{n}`" in text for n in extractor_names()) and "`curate dedup fuzzy`" in text
