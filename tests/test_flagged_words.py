"""The opt-in flagged-words rule set of ``curate filter`` (issue 21): Data-Juicer's flagged-words
ratio and C4's bad-words page rule, with the word list given as a file."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.config import load_yaml
from curate.dataset import read_success
from curate.errors import CurateError
from curate.schema import BASE_SCHEMA
from curate.stages.filters import FilterConfig, FilterStage, default_config_path, known_rule_sets
from curate.stages.filters.flagged import FLAGGED_WORDS, dj_words
from curate.stages.filters.text import Doc

WORDS = "# flagged words (a test list)\nbadword\nNasty\n\nvery rude phrase\n"


@pytest.fixture
def word_list(tmp_path: Path) -> Path:
    p = tmp_path / "flagged.txt"
    p.write_text(WORDS, "utf-8")
    return p


def fails(text: str, word_list: Path, preset: str = "data_juicer", **over) -> str | None:
    th = {**FLAGGED_WORDS.thresholds(preset=preset), "words_file": str(word_list), **over}
    return FLAGGED_WORDS.check(Doc(text), th, {})


def filler(n: int) -> str:
    return " ".join(f"w{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}" for i in range(n))


def test_published_defaults():
    assert FLAGGED_WORDS.published == "data_juicer"
    assert FLAGGED_WORDS.defaults["max_ratio"] == 0.045  # Data-Juicer's flagged_words_filter
    assert FLAGGED_WORDS.presets["c4"]["max_ratio"] == 0 and FLAGGED_WORDS.presets["c4"]["match"] == "phrases"


def test_data_juicer_words():
    assert dj_words("Hello, WORLD!! 123abc x2 «quoted» — a\tb\nc") == ["hello", "world", "abc", "x", "quoted", "a", "b", "c"]


def test_ratio_just_passing_and_just_failing(word_list):
    # 1 flagged word in 23 is 0.0435 (kept); in 22 it is 0.0455 (dropped): Data-Juicer keeps ratio <= max_ratio
    assert fails("badword " + filler(22), word_list) is None
    assert fails("badword " + filler(21), word_list) == "ratio"
    assert fails("BADWORD! " + filler(21), word_list) == "ratio"  # lower-cased, punctuation stripped
    assert fails("nasty " + filler(21), word_list) == "ratio"  # the list is lower-cased too
    assert fails("badwords " + filler(21), word_list) is None  # whole words only
    assert fails("very rude phrase " + filler(19), word_list) is None  # a phrase never equals one word (as in Data-Juicer)
    assert fails("", word_list) is None
    assert fails("badword " + filler(21), word_list, max_ratio=None) is None  # off


def test_c4_any_flagged_word_or_phrase_drops_the_page(word_list):
    long = filler(5000)
    assert fails(long + " badword.", word_list, "c4") == "ratio"
    assert fails(long + "\nA very rude phrase here", word_list, "c4") == "ratio"
    assert fails(long + " very  rude phrase", word_list, "c4") is None  # C4's regex: the phrase as written
    assert fails(long + " badwords and xbadword", word_list, "c4") is None  # flanked by non-word characters only
    assert fails(long, word_list, "c4") is None
    # phrases with a ratio: a phrase counts its words
    assert fails("very rude phrase " + filler(60), word_list, "c4", max_ratio=0.045) == "ratio"
    assert fails("very rude phrase " + filler(70), word_list, "c4", max_ratio=0.045) is None


def test_opt_in_never_runs_by_default_and_changes_no_recorded_parameter():
    cfg = FilterConfig.from_mapping(load_yaml(default_config_path()), str(default_config_path()))
    assert cfg.opt_in_used() == []
    assert "flagged_words" not in json.dumps(FilterStage().params())
    assert "flagged_words" in known_rule_sets()


def config(tmp_path: Path, body: str) -> str:
    p = tmp_path / "filters.yaml"
    p.write_text(body, "utf-8")
    return str(p)


def test_config_errors(tmp_path, word_list):
    with pytest.raises(CurateError, match="needs its word list"):
        FilterStage(config=config(tmp_path, "default: [flagged_words]\n"))
    with pytest.raises(CurateError, match="no such word list file"):
        FilterStage(
            config=config(tmp_path, f"default: [flagged_words]\nthresholds: {{flagged_words: {{words_file: {tmp_path}/nope.txt}}}}\n")
        )
    with pytest.raises(CurateError, match="words_file must be a file path"):
        FilterStage(config=config(tmp_path, "default: [flagged_words]\nthresholds: {flagged_words: {words_file: 3}}\n"))
    with pytest.raises(CurateError, match="match must be one of words, phrases"):
        FilterStage(config=config(tmp_path, "default: [flagged_words]\nthresholds: {flagged_words: {match: regex}}\n"))
    bad = tmp_path / "bad.txt"
    bad.write_text("fine\n...\n", "utf-8")
    with pytest.raises(CurateError) as exc:
        FilterStage(config=config(tmp_path, f"default: [flagged_words]\nthresholds: {{flagged_words: {{words_file: {bad}}}}}\n"))
    assert f"{bad}:2: not a word or phrase" in str(exc.value)


def test_cli_with_a_config(tmp_path, run, word_list):
    good = "This page is about rivers and towns and the history of the region over many years. " * 3
    rows = [
        {"id": "d0", "text": good, "source": "cc/x", "url": None, "meta": None},
        {"id": "d1", "text": good + " badword", "source": "cc/x", "url": None, "meta": None},
        {"id": "d2", "text": "badword nasty badword", "source": "cc/x", "url": None, "meta": None},
        {"id": "d3", "text": "badword nasty badword", "source": "pile/Wikipedia", "url": None, "meta": None},
    ]
    (tmp_path / "in").mkdir()
    pq.write_table(pa.Table.from_pylist(rows, schema=BASE_SCHEMA), tmp_path / "in" / "part-00000.parquet")
    cfg = config(
        tmp_path, f"sources: {{'cc/*': [flagged_words]}}\ndefault: []\nthresholds: {{flagged_words: {{words_file: {word_list}}}}}\n"
    )
    out = tmp_path / "out"
    res = run("filter", "--in", tmp_path / "in", "--out", out, "--config", cfg, "--keep-rejected", "--workers", "1")
    assert "4 -> 3 docs" in res.stdout
    assert sorted(pd.read_parquet(out)["id"]) == ["d0", "d1", "d3"]
    assert pd.read_parquet(out / "_rejected")["reason"].tolist() == ["flagged_words:ratio"]
    rec = read_success(out)
    assert rec["counters"]["rules"] == {"flagged_words": {"ratio": 1}}
    params = json.loads((out / "_params.json").read_text())
    assert list(params["word_lists"]) == [str(word_list)] and len(params["word_lists"][str(word_list)]) == 64
    # C4's reading, from the command line's preset name for it in the config: any flagged word drops the page
    cfg_c4 = config(tmp_path, f"sources: {{'cc/*': [flagged_words]}}\ndefault: []\npresets: {{flagged_words: c4}}\n"
                              f"thresholds: {{flagged_words: {{words_file: {word_list}}}}}\n")  # fmt: skip
    res = run("filter", "--in", tmp_path / "in", "--out", tmp_path / "c4", "--config", cfg_c4, "--workers", "1")
    assert "4 -> 2 docs" in res.stdout
    # a changed list is a changed parameter: the output is not reused silently
    word_list.write_text(WORDS + "river\n", "utf-8")
    res = run("filter", "--in", tmp_path / "in", "--out", out, "--config", cfg, "--workers", "1", ok=False)
    assert res.exit_code != 0 and "Traceback" not in res.stderr
