"""Heuristic filters: every rule just passing and just failing its published threshold (in the
published presets, and in datatrove's where they differ), the word splitter against spaCy's
output, per-source rule choice, counters, bad input. The presets' published edge cases are in
tests/test_filter_presets.py."""

from __future__ import annotations

import itertools
import json
import math
import signal
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.config import load_yaml
from curate.dataset import read_success
from curate.errors import CurateError
from curate.schema import BASE_SCHEMA
from curate.stages.filters import FilterConfig, default_config_path, known_rule_sets
from curate.stages.filters.c4 import PUNKT_ENDS, count_sentences
from curate.stages.filters.text import Doc, words
from tests.conftest import prose, write_raw_shard

# --------------------------------------------------------------------------- helpers


def distinct_words(n: int, length: int = 5) -> list[str]:
    """``n`` different lower-case words of ``length`` letters (no stop words, no repeats)."""
    letters = "bcdfghjklmnpqrstvwxz"
    out = ["".join(p) for p in itertools.islice(itertools.product(letters, repeat=length), n)]
    assert len(out) == n
    return out


def pad_to(text: str, total: int, sep: str = " ") -> str:
    """``text`` followed by distinct filler words, exactly ``total`` characters long."""
    need = total - len(text)
    assert need >= 0
    filler: list[str] = []
    fill = distinct_words(need // 6 + 2, 5)
    used = 0
    for w in fill:
        if need - used <= 11:  # the last word takes the remainder (at least 5 letters)
            break
        filler.append(w)
        used += len(w) + 1
    last = need - used - 1
    if last > 0:
        filler.append(("zq" * 10)[:last] if last < 6 else "y" * last)
    out = text + sep + " ".join(filler) if filler else text
    out = out[:total] if len(out) > total else out + "x" * (total - len(out))
    assert len(out) == total
    return out


# what defines a rule set's reading rather than turning a rule on or off
DEFINITION_KEYS = ("short_line_length", "line_punct_exclude_zero", "remove_citations", "remove_lines", "words_after_citations")


def only(rule_set: str, *keys: str, preset: str | None = None) -> dict:
    """A preset's thresholds (default: the published one) with every rule off except ``keys``."""
    rs = known_rule_sets()[rule_set]
    th = {}
    for k, v in rs.thresholds(preset=preset).items():
        if k in keys or isinstance(v, (list, str)) or k in DEFINITION_KEYS:
            th[k] = v
        else:
            th[k] = False if isinstance(v, bool) else None
    return th


def fails(rule_set: str, text: str, th: dict | None = None, preset: str | None = None) -> str | None:
    rs = known_rule_sets()[rule_set]
    return rs.check(Doc(text), th if th is not None else rs.thresholds(preset=preset), {})


BOTH = pytest.mark.parametrize("preset", ["paper", "datatrove"])


# --------------------------------------------------------------------------- word splitting


@pytest.mark.parametrize(
    "text,expected",
    [  # what spaCy's blank English tokenizer (datatrove's word splitter) gives
        ("Hello, world! Don't you think it's great?", ["Hello", ",", "world", "!", "Do", "n't", "you", "think", "it", "'s", "great", "?"]),
        (
            "U.S. policy e.g. Mr. Smith paid $100.50 (about 100%)",
            ["U.S.", "policy", "e.g.", "Mr.", "Smith", "paid", "$", "100.50", "(", "about", "100", "%", ")"],
        ),
        (
            "on 2020-01-01 for COVID-19 well-known e-mail x/y.",
            ["on", "2020", "-", "01", "-", "01", "for", "COVID-19", "well", "-", "known", "e", "-", "mail", "x", "/", "y."],
        ),
        (
            'He said "hi." Then left. USA. ok.Next 10km 1,000 a,b',
            ["He", "said", '"', "hi", ".", '"', "Then", "left", ".", "USA", ".", "ok", ".", "Next", "10", "km", "1,000", "a", ",", "b"],
        ),
        (
            "__init__ /usr/bin/env resource.</p --no cannot the id of it",
            ["_", "_", "init", "_", "_", "/usr", "/", "bin", "/", "env", "resource.</p", "--no", "can", "not", "the", "i", "d", "of", "it"],
        ),
        (
            "--secret-id x me--you see https://www.python.org/downloads/. ssl.SSLSocket.getpeercert",
            ["--secret", "-", "id", "x", "me", "--", "you", "see", "https://www.python.org/downloads/.", "ssl.SSLSocket.getpeercert"],
        ),
        (
            "(figure 8): :) and/or «Bonjour» ’tis 5%-10%",
            ["(", "figure", "8)", ":", ":)", "and/or", "«", "Bonjour", "»", "’", "tis", "5%-10", "%"],
        ),
    ],
)
def test_words_follow_spacy(text, expected):
    assert words(text) == expected


def test_words_no_catastrophic_backtracking():
    def alarm(*_):
        raise TimeoutError("word splitting took more than 5 s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(5)
    try:
        toks = words("   #        |" + "_" * 3000 + " range on x axis\n" + "a" * 200_000 + "." + "-" * 5000)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert toks[:3] == ["#", "|", "_"] and toks.count("_") == 3000


def test_sentences_like_spacy_sentencizer():
    assert count_sentences("This is one. This is two! Is this three? Mr. Smith went to Washington. U.S. is big.") == 5
    assert count_sentences('He said "hi." Then he left.') == 2
    assert count_sentences("No end mark here") == 1
    assert count_sentences("") == 0
    # spaCy's sentence-final marks include the ideographic full stop; Punkt's English ones are . ? ! only
    assert count_sentences("It is one。 It is two。") == 2
    assert count_sentences("It is one。 It is two。", PUNKT_ENDS) == 1
    assert count_sentences("One here. Two here! Three here?", PUNKT_ENDS) == 3


# --------------------------------------------------------------------------- Gopher quality


@BOTH
def test_gopher_word_count_bounds(preset):
    th = only("gopher_quality", "min_words", "max_words", preset=preset)
    ws = distinct_words(100_001)
    assert fails("gopher_quality", " ".join(ws[:50]), th) is None
    assert fails("gopher_quality", " ".join(ws[:49]), th) == "word_count"
    assert fails("gopher_quality", " ".join(ws[:100_000]), th) is None
    assert fails("gopher_quality", " ".join(ws), th) == "word_count"
    # datatrove leaves tokens made only of its punctuation out of the count; whitespace words are words
    assert fails("gopher_quality", " ".join(ws[:49]) + " , . !", th) == ("word_count" if preset == "datatrove" else None)
    assert fails("gopher_quality", " ".join(ws[:49]) + ".", th) == "word_count"  # attached: no word in either reading


@BOTH
def test_gopher_mean_word_length_bounds(preset):
    th = only("gopher_quality", "min_mean_word_length", "max_mean_word_length", preset=preset)
    assert fails("gopher_quality", " ".join(["the"] * 30 + ["and"] * 30), th) is None  # mean 3.0
    assert fails("gopher_quality", " ".join(["the"] * 30 + ["and"] * 29 + ["an"]), th) == "mean_word_length"
    ten = distinct_words(60, 10)
    assert fails("gopher_quality", " ".join(ten), th) is None  # mean 10.0
    assert fails("gopher_quality", " ".join(ten[:-1] + ["abcdefghijk"]), th) == "mean_word_length"
    # punctuation: part of a whitespace word's length; a token of its own (and no word) for datatrove
    text = " ".join(["the"] * 30 + ["and"] * 29 + ["an."])
    assert fails("gopher_quality", text, th) == (None if preset == "paper" else "mean_word_length")


@BOTH
def test_gopher_symbol_word_ratio(preset):
    th = only("gopher_quality", "max_symbol_word_ratio", preset=preset)
    ws = distinct_words(63)
    assert fails("gopher_quality", " ".join(ws + ["#"] * 7), th) is None  # 7 / 70 = 0.1
    assert fails("gopher_quality", " ".join(ws + ["#"] * 8), th) == "symbol_word_ratio"
    assert fails("gopher_quality", " ".join(ws + ["..."] * 7), th) is None  # 7 / 70
    assert fails("gopher_quality", " ".join(ws[:-1] + ["..."] * 6 + ["…"] * 2), th) == "symbol_word_ratio"  # 8 / 70


@BOTH
def test_gopher_bullet_and_ellipsis_lines(preset):
    ws = distinct_words(60)
    lines = [" ".join(ws[i * 6 : i * 6 + 6]) for i in range(10)]
    th = only("gopher_quality", "max_bullet_lines_ratio", preset=preset)
    assert fails("gopher_quality", "\n".join(["- " + ln for ln in lines[:9]] + lines[9:]), th) is None  # 0.9
    assert fails("gopher_quality", "\n".join(["• " + ln for ln in lines]), th) == "bullet_lines"
    th = only("gopher_quality", "max_ellipsis_lines_ratio", preset=preset)
    assert fails("gopher_quality", "\n".join([ln + "..." for ln in lines[:3]] + lines[3:]), th) is None  # 0.3
    assert fails("gopher_quality", "\n".join([ln + "…" for ln in lines[:4]] + lines[4:]), th) == "ellipsis_lines"


@BOTH
def test_gopher_alpha_words_ratio(preset):
    th = only("gopher_quality", "min_alpha_words_ratio", preset=preset)
    ws = distinct_words(80)
    assert fails("gopher_quality", " ".join(ws + ["1234"] * 20), th) is None  # 80 / 100
    assert fails("gopher_quality", " ".join(ws[:79] + ["1234"] * 21), th) == "alpha_words"
    assert fails("gopher_quality", " ".join(ws[:79] + [","] * 21), th) == "alpha_words"  # a lone comma is a word in both
    # a comma after a word: no word for the paper, a word without a letter for datatrove (80 / 101)
    assert fails("gopher_quality", " ".join(ws[:60]) + ", " + " ".join(ws[60:] + ["1234"] * 20), th) == (
        None if preset == "paper" else "alpha_words"
    )


@BOTH
def test_gopher_stop_words(preset):
    th = only("gopher_quality", "min_stop_words", preset=preset)
    ws = distinct_words(60)
    assert fails("gopher_quality", " ".join(ws + ["the", "and"]), th) is None
    assert fails("gopher_quality", " ".join(ws + ["the", "the", "The", "AND"]), th) == "stop_words"  # case-sensitive
    assert fails("gopher_quality", " ".join(ws + ["(the", "and."]), th) is None  # punctuation around a word is no part of it


@BOTH
def test_gopher_quality_defaults_on_prose_and_junk(preset):
    assert fails("gopher_quality", prose(1, 300), preset=preset) is None
    assert fails("gopher_quality", "Buy now! " * 3, preset=preset) == "word_count"
    assert fails("gopher_quality", " ".join(["12.50", "1999", "3.14", "kgs", "20.5"] * 40), preset=preset) == "alpha_words"
    # "|" is a one-character word for the paper (mean length 2.2); a symbol for datatrove (mean 3)
    table = " ".join(["12.5", "|", "kg", "3.1", "|"] * 40)
    assert fails("gopher_quality", table, preset=preset) == ("mean_word_length" if preset == "paper" else "alpha_words")


# --------------------------------------------------------------------------- Gopher repetition


def test_repetition_duplicate_paragraphs_and_lines():
    long_paras = [" ".join(distinct_words(600)[i * 60 : i * 60 + 60]) for i in range(6)]
    short = "Read more here."
    th = only("gopher_repetition", "dup_para_frac")
    assert fails("gopher_repetition", "\n\n".join(long_paras + [short] * 4), th) is None  # 3 of 10
    assert fails("gopher_repetition", "\n\n".join(long_paras[:5] + [short] * 5), th) == "dup_para_frac"  # 4 of 10
    th = only("gopher_repetition", "dup_line_frac")
    assert fails("gopher_repetition", "\n".join(long_paras + [short] * 4), th) is None
    assert fails("gopher_repetition", "\n".join(long_paras[:5] + [short] * 5), th) == "dup_line_frac"
    # characters: a repeated block of 100 characters in a text of exactly 500 (0.2) or 499
    block = "b" * 100
    for key, sep in (("dup_para_char_frac", "\n\n"), ("dup_line_char_frac", "\n")):
        th = only("gopher_repetition", key)
        head = block + sep + block + sep
        assert fails("gopher_repetition", pad_to(head, 500), th) is None
        assert fails("gopher_repetition", pad_to(head, 499), th) == key


def test_repetition_top_ngrams():
    # "xy zw" repeated 10 times: the top 2-gram has 5 characters x 10 = 50; 50 / 250 = 0.2 passes
    th = only("gopher_repetition", "top_2gram_frac")
    head = " ".join(["xy zw"] * 10)
    assert fails("gopher_repetition", pad_to(head, 250), th) is None
    assert fails("gopher_repetition", pad_to(head, 249), th) == "top_2gram_frac"
    # equally frequent 3-grams: the first one counts ("aa bb cc" 8 chars x 9 = 72; 72 / 400 = 0.18)
    th = only("gopher_repetition", "top_3gram_frac")
    head = " ".join(["aa bb cc"] * 9)
    assert Doc(pad_to(head, 400)).top_ngram_chars(3) == 72
    assert fails("gopher_repetition", pad_to(head, 400), th) is None
    assert fails("gopher_repetition", pad_to(head, 399), th) == "top_3gram_frac"
    th = only("gopher_repetition", "top_4gram_frac")
    head = " ".join(["aa bb cc dd"] * 8)  # 11 chars x 8 = 88; 88 / 550 = 0.16
    assert fails("gopher_repetition", pad_to(head, 550), th) is None
    assert fails("gopher_repetition", pad_to(head, 549), th) == "top_4gram_frac"


@BOTH
@pytest.mark.parametrize("n,limit", [(5, 0.15), (6, 0.14), (7, 0.13), (8, 0.12), (9, 0.11), (10, 0.10)])
def test_repetition_duplicate_ngrams(n, limit, preset):
    phrase = distinct_words(n, 6)  # a repeated n-gram of 6n characters (words concatenated)
    chars = 6 * n
    total = math.ceil(chars / limit - 1e-9)
    th = only("gopher_repetition", f"dup_{n}gram_frac", preset=preset)
    head = " ".join(phrase) + " qqqqqq " + " ".join(phrase)
    assert Doc(pad_to(head, total)).duplicate_ngram_chars(n) == chars
    assert fails("gopher_repetition", pad_to(head, total), th) is None
    assert fails("gopher_repetition", pad_to(head, total - 1), th) == f"dup_{n}gram_frac"


@pytest.mark.parametrize("joined", [False, True])
def test_duplicate_ngrams_scan_skips_past_a_match(joined):
    # "a b c d e a b c d e a b c d e": the second copy counts, the scan jumps 5 words, the third counts
    d = Doc(" ".join(["ab", "cd", "ef", "gh", "ij"] * 3))
    assert d.duplicate_ngram_chars(5, joined) == 2 * 10
    assert Doc(" ".join(distinct_words(50))).duplicate_ngram_chars(5, joined) == 0


# --------------------------------------------------------------------------- C4


def c4_check(text: str, th: dict | None = None, preset: str | None = None) -> tuple[str | None, str, dict]:
    rs = known_rule_sets()["c4"]
    doc = Doc(text)
    counters: dict = {}
    reason = rs.check(doc, th or rs.thresholds(preset=preset), counters)
    return reason, doc.text, counters


C4_PRESETS = pytest.mark.parametrize("preset,min_sentences", [("tfds", 3), ("datatrove", 5)])


SENT = ["The river runs through the city.", "Music was played in the hall.", "The king built a large church.",
        "People came from every town.", "The war ended after several years.", "Water is known to be clear."]  # fmt: skip


@C4_PRESETS
def test_c4_min_sentences(preset, min_sentences):
    k = min_sentences
    assert c4_check("\n".join(SENT[:k]), preset=preset)[0] is None
    assert c4_check("\n".join(SENT[: k - 1]), preset=preset)[0] == "min_sentences"
    assert c4_check(" ".join(SENT[:k]), preset=preset)[0] is None  # all on one line
    assert c4_check(" ".join(SENT[: k - 2]) + " Mr. Smith agreed to it.", preset=preset)[0] == "min_sentences"  # Mr. ends no sentence


@C4_PRESETS
def test_c4_line_rules_remove_lines_and_count_them(preset, min_sentences):
    text = "\n".join(
        [
            "Home | About | Contact",  # no terminal punctuation
            *SENT[:5],
            "Hi there.",  # fewer than 3 (or 5) words
            "Please enable JavaScript to view the comments.",
            "This site uses cookies to improve your experience.",
            "See the notes [1] and [citation needed] below.",
            "A " + "w" * 1001 + " word.",
            "The end of the text...",  # an ellipsis is no terminal punctuation
        ]
    )
    reason, new, counters = c4_check(text, preset=preset)
    assert reason is None
    assert new.splitlines() == [*SENT[:5], "See the notes  and  below."]
    assert counters == {
        "line_terminal_punct": 2,
        "line_min_words": 1,
        "line_javascript": 1,
        "line_policy": 1,
        "line_max_word_length": 1,
        "docs_changed": 1,
    }
    assert c4_check("A " + "w" * 1000 + " word in a line.\n" + "\n".join(SENT[:5]), preset=preset)[1].startswith("A w")  # 1,000 is allowed


@C4_PRESETS
def test_c4_javascript_removal_can_leave_too_few_sentences(preset, min_sentences):
    lines = SENT[: min_sentences - 1] + ["Please enable javascript to read on."]
    assert c4_check("\n".join(lines), preset=preset)[0] == "min_sentences"


@C4_PRESETS
def test_c4_lorem_ipsum_and_curly_bracket_only_in_kept_lines(preset, min_sentences):
    base = "\n".join(SENT[:5])
    assert c4_check(base + "\nLorem ipsum dolor sit amet.", preset=preset)[0] == "lorem_ipsum"
    assert c4_check(base + "\nlorem ipsum dolor sit amet", preset=preset)[0] is None  # the line goes first (no end mark)
    assert c4_check(base + "\nfunction f() { return 1; }.", preset=preset)[0] == "curly_bracket"
    assert c4_check(base + "\nfunction f() { return 1; }", preset=preset)[0] is None
    th = {**known_rule_sets()["c4"].thresholds(preset=preset), "lorem_ipsum": False}
    assert c4_check(base + "\nLorem ipsum dolor sit amet.", th)[0] is None


# --------------------------------------------------------------------------- FineWeb


def lines_of(n: int, width: int = 40) -> list[str]:
    return [("line " + w + " " + "k" * width)[:width] for w in distinct_words(n)]


def test_fineweb_line_punct_ratio():
    th = only("fineweb", "min_line_punct_ratio")
    ls = lines_of(100)
    assert fails("fineweb", "\n".join([ln + "." for ln in ls[:12]] + ls[12:]), th) is None  # 0.12
    assert fails("fineweb", "\n".join([ln + "!" for ln in ls[:11]] + ls[11:]), th) == "line_punct_ratio"
    assert fails("fineweb", "\n".join([ln + "。" for ln in ls[:12]] + ls[12:]), th) is None  # any sentence-terminal mark
    assert fails("fineweb", "\n".join([ln + ". " for ln in ls[:12]] + ls[12:]), th) == "line_punct_ratio"  # lines are not stripped


def test_fineweb_short_line_ratio():
    th = only("fineweb", "max_short_line_ratio")
    long, short = lines_of(100, 40), lines_of(100, 30)
    assert fails("fineweb", "\n\n".join(short[:67] + long[67:]), th) is None  # 0.67, blank lines do not count
    assert fails("fineweb", "\n".join(short[:68] + long[68:]), th) == "short_line_ratio"


def test_fineweb_char_dup_ratio():
    th = only("fineweb", "max_char_dup_ratio")
    dup = "Share this page"  # 15 characters, repeated once: 15 / 1500 = 0.01
    ls = lines_of(40, 36)
    text = "\n".join([dup, *ls, dup])
    newlines = text.count("\n") + 1  # and the one before the filler
    assert fails("fineweb", pad_to(text, 1500 + newlines, sep="\n"), th) is None
    assert fails("fineweb", pad_to(text, 1499 + newlines, sep="\n"), th) == "char_dup_ratio"


def test_fineweb_list_ratio():
    th = only("fineweb", "max_newline_word_ratio")
    ws = distinct_words(100)
    rows = [" ".join(ws[i * 10 : i * 10 + 10]) for i in range(10)]
    text = "\n".join(rows)  # 9 newlines / 100 words
    assert fails("fineweb", text, th) is None
    assert fails("fineweb", "\n".join(ws[:30]) + "\n" + " ".join(ws[30:100]), th) is None  # 30 / 100
    assert fails("fineweb", "\n".join(ws[:31]) + "\n" + " ".join(ws[31:100]), th) == "list_ratio"  # 31 / 100


def test_fineweb_defaults_on_prose_and_menu():
    assert fails("fineweb", "\n".join(prose(i, 60) for i in range(8))) is None
    assert fails("fineweb", "\n".join(["Home", "About us", "Contact", "Blog"] * 5)) == "line_punct_ratio"


# --------------------------------------------------------------------------- config


def write_yaml(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_config_rejects_unknown_names(tmp_path):
    for text, where in [
        ("colour: blue\n", "unknown key 'colour'"),
        ("sources:\n  'cc/*': [gopher_quality, goher_repetition]\n", "goher_repetition"),
        ("thresholds:\n  c4: {min_sentence: 3}\n", "min_sentence"),
        ("thresholds:\n  gopher: {}\n", "gopher"),
        ("thresholds:\n  c4: {min_sentences: many}\n", "thresholds.c4.min_sentences"),
        ("thresholds:\n  c4: {javascript: 3}\n", "thresholds.c4.javascript"),
        ("thresholds:\n  gopher_quality: {words: spaces}\n", "thresholds.gopher_quality.words must be one of whitespace, tokens"),
        ("thresholds:\n  c4: {sentences: punkt}\n", "did you mean 'punkt_like'"),
        ("preset: datatrov\n", "preset must be one of published, datatrove, fineweb, got 'datatrov'; did you mean 'datatrove'"),
        ("presets:\n  c4: paper\n", "presets.c4 must be one of tfds, datatrove, fineweb, published"),
        ("presets:\n  gopher: datatrove\n", "unknown key 'gopher' in presets"),
        ("sources:\n  'cc/*': {rules: [c4], preset: tfds}\n", "sources.cc/\\*.preset must be one of published, datatrove, fineweb"),
        ("sources:\n  'cc/*': {rule: [c4]}\n", "unknown key 'rule' in sources.cc/\\*"),
    ]:
        p = write_yaml(tmp_path / "f.yaml", text)
        with pytest.raises(CurateError, match=where) as err:
            FilterConfig.from_mapping(load_yaml(p), str(p))
        assert str(p) in str(err.value)


def test_default_config_keeps_code_away_from_prose_rules():
    p = default_config_path()
    cfg = FilterConfig.from_mapping(load_yaml(p), str(p))
    assert cfg.rules_for("cc/CC-MAIN-2020-50") == ["gopher_repetition", "gopher_quality", "c4", "fineweb"]
    assert cfg.rules_for("pile/Github") == []
    assert cfg.rules_for("pile/DM_Mathematics") == []
    assert cfg.rules_for("pile/Wikipedia") == ["gopher_repetition"]
    assert cfg.rules_for("web/mine") == cfg.default


# --------------------------------------------------------------------------- the stage, through the CLI


def make_docs(path: Path, rows: list[dict]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=BASE_SCHEMA), path / "part-00000.parquet")
    return path


def doc(i: int, text: str, source: str) -> dict:
    return {"id": f"d{i}", "text": text, "source": source, "url": None, "meta": None}


def test_filter_cli_per_source_counters_and_rejected_rows(tmp_path, run):
    code = "def f(x):\n    return {x: 1}\n\n" * 30
    menu = "\n".join(["Home", "About", "Contact", "Login"] * 20)
    rows = [
        doc(0, "\n".join(prose(i, 40) for i in range(10)), "cc/CC-MAIN-2020-50"),
        doc(1, menu, "cc/CC-MAIN-2020-50"),
        doc(2, code, "pile/Github"),  # not judged by prose rules
        doc(3, code, "cc/CC-MAIN-2021-04"),  # judged
        doc(4, "", "cc/CC-MAIN-2021-04"),
        doc(5, "  \n\t ", "cc/CC-MAIN-2021-04"),
        doc(6, "!!! ... ??? --- ,,, ;;;", "cc/CC-MAIN-2021-04"),
        doc(7, ("same line again and again.\n" * 2000), "pile/Wikipedia"),
        doc(8, prose(3, 400), "pile/Wikipedia"),
    ]
    src = make_docs(tmp_path / "in", rows)
    out = tmp_path / "out"
    res = run("filter", "--in", src, "--out", out, "--keep-rejected", "--workers", "1")
    assert "filter: 9 -> 3 docs" in res.stdout
    kept = pd.read_parquet(out)
    assert sorted(kept["id"]) == ["d0", "d2", "d8"]
    rej = pd.read_parquet(out / "_rejected")
    reasons = dict(zip(rej["id"], rej["reason"]))
    assert reasons["d4"] == reasons["d5"] == "empty"
    assert reasons["d1"].startswith(("gopher_quality:", "gopher_repetition:"))
    assert reasons["d7"] == "gopher_repetition:dup_line_frac"
    assert all(":" in r for k, r in reasons.items() if k not in ("d4", "d5"))
    stats = read_success(out)
    counted = {f"{rs}:{rule}": n for rs, rules in stats["counters"]["rules"].items() for rule, n in rules.items()}
    counted.update(stats["counters"]["bad_input"])
    assert counted == rej["reason"].value_counts().to_dict()
    assert {r: v["docs"] for r, v in stats["rejected"].items()} == counted
    assert stats["counters"]["docs_unfiltered"] == 1 and stats["counters"]["docs_checked"] == 8


def test_filter_rules_option_and_thresholds_from_config(tmp_path, run):
    rows = [doc(i, prose(i, 44) + " and the", "cc/x") for i in range(4)]  # 46 words: below Gopher's 50
    src = make_docs(tmp_path / "in", rows)
    res = run("filter", "--in", src, "--out", tmp_path / "a", "--rules", "gopher_quality")
    assert "4 -> 0 docs" in res.stdout
    cfg = write_yaml(tmp_path / "f.yaml", "sources: {'cc/*': [gopher_quality]}\nthresholds:\n  gopher_quality: {min_words: 40}\n")
    res = run("filter", "--in", src, "--out", tmp_path / "b", "--config", cfg)
    assert "4 -> 4 docs" in res.stdout
    assert json.loads((tmp_path / "b" / "_params.json").read_text())["config"]["thresholds"] == {"gopher_quality": {"min_words": 40}}
    res = run("filter", "--in", src, "--out", tmp_path / "c", "--rules", "gopher,c4", ok=False)
    assert res.exit_code == 1 and "gopher" in res.stderr and "Traceback" not in res.stderr
    bad = write_yaml(tmp_path / "bad.yaml", "thresholds:\n  fineweb: {max_short_lines: 1}\n")
    res = run("filter", "--in", src, "--out", tmp_path / "d", "--config", bad, ok=False)
    assert res.exit_code == 1 and str(bad) in res.stderr and "max_short_lines" in res.stderr


def test_filter_bad_input_never_crashes_a_shard(tmp_path, run):
    big = (prose(7, 200) + "\n\n") * 7000  # ~10 MB, repetitive
    good = "\n".join(prose(i, 40) for i in range(10))
    # invalid UTF-8 on purpose in "b"
    write_raw_shard(tmp_path / "in", [b"ok", "\u00e9 broken \xed\xa0\x80 surrogate".encode("latin-1"), big.encode(), good.encode()])
    out = tmp_path / "out"
    run("filter", "--in", tmp_path / "in", "--out", out, "--keep-rejected", "--workers", "1")
    stats = read_success(out)
    # invalid UTF-8 read from Parquet is replaced with U+FFFD and counted (issue 11), then filtered like any text
    assert stats["counters"]["invalid_utf8_repaired"] == {"text": 1}
    assert pd.read_parquet(out)["id"].tolist() == ["d"]
    rej = pq.read_table(out / "_rejected", columns=["id", "reason"]).to_pydict()
    assert dict(zip(rej["id"], rej["reason"]))["c"].startswith("gopher_repetition:")


def test_filter_output_same_for_one_and_two_workers(tmp_path, run):
    for s in range(3):
        make_docs(tmp_path / "in" / f"s{s}", [doc(s * 10 + i, prose(s * 10 + i, 30 + 20 * i), "cc/x") for i in range(6)])
        (tmp_path / "in" / f"s{s}" / "part-00000.parquet").rename(tmp_path / "in" / f"part-{s:05d}.parquet")
    run("filter", "--in", tmp_path / "in", "--out", tmp_path / "w1", "--workers", "1", "--keep-rejected")
    run("filter", "--in", tmp_path / "in", "--out", tmp_path / "w2", "--workers", "2", "--keep-rejected")
    for f in sorted((tmp_path / "w1").rglob("*.parquet")):
        assert f.read_bytes() == (tmp_path / "w2" / f.relative_to(tmp_path / "w1")).read_bytes()


# --------------------------------------------------------------------------- the compiled n-gram kernel and the chunk cache

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from curate.stages.filters import gopher  # noqa: E402
from curate.stages.filters import text as textmod  # noqa: E402

SAMPLE_TEXTS = Path(__file__).resolve().parents[1] / "sample_data" / "pile"


def _repetition_both(toks: list[str], joined: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[tuple, tuple]:
    """(kernel, numpy reference) for the same tokens."""
    doc = Doc(" ".join(toks))
    doc.__dict__["words"] = list(toks)
    native = doc.repetition(gopher._TOPS, gopher._DUPS, joined)
    with monkeypatch.context() as m:
        m.setattr(textmod, "_native", None)
        ref = Doc(" ".join(toks))
        ref.__dict__["words"] = list(toks)
        numpy = ref.repetition(gopher._TOPS, gopher._DUPS, joined)
    return native, numpy


def test_ngram_kernel_is_built_where_a_compiler_is():
    """setup.py builds it optionally; with a C compiler here, a missing kernel is a build bug, not a fallback."""
    import shutil

    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler: the filters run on the numpy implementation")
    assert textmod._native is not None


@pytest.mark.parametrize("joined", [False, True])
def test_ngram_kernel_equals_numpy_on_small_alphabets(joined, monkeypatch):
    """Texts over two letters, where n-grams repeat and join alike across word boundaries all the time."""
    if textmod._native is None:
        pytest.skip("kernel not built")
    rng = __import__("random").Random(7)
    for _ in range(300):
        toks = ["".join(rng.choice("ab") for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(0, 90))]
        native, numpy = _repetition_both(toks, joined, monkeypatch)
        assert native == numpy, toks
        for n, chars in zip(range(5, 11), native[3:]):
            assert chars == ref_dup(toks, n, joined)


def ref_dup(toks: list[str], n: int, joined: bool) -> int:
    """Gopher's duplicate n-gram characters by brute force (left to right, jump past a duplicate)."""
    seen: set = set()
    total = i = 0
    while i < len(toks) - n + 1:
        gram = toks[i : i + n]
        key = "".join(gram) if joined else tuple(gram)
        if key in seen:
            total += sum(map(len, gram))
            i += n
        else:
            seen.add(key)
            i += 1
    return total


@given(st.lists(st.text(alphabet="aé𝔸b.\u0300", min_size=1, max_size=4), max_size=60), st.booleans())
def test_ngram_kernel_equals_numpy_on_any_tokens(toks, joined):
    """Any tokens (non-ASCII, astral and combining characters): the kernel and the reference agree."""
    if textmod._native is None:
        pytest.skip("kernel not built")
    with pytest.MonkeyPatch.context() as mp:
        native, numpy = _repetition_both(toks, joined, mp)
    assert native == numpy


def test_ngram_kernel_equals_numpy_on_sample_text(monkeypatch):
    if textmod._native is None:
        pytest.skip("kernel not built")
    import zstandard

    path = sorted(SAMPLE_TEXTS.rglob("*.jsonl.zst"))[0]
    lines = zstandard.ZstdDecompressor().stream_reader(path.open("rb")).read(8 << 20).decode(errors="ignore").splitlines()[:150]
    assert len(lines) > 100
    for line in lines:
        toks = words(json.loads(line)["text"])
        for joined in (False, True):
            native, numpy = _repetition_both(toks, joined, monkeypatch)
            assert native == numpy


def test_ngram_kernel_refuses_what_is_not_a_token_list():
    if textmod._native is None:
        pytest.skip("kernel not built")
    with pytest.raises(TypeError):
        textmod._native.repetition_stats(["a", 1], 2, 4, 5, 10, False)
    with pytest.raises(ValueError):
        textmod._native.repetition_stats(["a"], 0, 4, 5, 10, False)


_CHUNKY = st.text(alphabet=" \n\t\u00a0abcXY9.,;:!?'’\"-–—/()[]<>=@#%$€_…😀°→ñ\u0301", max_size=80)


@given(_CHUNKY)
def test_no_word_pattern_spans_or_looks_across_whitespace(text):
    """What makes the per-chunk cache exact: the expression over the whole text gives the tokens
    of its whitespace chunks, one after the other, for both of its forms."""
    for rx in (textmod._WORD_RE, textmod._WORD_RE_CLITIC):
        assert rx.findall(text) == [t for chunk in text.split() for t in rx.findall(chunk)]


def test_chunk_cache_size_does_not_change_tokens(monkeypatch):
    text = "I cannot say, e.g. U.S. don't: see https://x.org/a. 5km well-known " * 50
    want = words(text)
    monkeypatch.setattr(textmod, "CHUNK_CACHE_ENTRIES", 3)
    textmod._CHUNKS.clear()
    assert words(text) == want and words(text + " new chunks here") == want + ["new", "chunks", "here"]
    assert len(textmod._CHUNKS) <= 3 + len(set(text.split())) + 3
