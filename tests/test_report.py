"""curate report / curate stats: one HTML page over a real (small) pipeline run, numbers equal to the stats files.

A module fixture runs a small pipeline in a temporary directory (Pile-style sample files plus
planted documents, clean, langid, filter, CommonCrawl extract and quality, dedup, decontam,
tokenize, blend) and writes the report; the tests parse the page with html.parser. Planted:
a duplicate holding a <script>, a German document in Pile-CC, an evaluation passage, and a
source of German documents only (pile/EuroParl: langid removes all of it, and the blend,
run with --skip-missing, leaves it out), which the warnings at the top must name.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from curate.cli import cli
from curate.report import SECTIONS, collect, render, stats_lines
from curate.report.render import environment
from tests.conftest import SAMPLE, prose, write_jsonl_zst

SCRIPT = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'
EVAL_PASSAGE = json.loads((SAMPLE / "eval" / "lambada_like.jsonl").read_text().splitlines()[0])["text"]
GERMAN = (
    "Die Stadt liegt am Ufer des Flusses und ist seit dem Mittelalter ein wichtiger Handelsplatz. Im Sommer kommen viele "
    "Besucher, um die alte Kirche, das Rathaus und die engen Gassen der Altstadt zu sehen. Die Bewohner sind stolz auf "
    "ihre Geschichte und feiern jedes Jahr ein großes Fest mit Musik, Essen und Tanz auf dem Marktplatz."
)
GERMAN_2 = (
    "Der Verein wurde vor hundert Jahren gegründet und hat heute mehr als dreitausend Mitglieder in der ganzen Region. "
    "Jeden Samstag treffen sich die Kinder auf dem Sportplatz hinter der Schule, während die Eltern im Vereinsheim Kaffee "
    "trinken und über die nächsten Spiele sprechen. Im Winter wird in der großen Halle neben dem Bahnhof trainiert."
)
WARC = next((SAMPLE / "cc" / "crawl-data" / "CC-MAIN-2020-50").rglob("*.warc.gz"))


def _invoke(*args: object) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, f"curate {' '.join(map(str, args))}: {result.stdout}\n{result.stderr}"
    return result.stdout


def _planted() -> list[dict]:
    dup = f"{SCRIPT} {prose(9001, 150)}"
    contaminated = f"{prose(9002, 120)} {EVAL_PASSAGE} {prose(9003, 120)}"
    return [
        {"text": dup, "meta": {"pile_set_name": "Pile-CC"}},
        {"text": dup, "meta": {"pile_set_name": "Pile-CC"}},  # exact duplicate: rejected by dedup, with its <script>
        {"text": GERMAN, "meta": {"pile_set_name": "Pile-CC"}},  # rejected by langid (keep en)
        {"text": contaminated, "meta": {"pile_set_name": "Pile-CC"}},  # cut by decontam
        *({"text": prose(9100 + i, 200), "meta": {"pile_set_name": "Pile-CC"}} for i in range(6)),
        {"text": GERMAN_2, "meta": {"pile_set_name": "EuroParl"}},  # a source langid removes entirely
        {"text": f"{GERMAN} {GERMAN_2}", "meta": {"pile_set_name": "EuroParl"}},
    ]


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("report")
    out = root / "out"
    inp = root / "pile_in"
    inp.mkdir()
    for f in sorted((SAMPLE / "pile" / "train").glob("*.jsonl.zst")):
        shutil.copy(f, inp / f.name)
    write_jsonl_zst(inp / "zz_planted.jsonl.zst", _planted())
    _invoke("--quiet", "download", "pile", "--dataset", inp, "--max-docs", 12, "--shard-docs", 40, "--out", out / "pile", "--keep-rejected")
    _invoke("--quiet", "clean", "--in", out / "pile", "--out", out / "clean", "--workers", 1, "--keep-rejected")
    _invoke("--quiet", "langid", "--in", out / "clean", "--out", out / "langid", "--keep", "en", "--workers", 1, "--keep-rejected")
    _invoke("--quiet", "filter", "--in", out / "langid", "--out", out / "filter", "--only-sources", "pile/OpenWebText2", "--workers", 1,
            "--keep-rejected")  # fmt: skip
    _invoke("--quiet", "extract", "--in", WARC, "--out", out / "cc_extract", "--workers", 1, "--keep-rejected")
    model = out / "quality_model"
    _invoke("--quiet", "quality", "train", "--pos", out / "clean", "--pos-sources", "pile/Wikipedia,pile/OpenWebText2,pile/BookCorpus2",
            "--neg", out / "cc_extract", "--out", model, "--epoch", 5, "--dim", 16, "--bucket", 20000, "--threads", 1)  # fmt: skip
    _invoke("--quiet", "quality", "score", "--in", out / "cc_extract", "--out", out / "quality", "--model", model,
            "--mode", "threshold", "--threshold", 0.5, "--workers", 1, "--keep-rejected")  # fmt: skip
    _invoke("--quiet", "dedup", "exact", "--in", out / "filter", "--in", out / "quality", "--out", out / "dedup",
            "--priority", "pile/*,cc/*", "--workers", 1, "--keep-rejected")  # fmt: skip
    _invoke("--quiet", "decontam", "--in", out / "dedup", "--out", out / "decontam", "--eval", SAMPLE / "eval" / "lambada_like.jsonl",
            "--eval", SAMPLE / "eval" / "qa_like.jsonl", "--eval-field", "qa_like=question,answer", "--workers", 1, "--keep-rejected")  # fmt: skip
    _invoke("--quiet", "tokenize", "--in", out / "decontam", "--out", out / "tokenized", "--per-source", "--workers", 1)
    cfg = root / "blend.yaml"
    weights = {"pile/Wikipedia": 0.5, "pile/PubMed_Abstracts": 0.3, "pile/Pile-CC": 0.2, "pile/EuroParl": 0.1}
    srcs = [{"name": n, "path": str(out / "tokenized" / n.replace("/", "_")), "weight": w} for n, w in weights.items()]
    cfg.write_text(yaml.safe_dump({"total_tokens": "auto", "seed": 1, "sources": srcs}))
    _invoke("--quiet", "blend", "--config", cfg, "--out", out / "blend", "--workers", 1, "--skip-missing")
    page = out / "report.html"
    stdout = _invoke("report", out, "--out", page, "--samples", 3)
    return {"root": root, "out": out, "page": page, "html": page.read_text(encoding="utf-8"), "stdout": stdout}


class Page(HTMLParser):
    """What the tests look at: ids, images, numbers with provenance, external references, text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: list[str] = []
        self.imgs: list[dict[str, str]] = []
        self.numbers: list[dict[str, str]] = []
        self.refs: list[tuple[str, str, str]] = []
        self.tags: set[str] = set()
        self.rows: dict[str, list[list[str]]] = {}
        self.warnings: list[dict[str, str]] = []  # data-warning/-stage/-source attributes, and "text"
        self.docs: list[str] = []  # the text of each rejected sample, as a browser shows it
        self._stack: list[str] = []
        self._warning: list[str] | None = None
        self._depth = 0
        self._doc: list[str] | None = None
        self._table: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.add(tag)
        if "id" in a:
            self.ids.append(a["id"])
        if tag == "img":
            self.imgs.append(a)
        if "data-file" in a:
            self.numbers.append(a)
        for k in ("src", "href", "action", "srcset", "poster", "data"):
            if k in a:
                self.refs.append((tag, k, a[k]))
        if "data-warning" in a:
            self.warnings.append(a)
            self._warning, self._depth = [], 0
        elif tag == "div" and self._warning is not None:
            self._depth += 1
        if tag == "pre" and "doc" in a.get("class", "").split():
            self._doc = []
        if tag == "table":
            self._table = a.get("id")
            if self._table:
                self.rows[self._table] = []
        elif tag == "tr" and self._table:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self._warning is not None:
            if self._depth == 0:
                self.warnings[-1]["text"] = " ".join("".join(self._warning).split())
                self._warning = None
            self._depth -= 1
        if tag == "pre" and self._doc is not None:
            self.docs.append("".join(self._doc))
            self._doc = None
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table:
            self.rows[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._warning is not None:
            self._warning.append(data)
        if self._doc is not None:
            self._doc.append(data)
        if self._cell is not None:
            self._cell.append(data)


@pytest.fixture(scope="module")
def page(pipeline: dict) -> Page:
    return Page(pipeline["html"])


def _walk(obj: object, keys: list) -> object:
    for k in keys:
        obj = obj[k]  # type: ignore[index]
    return obj


def test_cli_prints_the_summary_and_path(pipeline: dict) -> None:
    assert pipeline["page"].stat().st_size > 50_000
    lines = pipeline["stdout"].splitlines()
    assert lines[0].startswith("report: 11 stages (pile, cc_extract, clean, ")
    assert f"output: {pipeline['page']}" in pipeline["stdout"]


def test_every_section_and_chart(pipeline: dict, page: Page) -> None:
    for sid, _ in SECTIONS:
        assert sid in page.ids, f"section {sid} missing"
    charts = [
        "chart-funnel",
        "chart-sources",
        "chart-languages",
        "chart-quality",
        "chart-rules",
        "chart-dedup",
        "chart-decontam",
        "chart-blend",
    ]
    assert [i["id"] for i in page.imgs] == charts
    for img in page.imgs:
        assert img["src"].startswith("data:image/png;base64,")
        png = base64.b64decode(img["src"].split(",", 1)[1])
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5_000
        assert img["alt"]
    assert f", {len(charts)} charts," in pipeline["stdout"]
    for tid in ("funnel-table", "reasons-table", "sources-table", "languages-table", "quality-quality", "quality-model-quality_model",
                "rules-filter", "dedup-table", "dedup-per-source", "decontam-decontam", "tokens-tokenized", "blend-blend"):  # fmt: skip
        assert page.rows.get(tid), f"table {tid} missing or empty"


def test_the_page_loads_nothing_from_outside(pipeline: dict, page: Page) -> None:
    for tag, attr, value in page.refs:
        assert value.startswith(("data:", "#")), f"<{tag} {attr}={value[:60]!r}> loads an external resource"
    assert not page.tags & {"script", "link", "iframe", "object", "embed", "base", "frame", "svg"}
    html = pipeline["html"]
    assert "@import" not in html and "url(" not in html.split("</style>")[0]
    assert "http-equiv" not in html


def test_numbers_equal_the_stats_files(pipeline: dict, page: Page) -> None:
    cache: dict[str, object] = {}
    checked = set()
    for n in page.numbers:
        f = n["data-file"]
        if f not in cache:
            cache[f] = json.loads(Path(f).read_text())
        keys = json.loads(n["data-key"])
        assert _walk(cache[f], keys) == json.loads(n["data-value"]), f"{f} {keys}"
        checked.add((Path(f).parent.name, tuple(keys)))
    assert len(page.numbers) > 300
    out = pipeline["out"]
    # every stage's documents in and out, from its own _SUCCESS, are in the page
    for d in ("pile", "clean", "langid", "filter", "cc_extract", "quality", "dedup", "decontam"):
        rec = json.loads((out / d / "_SUCCESS").read_text())
        assert (d, ("docs_in",)) in checked and (d, ("docs_out",)) in checked, d
        for src in rec["per_source"]:
            assert (d, ("per_source", src, "docs_out")) in checked, (d, src)
        for reason in rec["rejected"]:
            assert (d, ("rejected", reason, "docs")) in checked, (d, reason)
    # tokens, blend rows, rules, languages, decontamination, quality buckets
    tok = json.loads((out / "tokenized" / "_SUCCESS").read_text())
    assert ("tokenized", ("tokens",)) in checked
    assert all(("tokenized", ("per_source", s, "tokens")) in checked for s in tok["per_source"])
    blend = json.loads((out / "blend" / "_SUCCESS").read_text())
    for i in range(len(blend["rows"])):
        for k in ("tokens_available", "weight", "epochs", "tokens_taken"):
            assert ("blend", ("rows", i, k)) in checked
    filt = json.loads((out / "filter" / "_SUCCESS").read_text())
    assert filt["counters"]["rules"], "the filter stage should have rejected something"
    for rs, rules in filt["counters"]["rules"].items():
        assert all(("filter", ("counters", "rules", rs, r)) in checked for r in rules)
    lang = json.loads((out / "langid" / "_SUCCESS").read_text())["counters"]["lang"]
    assert all(("langid", ("counters", "lang", lg)) in checked for lg in lang)
    dec = json.loads((out / "decontam" / "_SUCCESS").read_text())["counters"]["decontam_per_eval_set"]
    assert dec["lambada_like"]["docs_contaminated"] >= 1
    assert ("decontam", ("counters", "decontam_per_eval_set", "lambada_like", "docs_contaminated")) in checked
    assert any(k[:3] == ("counters", "score_hist", "all") for d, k in checked if d == "quality")
    assert ("dedup", ("dedup", "clusters")) in checked


def test_summary_and_derived_numbers(pipeline: dict, page: Page) -> None:
    out = pipeline["out"]
    pile = json.loads((out / "pile" / "_SUCCESS").read_text())
    ext = json.loads((out / "cc_extract" / "_SUCCESS").read_text())
    assert f"{pile['docs_in'] + ext['docs_in']:,}" in pipeline["html"]  # documents entering the pipeline
    funnel = {r[0]: r for r in page.rows["funnel-table"][1:]}
    dedup = json.loads((out / "dedup" / "_SUCCESS").read_text())
    assert funnel["dedup"][5] == f"{100 * dedup['docs_out'] / dedup['docs_in']:.1f}%"
    blend = json.loads((out / "blend" / "_SUCCESS").read_text())
    total = page.rows["blend-blend"][-1]
    assert total[0] == "total" and total[5] == f"{sum(r['tokens_taken'] for r in blend['rows']):,}"


def test_stages_in_pipeline_order(pipeline: dict, page: Page) -> None:
    order = [r[0] for r in page.rows["funnel-table"][1:]]
    assert order.index("pile") < order.index("clean") < order.index("langid") < order.index("filter") < order.index("dedup")
    assert order.index("cc_extract") < order.index("quality") < order.index("dedup") < order.index("decontam")
    assert order.index("decontam") < order.index("tokenized") < order.index("blend")
    reads = {r[0]: r[2] for r in page.rows["funnel-table"][1:]}
    assert reads["dedup"] == "filter, quality" and reads["blend"] == "tokenized"
    # the inputs graph orders them, not the finishing times: make an early stage the newest
    clean = pipeline["out"] / "clean" / "_SUCCESS"
    st = clean.stat()
    try:
        os.utime(clean, (time.time() + 100, time.time() + 100))
        labels = [s.label for s in collect([pipeline["out"]]).stages]
        assert labels.index("clean") < labels.index("langid") < labels.index("filter")
    finally:
        os.utime(clean, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_rejected_samples_are_escaped(pipeline: dict, page: Page) -> None:
    html = pipeline["html"]
    assert "<script" not in html and "<img src=x" not in html
    assert "script" not in page.tags and all(img["id"].startswith("chart-") for img in page.imgs)
    assert any(SCRIPT in doc for doc in page.docs)  # shown as the text it is
    samples = html[html.index('id="rejected"') : html.index('id="stages"')]
    assert '<span class="reason">exact_dup</span>' in samples
    assert '<span class="reason">lang</span>' in samples and "Die Stadt liegt" in samples
    assert '<span class="reason">quality</span>' in samples


def test_samples_per_reason_and_stage_dirs(pipeline: dict) -> None:
    out = pipeline["out"]
    run = collect([out / "langid", out / "clean", out / "cc_extract"])
    assert [s.label for s in run.stages] == ["cc_extract", "clean", "langid"]
    html, charts = render(run, samples=1)
    samples = html[html.index('id="rejected"') : html.index('id="stages"')]
    langid = samples[samples.index("<summary>langid") :]
    assert langid.count('<span class="reason">lang</span>') == 1
    ext = json.loads((out / "cc_extract" / "_SUCCESS").read_text())
    section = samples[samples.index("<summary>cc_extract") : samples.index("<summary>langid")]
    assert section.count('<div class="sample">') == len(ext["rejected"])  # one per reason
    assert charts == 3  # funnel, sources, languages


def test_stats_prints_one_stage(pipeline: dict) -> None:
    out = pipeline["out"]
    rec = json.loads((out / "dedup" / "_SUCCESS").read_text())
    text = _invoke("stats", out / "dedup")
    lines = text.splitlines()
    assert lines[0].startswith(f"dedup_exact: {out / 'dedup'}, {rec['shards']} shards")
    head = next(i for i, line in enumerate(lines) if line.startswith("source "))
    rule = lines[head + 1]
    assert set(rule.replace(" ", "")) == {"-"}
    # columns line up: every cell of the table ends where its rule ends (numbers are right-aligned)
    ends = [i for i, c in enumerate(rule) if c == "-" and (i + 1 == len(rule) or rule[i + 1] == " ")]
    for line in lines[head : head + 3 + len(rec["per_source"]) + 1]:
        if set(line.replace(" ", "")) == {"-"}:
            continue
        for e in ends[1:]:
            assert line[e] != " ", (line, e)
    total = next(line for line in lines if line.startswith("total "))
    assert total.split()[1:3] == [f"{rec['docs_in']:,}", f"{rec['docs_out']:,}"]
    assert any(line.startswith("exact_dup ") and f" {rec['rejected']['exact_dup']['docs']:,} " in line for line in lines)
    assert any(line.startswith("dedup: ") and "clusters" in line for line in lines)
    assert "counters:" in text or not rec["counters"]
    blend = _invoke("stats", out / "blend")
    assert "tokens available" in blend and "pile/Wikipedia" in blend
    tok = _invoke("stats", out / "tokenized")
    assert f"{json.loads((out / 'tokenized' / '_SUCCESS').read_text())['tokens']:,} tokens" in tok
    lang = stats_lines(out / "langid")
    assert any(line.startswith("en ") for line in lang)


def test_errors_are_one_line(pipeline: dict, tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(cli, ["report", str(tmp_path / "nope"), "--out", str(tmp_path / "r.html")])
    assert missing.exit_code == 1 and "no such file or directory" in missing.stderr and len(missing.stderr.splitlines()) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    r = runner.invoke(cli, ["report", str(empty), "--out", str(tmp_path / "r.html")])
    assert r.exit_code == 1 and "no finished stage" in r.stderr
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    (unfinished / "_params.json").write_text("{}")
    r = runner.invoke(cli, ["stats", str(unfinished)])
    assert r.exit_code == 1 and "has not finished" in r.stderr
    r = runner.invoke(cli, ["report", str(pipeline["out"] / "clean"), "--out", str(tmp_path)])
    assert r.exit_code == 1 and "is a directory" in r.stderr
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "_SUCCESS").write_text("{not json")
    r = runner.invoke(cli, ["report", str(bad), "--out", str(tmp_path / "r.html")])
    assert r.exit_code == 1 and "_SUCCESS: not valid JSON" in r.stderr
    assert not (tmp_path / "r.html").exists()


# --------------------------------------------------------------------------- warnings


def _warned(page: Page, kind: str) -> dict[tuple[str, str], str]:
    """(stage, source) -> the warning's text, for the warnings of one kind."""
    return {(w["data-stage"], w["data-source"]): w["text"] for w in page.warnings if w["data-warning"] == kind}


def test_warnings_come_first_and_say_what_to_do(pipeline: dict, page: Page) -> None:
    html = pipeline["html"]
    assert html.index('id="warnings"') < html.index('id="summary"') < html.index('id="funnel"')
    assert page.warnings and all("What to do:" in w["text"] for w in page.warnings)
    assert not _warned(page, "stale")  # nothing was re-run


def test_warns_about_a_source_filtered_away(pipeline: dict, page: Page) -> None:
    out = pipeline["out"]
    euro = json.loads((out / "langid" / "_SUCCESS").read_text())["per_source"]["pile/EuroParl"]
    assert euro["docs_in"] == 2 and euro["docs_out"] == 0  # the planted condition, as langid recorded it
    lost = _warned(page, "lost_source")
    assert set(lost) == {("langid", "pile/EuroParl")}
    text = lost[("langid", "pile/EuroParl")]
    assert "pile/EuroParl reaches decontam with no documents" in text and "removed all 2 of its documents: lang 2" in text
    blend = json.loads((out / "blend" / "_SUCCESS").read_text())
    assert blend["skipped_sources"] == ["pile/EuroParl"]
    skipped = _warned(page, "blend_skipped")
    assert set(skipped) == {("blend", "pile/EuroParl")} and "blend config" in skipped[("blend", "pile/EuroParl")]


def test_warns_about_stages_removing_most_of_a_source(pipeline: dict, page: Page) -> None:
    """Every (stage, source) whose stats say more than half was removed is named with its share (a source removed
    entirely is named once, by the lost-source warning)."""
    out = pipeline["out"]
    expected = {}
    for f in out.glob("*/_SUCCESS"):
        rec = json.loads(f.read_text())
        for src, c in rec.get("per_source", {}).items() if "docs_in" in rec else ():
            gone = sum(c["rejected"].values())
            if c["docs_in"] and gone / c["docs_in"] > 0.5 and c["docs_out"] > 0:
                expected[(f.parent.name, src)] = f"{100 * gone / c['docs_in']:.1f}%"
    assert ("langid", "pile/Github") in expected  # code is not English: langid keeps 1 of 12
    heavy = _warned(page, "heavy_removal")
    assert set(heavy) == set(expected)
    for (stage, src), share in expected.items():
        assert f"{stage} removed {share} of {src}" in heavy[(stage, src)]


def test_warns_about_each_condition_in_a_pipeline_built_for_it(tmp_path: Path) -> None:
    """pile/Deutsch (German only) is filtered away, pile/Mixed loses 3 of 4 documents; then clean is re-run with
    other parameters and --overwrite, and langid (not re-run) is stale until it is run again."""
    rows = [
        *({"text": prose(7000 + i, 150), "meta": {"pile_set_name": "Wikipedia"}} for i in range(3)),
        {"text": prose(7100, 150), "meta": {"pile_set_name": "Mixed"}},
        *({"text": t, "meta": {"pile_set_name": "Mixed"}} for t in (GERMAN, GERMAN_2, f"{GERMAN_2} {GERMAN}")),
        *({"text": t, "meta": {"pile_set_name": "Deutsch"}} for t in (GERMAN, GERMAN_2)),
    ]
    write_jsonl_zst(tmp_path / "in" / "part.jsonl.zst", rows)
    out = tmp_path / "out"
    clean = ["--quiet", "clean", "--in", out / "pile", "--out", out / "clean", "--workers", 1]
    langid = ["--quiet", "langid", "--in", out / "clean", "--out", out / "langid", "--workers", 1, "--keep-rejected"]
    _invoke("--quiet", "download", "pile", "--dataset", tmp_path / "in", "--out", out / "pile")
    _invoke(*clean)
    _invoke(*langid)

    def report() -> Page:
        _invoke("report", out, "--out", tmp_path / "report.html")
        return Page((tmp_path / "report.html").read_text(encoding="utf-8"))

    page = report()
    assert not _warned(page, "stale")
    lost = _warned(page, "lost_source")
    assert set(lost) == {("langid", "pile/Deutsch")} and "removed all 2 of its documents" in lost[("langid", "pile/Deutsch")]
    heavy = _warned(page, "heavy_removal")
    assert set(heavy) == {("langid", "pile/Mixed")} and "langid removed 75.0% of pile/Mixed" in heavy[("langid", "pile/Mixed")]

    _invoke(*clean, "--max-blank-lines", 1, "--overwrite")  # upstream re-run with other parameters; langid left as it was
    recorded = json.loads((out / "langid" / "_SUCCESS").read_text())["params"]["input_fingerprints"]
    assert recorded != [json.loads((out / "clean" / "_SUCCESS").read_text())["fingerprint"]]
    stale = _warned(report(), "stale")
    assert set(stale) == {("langid", "")}
    assert "langid is stale: clean changed after langid read it" in stale[("langid", "")] and "Re-run langid" in stale[("langid", "")]

    _invoke(*langid)  # the same command: it sees its changed input and starts again
    assert not _warned(report(), "stale")


# --------------------------------------------------------------------------- what stages declare


HOSTILE = '</pre><script>alert(1)</script>"><img src=x onerror=alert(2)>\x00\x1b&amp;'


def _stage_dir(root: Path, name: str, record: dict, rejected: dict | None = None) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = root / name
    d.mkdir(parents=True)
    (d / "_SUCCESS").write_text(json.dumps(record))
    if rejected is not None:
        (d / "_rejected").mkdir()
        pq.write_table(pa.table(rejected), d / "_rejected" / "part-00000.parquet")
    return d


def test_a_new_stage_without_declarations_is_reported(tmp_path: Path) -> None:
    """A stage the report knows nothing of (no sections): funnel, per-source tables, samples and its counters;
    hostile text (document, source, id) is shown as text."""
    src = 'web/"><b>bold</b>'
    rec = {"stage": "pii", "title": "pii", "sections": {}, "summary": ["pii: 5 -> 3 docs", "  output: x", "  emails found: 3"],
           "docs_in": 5, "docs_out": 3, "bytes_in": 500, "bytes_out": 300, "rejected": {"pii_email": {"docs": 2, "bytes": 200}},
           "per_source": {src: {"docs_in": 5, "docs_out": 3, "bytes_in": 500, "bytes_out": 300, "rejected": {"pii_email": 2}}},
           "counters": {"pii": {"email": 3, "phone": 1}}, "params": {"inputs": []}, "wall_seconds": 0.5}  # fmt: skip
    hostile_id = '"><img src=x onerror=alert(3)>'
    d = _stage_dir(tmp_path, "pii", rec, {"id": [hostile_id, "b"], "text": [HOSTILE, "mail me at a@b.c"], "source": [src, src],
                                          "reason": ["pii_email", "pii_email"]})  # fmt: skip
    html, charts = render(collect([d]), samples=2)
    page = Page(html)
    funnel = {r[0]: r for r in page.rows["funnel-table"][1:]}
    assert funnel["pii"][3:6] == ["5", "3", "60.0%"]
    assert page.rows["sources-table"][1][:3] == [src, "5", "3"]
    assert page.rows["per-source-pii"][1][:3] == [src, "5", "3"]
    assert ["pii.email", "3"] in page.rows["counters-pii"] and ["pii.phone", "1"] in page.rows["counters-pii"]
    assert charts == 2  # funnel and sources
    # hostile text: no markup of its own reaches the page, and a browser shows exactly the text (control characters as U+FFFD)
    assert "<script" not in html and "<img src=x" not in html and "<b>bold" not in html
    assert "script" not in page.tags and all(img["id"].startswith("chart-") for img in page.imgs)
    assert HOSTILE.replace("\x00", "\ufffd").replace("\x1b", "\ufffd") in page.docs
    assert hostile_id in html.replace("&#34;", '"').replace("&gt;", ">").replace("&lt;", "<")  # the id, escaped
    assert not page.warnings  # 40% removed: nothing to warn about


def test_sections_come_from_declarations_not_counter_shapes(tmp_path: Path) -> None:
    rec = {"stage": "lid2", "title": "lid2", "sections": {"languages": "counters.by_language", "scripts": "counters.scripts"},
           "docs_in": 12, "docs_out": 12, "bytes_in": 10, "bytes_out": 10, "rejected": {}, "per_source": {}, "params": {},
           "counters": {"by_language": {"fr": 5, "en": 7}, "lang": {"de": 99}, "scripts": {"Latn": 12}}}  # fmt: skip
    page = Page(render(collect([_stage_dir(tmp_path, "lid2", rec)]))[0])
    assert [r[:2] for r in page.rows["languages-table"][1:]] == [["en", "7"], ["fr", "5"]]
    keys = {tuple(json.loads(n["data-key"])) for n in page.numbers}
    assert ("counters", "by_language", "en") in keys and not any(k[:2] == ("counters", "lang") for k in keys)
    assert page.rows["section-scripts-lid2"][1] == ["Latn", "12"]  # a section this page does not draw: listed in the details
    # a record that declares something else is not read for languages, whatever its counters look like
    rec["sections"] = {"scripts": "counters.scripts"}
    rec["stage"] = "langid"  # the fallback by name is only for records that declare nothing
    (tmp_path / "lid2" / "_SUCCESS").write_text(json.dumps(rec))
    page = Page(render(collect([tmp_path / "lid2"]))[0])
    assert "languages-table" not in page.rows


def test_records_without_declarations_fall_back_by_stage_name(pipeline: dict, tmp_path: Path) -> None:
    out = pipeline["out"]
    for d in ("langid", "filter", "quality", "quality_model", "dedup", "decontam", "tokenized", "blend"):
        rec = json.loads((out / d / "_SUCCESS").read_text())
        rec.pop("sections", None)
        rec.pop("title", None)
        (tmp_path / d).mkdir()
        (tmp_path / d / "_SUCCESS").write_text(json.dumps(rec))
    page = Page(render(collect([tmp_path]), samples=0)[0])
    for tid in ("languages-table", "rules-filter", "quality-quality", "quality-model-quality_model", "dedup-table", "decontam-decontam",
                "tokens-tokenized", "blend-blend"):  # fmt: skip
        assert page.rows.get(tid), tid


def test_the_template_escapes_everything() -> None:
    import curate.report

    assert environment().autoescape is True
    for f in Path(curate.report.__file__).parent.rglob("*"):
        if f.suffix in (".py", ".j2"):
            text = f.read_text().replace(" ", "")
            assert "|safe" not in text and "Markup(" not in text and "html.escape" not in text and "autoescapefalse" not in text, f


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed (Debian: apt-get install chromium; .ci/run does it)")
def test_renders_in_headless_chromium(pipeline: dict, tmp_path: Path) -> None:
    from PIL import Image

    shot = tmp_path / "report.png"
    profile = tmp_path / "profile"
    profile.mkdir()
    cmd = [
        _chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
        f"--user-data-dir={profile}", f"--screenshot={shot}", "--window-size=1280,4000", pipeline["page"].resolve().as_uri(),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert shot.exists(), f"chromium wrote no screenshot (exit {proc.returncode}): {proc.stderr[-800:]}"
    img = Image.open(shot).convert("RGB")
    assert img.size == (1280, 4000)
    small = img.resize((128, 400))
    colors = small.getcolors(maxcolors=1 << 16) or []
    assert len(colors) > 50, "the page rendered (almost) blank"
    white = sum(n for n, c in colors if min(c) > 245)
    assert white < 0.9 * 128 * 400
    # the dark header band and the charts are there: some pixels are dark, some are the chart blue
    px = np.asarray(small, dtype=np.int16).reshape(-1, 3)
    assert int((px.max(axis=1) < 60).sum()) > 100
    blue = np.abs(px - np.array([0x4C, 0x78, 0xA8])).max(axis=1) < 25  # the charts' "kept" colour
    assert int(blue.sum()) > 20
