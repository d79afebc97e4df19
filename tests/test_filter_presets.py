"""The heuristic filters' presets: each published edge case where the definitions differ, run
against both readings with the decision each one gives (docs/filters.md lists them), the
n-gram comparison against a reference implementation of each definition, and the config keys
that pick presets (``preset``, ``presets``, a source's own preset, ``--preset``)."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.config import load_yaml
from curate.errors import CurateError
from curate.schema import BASE_SCHEMA
from curate.stages.filters import PRESETS, FilterConfig, FilterStage, all_rules, default_config_path, default_rule_sets, known_rule_sets
from curate.stages.filters.text import DATATROVE_PUNCTUATION, Doc
from curate.stats import Counters


def distinct_words(n: int, length: int = 5) -> list[str]:
    letters = "bcdfghjklmnpqrstvwxz"
    return ["".join(p) for p in itertools.islice(itertools.product(letters, repeat=length), n)]


def stage(rules: list[str], preset: str = "published", **kw) -> FilterStage:
    return FilterStage(config=FilterConfig(default=rules, preset=preset, **kw))


def decide(text: str, rules: list[str], preset: str = "published", source: str = "web") -> tuple[str | None, str]:
    """``(reason or None, kept text)`` of the stage for one document."""
    return stage(rules, preset).check(text, source, Counters())


# --------------------------------------------------------------------------- C4: the TFDS code against the paper's list


SIX = ["The river runs past the old mill.", "Farmers bring their grain every autumn.", "Children watch the wheel turn slowly."]


@pytest.mark.parametrize("preset,expected", [("published", None), ("datatrove", "c4:min_sentences"), ("fineweb", "c4:min_sentences")])
def test_c4_three_six_word_lines(preset, expected):
    """Three one-sentence lines of six words: C4's code (>= 5 words a line, >= 3 sentences) keeps
    the page; datatrove (>= 3 words, >= 5 sentences, the paper's list) drops it."""
    reason, kept = decide("\n".join(SIX), ["c4"], preset)
    assert reason == expected
    if expected is None:
        assert kept == "\n".join(SIX)


def test_c4_line_rules_differ_by_preset():
    """Lines of 3 or 4 words, an ending single quote, and words counted after or before citation marks."""
    lines = [
        "Yes, it was.",  # 3 words: datatrove keeps it, C4's code does not (5)
        "Farmers bring their grain every autumn.",
        "The old mill [1] was built.",  # 5 words once the mark is gone: kept by both
        "It was called 'the mill'",  # ends in ': an end mark for datatrove, not for C4's code
    ]
    expected = {
        "tfds": ["Farmers bring their grain every autumn.", "The old mill  was built."],
        "datatrove": ["Yes, it was.", "Farmers bring their grain every autumn.", "The old mill  was built.", "It was called 'the mill'"],
    }
    for preset, kept in expected.items():
        doc = Doc("\n".join(lines))
        th = {**known_rule_sets()["c4"].thresholds(preset=preset), "min_sentences": None}
        assert known_rule_sets()["c4"].check(doc, th, {}) is None
        assert doc.text.splitlines() == kept, preset


def test_c4_words_counted_after_citation_marks():
    """TFDS splits a line into words after removing its citation marks; datatrove before."""
    line = "Built in 1820 [1] [2]."  # 5 words with the marks, 4 without ("[2]." leaves ".")
    for preset, kept in [("tfds", False), ("datatrove", True)]:
        th = {**known_rule_sets()["c4"].thresholds(preset=preset), "min_sentences": None, "min_words_per_line": 5}
        doc = Doc("Farmers bring their grain every autumn.\n" + line)
        assert known_rule_sets()["c4"].check(doc, th, {}) is None
        assert (len(doc.text.splitlines()) == 2) is kept, preset


# --------------------------------------------------------------------------- Gopher: symbol words


@pytest.mark.parametrize("symbol", ["→", "🙂", "°", "•", "©"])
@pytest.mark.parametrize("preset", ["published", "datatrove"])
def test_gopher_arrows_and_emoji_are_words(symbol, preset):
    """44 words and 6 arrows (or emoji, degree signs, bullets): 50 words for both readings (the
    arrow is a whitespace word; it is not in datatrove's punctuation list), so the page is kept."""
    assert symbol not in DATATROVE_PUNCTUATION
    words = ["the", "and", *distinct_words(42)]
    text = " ".join(words[:22] + [symbol] * 3 + words[22:] + [symbol] * 3)
    assert decide(text, ["gopher_quality"], preset)[0] is None


@pytest.mark.parametrize("symbol", [",", "—", "|", "»"])
@pytest.mark.parametrize("preset,expected", [("published", None), ("datatrove", "gopher_quality:word_count")])
def test_gopher_punctuation_words(symbol, preset, expected):
    """44 words and 6 lone punctuation marks: 50 whitespace words (the paper's reading), 44 words for
    datatrove (tokens made only of its punctuation are left out of the count)."""
    assert symbol in DATATROVE_PUNCTUATION
    words = ["the", "and", *distinct_words(42)]
    text = " ".join(words[:22] + [symbol] * 3 + words[22:] + [symbol] * 3)
    assert decide(text, ["gopher_quality"], preset)[0] == expected


# --------------------------------------------------------------------------- Gopher: the alphabetic-words ratio


def punctuated_prose(n_sentences: int = 12) -> str:
    """Wikipedia-like prose: commas, parentheses, a year and a period in every sentence."""
    rng = random.Random(7)
    pool = distinct_words(400, 6)
    out = []
    for i in range(n_sentences):
        w = rng.sample(pool, 7)
        out.append(f"The {w[0]}, {w[1]} and {w[2]} (of {w[3]}) were {w[4]}, with {w[5]} in {1900 + i}, {w[6]}.")
    return " ".join(out)


@pytest.mark.parametrize("preset,expected", [("published", None), ("datatrove", "gopher_quality:alpha_words")])
def test_gopher_alpha_words_over_whitespace_words(preset, expected):
    """ "80% of words contain at least one alphabetic character": every whitespace word here but the
    year has a letter (0.93); datatrove counts each comma, parenthesis and period as a word (0.72)."""
    text = punctuated_prose()
    doc = Doc(text)
    n_words, _, n_alpha = doc.spaces_stats
    assert n_alpha / n_words > 0.9 and doc.alpha_words / len(doc.words) < 0.8
    assert decide(text, ["gopher_quality"], preset)[0] == expected


# --------------------------------------------------------------------------- Gopher: duplicate n-grams joined without a separator


def ref_duplicate_chars(words: list[str], n: int, joined: bool) -> int:
    """Gopher's duplicate n-gram characters, scanned left to right (a duplicate counts its words'
    characters and the scan jumps past it); ``joined``: n-grams compared as their words run
    together, as datatrove does, else as word sequences."""
    seen: set = set()
    total = i = 0
    while i < len(words) - n + 1:
        gram = words[i : i + n]
        key = "".join(gram) if joined else tuple(gram)
        if key in seen:
            total += sum(map(len, gram))
            i += n
        else:
            seen.add(key)
            i += 1
    return total


def test_joined_ngrams_match_across_word_boundaries():
    """``gtcfpl yffg`` equals ``gtcfp lyffg`` for datatrove; not for the paper's word n-grams."""
    a = ["gtcfpl", "yffg", "bqmwx", "dzkrt", "hvnpl"]
    b = ["gtcfp", "lyffg", "bqmwx", "dzkrt", "hvnpl"]
    doc = Doc(" ".join(a + ["sxwq"] + b))
    assert doc.duplicate_ngram_chars(5, joined=True) == len("".join(b)) == 25
    assert doc.duplicate_ngram_chars(5, joined=False) == 0


@pytest.mark.parametrize("preset,expected", [("published", None), ("datatrove", "gopher_repetition:dup_5gram_frac")])
def test_joined_ngrams_decide(preset, expected):
    """A page whose only repetition is one run of 50 letters split into 5 words in two ways:
    50 of 316 characters (0.158 > 0.15) for datatrove, no duplicate 5-gram for the paper."""
    run = "".join(distinct_words(10, 5))
    a = [run[i : i + 10] for i in range(0, 50, 10)]
    b = [run[0:9], run[9:21], run[21:30], run[30:40], run[40:50]]
    filler = distinct_words(28, 6)
    text = " ".join([*a, *filler[:14], *b, *filler[14:]])
    text = text + " " + "q" * (316 - len(text) - 1)
    assert len(text) == 316 and Doc(text).duplicate_ngram_chars(5, True) == 50 and Doc(text).duplicate_ngram_chars(5) == 0
    assert decide(text, ["gopher_repetition"], preset)[0] == expected


def test_joined_ngrams_against_the_reference_on_generated_text():
    """400 generated texts over a small alphabet (where runs of words often join alike): both
    comparisons equal their reference for n = 5..10, and the two definitions differ on some texts."""
    rng = random.Random(18)
    differ = 0
    for _ in range(400):
        words = ["".join(rng.choice("ab") for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(0, 80))]
        doc = Doc(" ".join(words))
        assert doc.words == words
        flip = False
        for n in range(5, 11):
            joined, plain = doc.duplicate_ngram_chars(n, True), doc.duplicate_ngram_chars(n, False)
            assert joined == ref_duplicate_chars(words, n, True)
            assert plain == ref_duplicate_chars(words, n, False)
            flip = flip or joined != plain
        differ += flip
    assert differ > 20


# --------------------------------------------------------------------------- whitespace-only text


@pytest.mark.parametrize(
    "rules,published,datatrove",
    [
        (["gopher_repetition"], "empty", None),  # datatrove's repetition filter drops only ""
        (["gopher_quality"], "empty", "empty"),  # datatrove drops it too (too few words)
        (["c4"], "empty", "empty"),  # (too few sentences)
        (["fineweb"], "empty", "empty"),  # (no lines)
        (all_rules(), "empty", "empty"),  # (its quality filter)
    ],
)
def test_whitespace_only_text(rules, published, datatrove):
    """Whitespace-only text is rejected as ``empty``, except where datatrove keeps it: its repetition
    filter alone (it drops only the empty string)."""
    for text in [" ", "  \n\t \n"]:
        assert decide(text, rules, "published")[0] == published
        assert decide(text, rules, "datatrove")[0] == datatrove
        assert decide(text, rules, "fineweb")[0] == datatrove
    for preset in PRESETS:
        assert decide("", rules, preset)[0] == "empty"


def test_whitespace_only_text_counted():
    st = stage(["gopher_repetition"], "datatrove")
    rows = [{"id": f"d{i}", "text": t, "source": "web", "url": None, "meta": None} for i, t in enumerate(["  \n\t \n", ""])]
    res = st(pa.Table.from_pylist(rows, schema=BASE_SCHEMA))
    assert res.kept.column("id").to_pylist() == ["d0"]
    assert res.rejected.column("reason").to_pylist() == ["empty"] and res.counters["bad_input"] == {"empty": 1}


# --------------------------------------------------------------------------- choosing presets


def test_shipped_configs_use_the_published_definitions():
    for path in [default_config_path(), Path(__file__).resolve().parents[1] / "pipelines" / "mtnlg" / "filters.yaml"]:
        cfg = FilterConfig.from_mapping(load_yaml(path), str(path))
        assert cfg.preset == "published" and not cfg.presets
        assert {r: cfg.preset_for(r) for r in default_rule_sets()} == {
            "gopher_quality": "paper",
            "gopher_repetition": "paper",
            "c4": "tfds",
            "fineweb": "datatrove",
        }


def test_presets_per_rule_set_and_per_source(tmp_path):
    p = tmp_path / "f.yaml"
    p.write_text(
        "preset: published\n"
        "presets: {c4: datatrove, gopher_quality: fineweb}\n"
        "sources:\n"
        "  'fw/*': {rules: [gopher_repetition, gopher_quality, c4, fineweb], preset: fineweb}\n"
        "  'cc/*': [c4]\n"
        "default: [c4]\n"
    )
    cfg = FilterConfig.from_mapping(load_yaml(p), str(p))
    assert cfg.preset_for("c4") == "datatrove" and cfg.preset_for("gopher_quality") == "datatrove"
    assert cfg.preset_for("gopher_repetition") == "paper"
    assert cfg.entry_for("fw/x") == (["gopher_repetition", "gopher_quality", "c4", "fineweb"], "fineweb")
    assert cfg.preset_for("c4", "fineweb") == "fineweb"  # a source's preset is over the config's
    text = "\n".join(SIX)
    st = FilterStage(config=str(p))
    assert st.check(text, "cc/a", Counters())[0] == "c4:min_sentences"  # c4: datatrove
    assert st.check(text, "fw/a", Counters())[0] is not None
    params = st.params()["config"]
    assert params["presets"]["c4"] == "datatrove"
    assert params["sources"][0] == ["fw/*", ["gopher_repetition", "gopher_quality", "c4", "fineweb"], "fineweb"]
    assert set(params["definitions"]) == {
        "c4/datatrove",
        "c4/fineweb",
        "gopher_repetition/datatrove",
        "gopher_quality/datatrove",
        "fineweb/datatrove",
    }


def test_preset_changes_the_recorded_parameters():
    """Another preset is another parameter set: the runtime then refuses to reuse the output (and
    downstream stages start again), as for a changed threshold."""
    params = {p: FilterStage(preset=p).params() for p in PRESETS}
    assert len({json.dumps(v, sort_keys=True) for v in params.values()}) == 3
    assert params["published"] == FilterStage().params()
    assert params["fineweb"]["config"]["definitions"]["c4/fineweb"]["terminal_punct"] is False
    # a preset given by name, and the same definition written out as thresholds, run alike
    written = FilterStage(config=FilterConfig(default=["c4"], thresholds={"c4": dict(known_rule_sets()["c4"].presets["datatrove"])}))
    assert written.check("\n".join(SIX), "web", Counters())[0] == "c4:min_sentences"


def test_programmatic_config_is_checked():
    with pytest.raises(CurateError, match="preset must be one of published, datatrove, fineweb"):
        FilterConfig(preset="tfds")
    with pytest.raises(CurateError, match="presets.c4 must be one of"):
        FilterConfig(presets={"c4": "paper"})
    with pytest.raises(CurateError, match="--preset must be one of"):
        FilterStage(preset="c4")


def make_docs(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    table = [{"id": f"d{i}", "text": t, "source": src, "url": None, "meta": None} for i, (t, src) in enumerate(rows)]
    pq.write_table(pa.Table.from_pylist(table, schema=BASE_SCHEMA), path / "part-00000.parquet")
    return path


def test_preset_option_on_the_command_line(tmp_path, run):
    src = make_docs(tmp_path / "in", [("\n".join(SIX), "cc/x"), (punctuated_prose(), "wiki/x")])
    cfg = tmp_path / "f.yaml"
    cfg.write_text("sources: {'cc/*': [c4], 'wiki/*': [gopher_quality]}\n")
    res = run("filter", "--in", src, "--out", tmp_path / "a", "--config", cfg)
    assert "2 -> 2 docs" in res.stdout  # the published definitions keep both
    res = run("filter", "--in", src, "--out", tmp_path / "b", "--config", cfg, "--preset", "datatrove")
    assert "2 -> 0 docs" in res.stdout  # datatrove's drop both
    recorded = json.loads((tmp_path / "b" / "_params.json").read_text())["config"]
    assert recorded["preset"] == "datatrove" and recorded["presets"]["c4"] == "datatrove"
    res = run("filter", "--in", src, "--out", tmp_path / "a", "--config", cfg, "--preset", "fineweb", ok=False)
    assert res.exit_code == 1 and "other parameters" in res.stderr and "--overwrite" in res.stderr
    res = run("filter", "--in", src, "--out", tmp_path / "c", "--preset", "c4", ok=False)
    assert res.exit_code != 0 and "--preset" in res.stderr and "Traceback" not in res.stderr
