"""curate report / curate stats: one HTML page over a real (small) pipeline run, numbers equal to the stats files.

A module fixture runs a small pipeline in a temporary directory (Pile-style sample files plus
planted documents, clean, langid, filter, CommonCrawl extract and quality, dedup, decontam,
tokenize, blend) and writes the report; the tests parse the page with html.parser.
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
from tests.conftest import SAMPLE, prose, write_jsonl_zst

SCRIPT = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'
EVAL_PASSAGE = json.loads((SAMPLE / "eval" / "lambada_like.jsonl").read_text().splitlines()[0])["text"]
GERMAN = (
    "Die Stadt liegt am Ufer des Flusses und ist seit dem Mittelalter ein wichtiger Handelsplatz. Im Sommer kommen viele "
    "Besucher, um die alte Kirche, das Rathaus und die engen Gassen der Altstadt zu sehen. Die Bewohner sind stolz auf "
    "ihre Geschichte und feiern jedes Jahr ein großes Fest mit Musik, Essen und Tanz auf dem Marktplatz."
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
    weights = {"pile/Wikipedia": 0.5, "pile/PubMed_Abstracts": 0.3, "pile/Pile-CC": 0.2}
    srcs = [{"name": n, "path": str(out / "tokenized" / n.replace("/", "_")), "weight": w} for n, w in weights.items()]
    cfg.write_text(yaml.safe_dump({"total_tokens": "auto", "seed": 1, "sources": srcs}))
    _invoke("--quiet", "blend", "--config", cfg, "--out", out / "blend", "--workers", 1)
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
        self._stack: list[str] = []
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
        if tag == "table":
            self._table = a.get("id")
            if self._table:
                self.rows[self._table] = []
        elif tag == "tr" and self._table:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table:
            self.rows[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
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
    for tid in ("funnel-table", "reasons-table", "sources-table", "languages-table", "quality-quality", "rules-filter", "dedup-table",
                "dedup-per-source", "decontam-decontam", "tokens-tokenized", "blend-blend"):  # fmt: skip
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
    assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;" in html
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
