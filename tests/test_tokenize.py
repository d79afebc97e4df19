"""curate tokenize: round trip through .bin/.idx, determinism across workers, resume, tokenizers, errors."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import curate.stages.tokenize as tk
import curate.tokenizer as tok_mod
from curate.formats.parquet import ParquetWriter
from curate.megatron import IndexedDataset
from curate.schema import BASE_SCHEMA
from tests.conftest import prose

SPECIAL = [
    "Grüße aus Köln — 日本語のテキスト, emoji 🎉🎉 and combining e\u0301.",
    "A literal <|endoftext|> inside a document is text, not a boundary.",
    "  leading spaces\n\n\n\ttabs   and trailing spaces   \n",
    "def f(x):\n    return x ** 2  # code\n",
    " ",
    "",  # empty: skipped and counted
    "x" * 3000,
]


def docs(n: int, sources: list[str], start: int = 0) -> list[dict]:
    out = []
    for i in range(n):
        k = start + i
        text = SPECIAL[k % len(SPECIAL)] if k % 5 == 0 else prose(k, 40 + k % 90)
        out.append({"id": f"d{k}", "text": text, "source": sources[k % len(sources)], "url": None, "meta": None})
    return out


def make_dataset(
    path: Path, shards: int = 2, per_shard: int = 60, group: int = 16, sources=("pile/Wikipedia", "pile/ArXiv", "cc/CC-MAIN-2020-50")
) -> list[dict]:
    """A finished-looking dataset directory whose shards have several row groups each."""
    path.mkdir(parents=True)
    all_docs = []
    for s in range(shards):
        rows = docs(per_shard, list(sources), start=s * per_shard)
        all_docs += rows
        w = ParquetWriter(path / f"part-{s:05d}.parquet", BASE_SCHEMA)
        for i in range(0, len(rows), group):
            w.write(pa.Table.from_pylist(rows[i : i + group], schema=BASE_SCHEMA))
        w.close()
    return all_docs


@pytest.fixture(scope="module")
def gpt2():
    return tok_mod.load_tokenizer("gpt2")


@pytest.fixture(scope="module")
def hf_gpt2(tmp_path_factory) -> Path:
    """GPT-2 as a Hugging Face tokenizer.json, built offline from the shipped BPE files."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.BPE.from_file(str(tok_mod.RESOURCES / "encoder.json"), str(tok_mod.RESOURCES / "vocab.bpe")))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken("<|endoftext|>", special=True)])
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    tok.save(str(path))
    return path


def read_bytes(prefix: Path) -> tuple[bytes, bytes]:
    return Path(f"{prefix}.bin").read_bytes(), Path(f"{prefix}.idx").read_bytes()


def test_round_trip_every_document(tmp_path, run, gpt2):
    rows = make_dataset(tmp_path / "in")
    r = run("tokenize", "--in", tmp_path / "in", "--out", tmp_path / "tok" / "corpus", "--workers", "1")
    assert "tokens (uint16)" in r.stdout
    kept = [d for d in rows if d["text"]]
    ds = IndexedDataset(tmp_path / "tok" / "corpus")
    ds.check()
    assert ds.num_documents == len(kept) and len(rows) - len(kept) == 4
    for i, d in enumerate(kept):
        ids = ds.document(i)
        assert ids[-1] == 50256  # --append-eod is the default
        assert gpt2.decode(ids[:-1]) == d["text"]
        assert ids[:-1].tolist() == gpt2.backend().encode_ordinary(d["text"])  # the fast path equals plain tiktoken
    stats = json.loads((tmp_path / "tok" / "corpus.stats.json").read_text())
    assert stats["documents"] == len(kept)
    assert stats["tokens"] == ds.num_tokens
    assert stats["bytes"] == sum(len(d["text"].encode()) for d in kept)
    assert stats["skipped"] == {"empty": 4}
    assert stats["dtype"] == "uint16" and stats["dtype_code"] == 8
    assert stats["tokenizer"]["name"] == "gpt2" and stats["tokenizer"]["eod"] == 50256
    per = stats["per_source"]
    assert sum(v["documents"] for v in per.values()) == len(kept)
    assert per["pile/ArXiv"]["documents"] == sum(1 for d in kept if d["source"] == "pile/ArXiv")
    assert not (tmp_path / "tok" / "corpus.work").exists()  # pieces removed after the merge


def test_no_append_eod(tmp_path, run, gpt2):
    rows = make_dataset(tmp_path / "in", shards=1, per_shard=20)
    run("tokenize", "--in", tmp_path / "in", "--out", tmp_path / "t", "--no-append-eod", "--workers", "1")
    ds = IndexedDataset(tmp_path / "t")
    kept = [d for d in rows if d["text"]]
    assert [gpt2.decode(ds[i]) for i in range(len(ds))] == [d["text"] for d in kept]
    assert 50256 not in np.asarray(ds.tokens)


def test_two_workers_and_many_pieces_equal_one_process(tmp_path, run, monkeypatch):
    make_dataset(tmp_path / "in", shards=3, per_shard=50)
    run("tokenize", "--in", tmp_path / "in", "--out", tmp_path / "one", "--workers", "1")
    monkeypatch.setattr(tk, "PIECE_BYTES", 1)  # every row group its own piece: 12 pieces
    r = run("tokenize", "--in", tmp_path / "in", "--out", tmp_path / "two", "--workers", "2")
    assert json.loads((tmp_path / "two.stats.json").read_text())["pieces"] == 12
    assert "tokenize" in r.stdout
    assert read_bytes(tmp_path / "one") == read_bytes(tmp_path / "two")


def test_resume_reuses_finished_pieces(tmp_path, run, monkeypatch):
    make_dataset(tmp_path / "in", shards=2, per_shard=40)
    run("tokenize", "--in", tmp_path / "in", "--out", tmp_path / "clean", "--workers", "1")
    monkeypatch.setattr(tk, "PIECE_BYTES", 1)
    # an interrupted run: the work directory holds two finished pieces and a half-written file
    out = tmp_path / "resumed"
    r = run("tokenize", "--in", tmp_path / "in", "--out", out, "--workers", "1")  # to learn the parameters
    params = json.loads(Path(f"{out}.stats.json").read_text())["params"]
    Path(f"{out}.stats.json").unlink()
    work = Path(f"{out}.work")
    work.mkdir()
    (work / "_params.json").write_text(json.dumps({"_stage": "tokenize", **params}))
    pieces = tk.plan_pieces(sorted((tmp_path / "in").glob("*.parquet")))
    for p in pieces[:2]:
        rec = tk.tokenize_piece(tk.PieceJob(p, str(work), "gpt2", None, True, False, None, "uint16"))
        rec["seconds"] = 1000.0  # a mark: the resumed run must add it up, not redo the piece
        (work / f"{p.name}.json").write_text(json.dumps(rec))
    (work / ".p00000-00002.all.bin.tmp.99999").write_bytes(b"junk")
    r = run("tokenize", "--in", tmp_path / "in", "--out", out, "--workers", "1")
    assert len(pieces) == 6 and "resuming, 2 of 6 piece(s) already done" in r.stderr
    stats = json.loads(Path(f"{out}.stats.json").read_text())
    assert stats["cpu_seconds"] >= 2000.0
    assert read_bytes(tmp_path / "clean") == read_bytes(out)
    assert not work.exists()


def test_per_source(tmp_path, run, gpt2):
    rows = make_dataset(tmp_path / "in")
    r = run("tokenize", "--in", tmp_path / "in", "--out", tmp_path / "tok", "--per-source", "--workers", "1")
    success = json.loads((tmp_path / "tok" / "_SUCCESS").read_text())
    assert set(success["prefixes"]) == {"pile/Wikipedia", "pile/ArXiv", "cc/CC-MAIN-2020-50"}
    assert "cc/CC-MAIN-2020-50" in r.stdout
    for source, slug in [("pile/Wikipedia", "pile_Wikipedia"), ("pile/ArXiv", "pile_ArXiv"), ("cc/CC-MAIN-2020-50", "cc_CC-MAIN-2020-50")]:
        prefix = tmp_path / "tok" / slug
        assert success["prefixes"][source] == str(prefix)
        ds = IndexedDataset(prefix)
        want = [d["text"] for d in rows if d["source"] == source and d["text"]]
        assert [gpt2.decode(ds.document(i)[:-1]) for i in range(ds.num_documents)] == want
        st = json.loads(Path(f"{prefix}.stats.json").read_text())
        assert st["source"] == source and st["documents"] == len(want) and st["tokens"] == ds.num_tokens


def test_sources_selects_and_counts_the_others(tmp_path, run):
    rows = make_dataset(tmp_path / "in", shards=1, per_shard=30)
    run("tokenize", "--in", tmp_path / "in", "--out", tmp_path / "t", "--sources", "pile/*", "--workers", "1")
    stats = json.loads((tmp_path / "t.stats.json").read_text())
    assert set(stats["per_source"]) == {"pile/Wikipedia", "pile/ArXiv"}
    assert stats["skipped"]["other_source"] == sum(1 for d in rows if d["source"].startswith("cc/"))


def test_hf_tokenizer_json_gives_the_same_tokens(tmp_path, run, hf_gpt2):
    make_dataset(tmp_path / "in", shards=1, per_shard=40)
    run("tokenize", "--in", tmp_path / "in", "--out", tmp_path / "tt", "--workers", "1")
    run("tokenize", "--in", tmp_path / "in", "--out", tmp_path / "hf", "--tokenizer", hf_gpt2, "--workers", "1")
    assert read_bytes(tmp_path / "tt") == read_bytes(tmp_path / "hf")
    tok = json.loads((tmp_path / "hf.stats.json").read_text())["tokenizer"]
    assert tok["kind"] == "hf" and tok["eod"] == 50256 and tok["vocab_size"] == 50257


def test_gpt2_fast_ranks_equal_tiktokens_loader():
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    fast = tok_mod.gpt2_mergeable_ranks(tok_mod.RESOURCES / "encoder.json", tok_mod.RESOURCES / "vocab.bpe")
    assert fast == data_gym_to_mergeable_bpe_ranks(str(tok_mod.RESOURCES / "vocab.bpe"), str(tok_mod.RESOURCES / "encoder.json"))


def big_vocab_file(path: Path) -> Path:
    """A tiktoken BPE file of 74,811 ranks whose printable-ASCII pairs all rank above 65,535."""
    ranks = [bytes([b]) for b in range(256)]
    ranks += [b"\xff\xfe" + i.to_bytes(3, "big") for i in range(65_536 - 256 + 10)]  # never in UTF-8 text
    printable = range(32, 127)
    ranks += [bytes([a, b]) for a in printable for b in printable]
    path.write_bytes(b"".join(base64.b64encode(t) + b" " + str(i).encode() + b"\n" for i, t in enumerate(ranks)))
    return path


def test_vocabulary_over_65535_gives_int32(tmp_path, run):
    rows = make_dataset(tmp_path / "in", shards=1, per_shard=20)
    vocab = big_vocab_file(tmp_path / "big.tiktoken")
    run("tokenize", "--in", tmp_path / "in", "--out", tmp_path / "t", "--tokenizer", vocab, "--workers", "1")
    idx = Path(f"{tmp_path / 't'}.idx").read_bytes()
    assert idx[17] == 4  # int32
    ds = IndexedDataset(tmp_path / "t")
    tok = tok_mod.load_tokenizer(str(vocab))
    assert tok.vocab_size > 65_535 and tok.eod == tok.vocab_size - 1
    assert int(np.asarray(ds.tokens).max()) > 65_535  # ids that uint16 would have wrapped
    kept = [d["text"] for d in rows if d["text"]]
    assert [tok.decode(ds.document(i)[:-1]) for i in range(ds.num_documents)] == kept


def test_rerun_is_a_no_op_and_other_parameters_need_overwrite(tmp_path, run):
    make_dataset(tmp_path / "in", shards=1, per_shard=20)
    args = ["tokenize", "--in", tmp_path / "in", "--out", tmp_path / "t", "--workers", "1"]
    run(*args)
    before = read_bytes(tmp_path / "t")
    r = run(*args)
    assert "nothing to do" in r.stderr
    r = run(*args, "--no-append-eod", ok=False)
    assert r.exit_code == 1 and "other parameters (append_eod true -> false)" in r.stderr and "--overwrite" in r.stderr
    run(*args, "--no-append-eod", "--overwrite")
    after = read_bytes(tmp_path / "t")
    assert len(after[0]) == len(before[0]) - 2 * 19  # one uint16 EOD less for each of 19 documents


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("missing.json", None, "no such tokenizer file"),
        ("notes.txt", "hello world, not a tokenizer\n", "not a tokenizer"),
        ("x.json", '{"hello": 1}', "not a Hugging Face tokenizer.json"),
        ("empty.bpe", "", "empty file, not a tokenizer"),
    ],
)
def test_bad_tokenizer_is_one_line_error(tmp_path, run, name, content, message):
    make_dataset(tmp_path / "in", shards=1, per_shard=5)
    if content is not None:
        (tmp_path / name).write_text(content)
    r = run("tokenize", "--in", tmp_path / "in", "--out", tmp_path / "t", "--tokenizer", tmp_path / name, ok=False)
    assert r.exit_code == 1
    assert message in r.stderr and r.stderr.startswith("curate: error: ")
    assert len(r.stderr.strip().splitlines()) == 1


def test_empty_input_is_an_error(tmp_path, run):
    (tmp_path / "in").mkdir()
    w = ParquetWriter(tmp_path / "in" / "part-00000.parquet", BASE_SCHEMA)
    w.close()
    r = run("tokenize", "--in", tmp_path / "in", "--out", tmp_path / "t", ok=False)
    assert r.exit_code == 1 and "no documents to tokenize" in r.stderr


def test_inspect(tmp_path, run):
    rows = make_dataset(tmp_path / "in", shards=1, per_shard=12)
    run("tokenize", "--in", tmp_path / "in", "--out", tmp_path / "t", "--workers", "1")
    r = run("inspect", tmp_path / "t", "--doc", "1")
    assert "dtype:      uint16 (code 8)" in r.stdout
    assert "documents:  11" in r.stdout
    assert "tokenizer:  gpt2" in r.stdout
    assert r.stdout.rstrip().endswith(rows[1]["text"] + "<|endoftext|>")
    r = run("inspect", f"{tmp_path / 't'}.idx", "--doc", "99", ok=False)
    assert r.exit_code == 1 and "out of range" in r.stderr
    r = run("inspect", tmp_path / "nope", ok=False)
    assert r.exit_code == 1 and "no indexed dataset here" in r.stderr
