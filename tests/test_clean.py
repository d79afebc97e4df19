"""`curate clean`: mojibake repair on the planted sample documents, normalisation, empty documents."""

from __future__ import annotations

import hashlib
import json

import ftfy
import pandas as pd
import pyarrow as pa
import pytest

from curate.stages.clean import CleanStage
from tests.conftest import SAMPLE


def test_clean_text_rules():
    c = CleanStage()
    assert c.clean_text("cafÃ©") == ("café", True)
    assert c.clean_text("â€œquotedâ€\x9d")[0] == "\u201cquoted\u201d"  # curly quotes kept (uncurl_quotes=False)
    assert c.clean_text("ﬁne ＡＢＣ")[0] == "fine ABC"
    assert c.clean_text("Ð¿Ñ€Ð¸Ð²ÐµÑ‚")[0] == "привет"
    assert c.clean_text("\ufeffa\x00b\r\nc  \n\n\n\n\nd")[0] == "ab\nc\n\n\nd"
    assert c.clean_text("e\u0301")[0] == "\u00e9"  # NFC
    assert c.clean_text("ｅ\u0301")[0] == "\u00e9"  # NFC after the cheap width fix too
    assert c.clean_text("plain ascii stays") == ("plain ascii stays", False)


@pytest.mark.parametrize(
    "text",
    ["naïve café résumé", "Straße · ½ — “quotes” ‘x’ …", "日本語のテキスト。", "Ελληνικά και русский", "emoji 🙂 ok", "a\u00a0b"],
)
def test_text_without_mojibake_equals_plain_ftfy(text):
    plain = ftfy.fix_text(text, normalization="NFC", unescape_html=False, uncurl_quotes=False)
    assert CleanStage().clean_text(text)[0] == plain


@pytest.mark.skipif(not (SAMPLE / "pile" / "MANIFEST.json").exists(), reason="sample_data not built")
def test_planted_mojibake_is_repaired(run, tmp_path):
    manifest = json.loads((SAMPLE / "pile" / "MANIFEST.json").read_text())
    run("download", "pile", "--dataset", SAMPLE / "pile", "--out", tmp_path / "pile")
    res = run("clean", "--in", tmp_path / "pile", "--out", tmp_path / "clean", "--workers", "1")
    assert "clean: 1,952 -> 1,952 docs" in res.stdout
    df = pd.read_parquet(tmp_path / "clean").set_index("id")
    fixed = json.loads((tmp_path / "clean" / "_SUCCESS").read_text())["counters"]["ftfy_fixed"]
    assert fixed >= len(manifest["mojibake"]) == 20  # also ligatures / full-width forms in real text
    raw = pd.read_parquet(tmp_path / "pile").set_index("id")
    for m in manifest["mojibake"]:
        key = f"{m['doc']['file']}:{m['doc']['line']}"
        original = ftfy.fix_encoding(raw.loc[key, "text"])  # the text before it was broken (the manifest's hash)
        assert hashlib.sha256(original.encode()).hexdigest() == m["original_sha256"]
        # cleaning the broken text gives what cleaning the original gives
        assert df.loc[key, "text"] == CleanStage().clean_text(original)[0], key


def test_empty_documents_are_rejected_with_reason(tmp_path):
    t = pa.table({"id": ["a", "b", "c"], "text": pa.array(["ok", " \n\t", "\x00"], pa.large_string()), "source": ["s"] * 3})
    res = CleanStage()(t)
    assert res.kept.column("id").to_pylist() == ["a"]
    assert res.rejected.column("reason").to_pylist() == ["empty", "empty"]
