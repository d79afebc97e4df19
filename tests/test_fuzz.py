"""Fuzzing the parsers and text functions (issue 11) with hypothesis.

Every ``check_*`` function takes raw input (bytes or values) and asserts the properties;
the hypothesis tests below feed them generated and mutated inputs, and ``fuzz/atheris_fuzz.py``
feeds the same functions from libFuzzer's coverage-guided engine. Properties:

* no exception escapes but the documented one (:class:`~curate.errors.CurateError`, one line);
* output ids are unique, and every string written is valid UTF-8;
* decontamination never leaves an evaluation n-gram in a kept document;
* tokenization and the Megatron writer round-trip.

``make test`` runs the "ci" profile (a few dozen examples each, derandomised); ``make fuzz``
runs ``HYPOTHESIS_PROFILE=fuzz`` (thousands, random) and then the atheris targets.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import yaml
import zstandard
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from curate.errors import CurateError
from curate.schema import BASE_SCHEMA

SLOW = settings(
    max_examples=max(5, settings.default.max_examples // 3), suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
WORDS = "the of and to in a is that for it was with be by on not he this are or from at which river city music war king".split()


def _one_line(exc: CurateError) -> None:
    assert str(exc) and "\n" not in str(exc), repr(exc)


def _utf8_ok(table: pa.Table) -> None:
    for col in table.columns:
        col.validate(full=True)  # raises on invalid UTF-8


# --------------------------------------------------------------------------- mutations


@st.composite
def mutated(draw, data: bytes) -> bytes:
    """``data`` with a few random edits: byte flips, a cut, a repeated or deleted slice, inserted junk."""
    b = bytearray(data)
    for _ in range(draw(st.integers(0, 4))):
        if not b:
            break
        op = draw(st.sampled_from(["flip", "cut", "repeat", "delete", "insert"]))
        i = draw(st.integers(0, len(b) - 1))
        if op == "flip":
            b[i] ^= draw(st.integers(1, 255))
        elif op == "cut":
            del b[i:]
        elif op == "repeat":
            j = draw(st.integers(i, min(len(b), i + 4096)))
            b[j:j] = b[i:j]
        elif op == "delete":
            del b[i : i + draw(st.integers(1, 64))]
        else:
            b[i:i] = draw(st.binary(min_size=1, max_size=64))
    return bytes(b)


# --------------------------------------------------------------------------- JSON lines, .zst, .gz


def check_jsonl(data: bytes, suffix: str = ".jsonl", max_line_bytes: int = 1 << 16) -> None:
    """Read ``data`` as a JSON-lines file: records with unique ids that Arrow accepts, or one CurateError."""
    from curate.stages.pile import read_jsonl_file

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"x{suffix}"
        path.write_bytes(data)
        counters: Counter = Counter()
        try:
            recs = list(read_jsonl_file(path, "x", counters, max_line_bytes))
        except CurateError as exc:
            _one_line(exc)
            return
    ids = [r.doc["id"] for r in recs]
    assert len(ids) == len(set(ids))
    assert all(r.reason in (None, "bad_record", "line_too_long") for r in recs)
    assert all(isinstance(r.doc["text"], str) for r in recs)
    table = pa.Table.from_pylist([r.doc for r in recs], schema=BASE_SCHEMA)  # would raise on a lone surrogate
    _utf8_ok(table)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def jsonl_bytes(draw) -> bytes:
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["doc", "doc", "json", "raw", "blank"]))
        if kind == "doc":
            meta = draw(st.one_of(st.none(), st.fixed_dictionaries({"pile_set_name": st.sampled_from(["ArXiv", "Wikipedia (en)", ""])})))
            obj = {"text": draw(st.text()), "meta": meta}
            if draw(st.booleans()):
                obj["url"] = draw(st.text(max_size=20))
            line = json.dumps(obj, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
        elif kind == "json":
            line = json.dumps(draw(json_values)).encode("utf-8", "surrogatepass")
        elif kind == "raw":
            line = draw(st.binary(max_size=200))
        else:
            line = b"  "
        lines.append(line)
    return b"\n".join(lines) + draw(st.sampled_from([b"", b"\n", b"\r\n"]))


@given(jsonl_bytes())
def test_jsonl_reader(data):
    check_jsonl(data)


@given(st.binary(max_size=4000), st.sampled_from([".jsonl", ".jsonl.zst", ".jsonl.gz"]))
def test_jsonl_reader_on_arbitrary_bytes(data, suffix):
    check_jsonl(data, suffix)


@given(st.data())
def test_jsonl_reader_on_damaged_compressed_files(data):
    plain = data.draw(jsonl_bytes())
    suffix = data.draw(st.sampled_from([".jsonl.zst", ".jsonl.gz"]))
    if suffix == ".jsonl.zst":
        frames = data.draw(st.integers(1, 3))
        step = -(-len(plain) // frames) or 1
        packed = b"".join(zstandard.ZstdCompressor(level=1).compress(plain[i : i + step]) for i in range(0, len(plain), step))
    else:
        packed = gzip.compress(plain, mtime=0)
    check_jsonl(data.draw(mutated(packed)), suffix)


def test_surrogate_escapes_in_json_become_replacement_characters():
    data = b'{"text": "a \\ud800 b", "url": "\\udfff", "meta": {"k": "\\ud83d"}}\n'
    check_jsonl(data)
    from curate.stages.pile import read_jsonl_file

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "x.jsonl").write_bytes(data)
        counters: Counter = Counter()
        (rec,) = read_jsonl_file(Path(d) / "x.jsonl", "x", counters)
    assert rec.doc["text"] == "a \ufffd b" and rec.doc["url"] == "\ufffd" and counters["invalid_utf8_repaired"] == 1


# --------------------------------------------------------------------------- WARC files and HTML


def _warc_sample() -> bytes:
    from tests.test_extract import make_warc, pages

    with tempfile.TemporaryDirectory() as d:
        plist = pages(3)
        plist.append({"url": "http://x/latin1", "body": "<html><body><p>caf\xe9 cr\xe8me</p></body></html>".encode("cp1252"),
                      "ctype": "text/html; charset=iso-8859-1"})  # fmt: skip
        plist.append({"url": "http://x/404", "body": b"gone", "status": "404 Not Found", "ctype": "text/html"})
        return make_warc(Path(d) / "x.warc.gz", plist).read_bytes()


WARC_GZ = _warc_sample()
WARC_PLAIN = gzip.decompress(WARC_GZ)  # every member, concatenated: an uncompressed WARC


def check_warc(data: bytes, gz: bool = True) -> None:
    """Extract ``data`` as a WARC file: unique ids, valid UTF-8, every response counted; nothing but CurateError."""
    from curate.stages.extract.extract_stage import ExtractStage

    stage = ExtractStage(record_timeout=0, max_html_bytes=200_000)  # in-process: the helper process is tested elsewhere
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "CC-MAIN-2020-50" / ("x.warc.gz" if gz else "x.warc")
        path.parent.mkdir()
        path.write_bytes(data)
        try:
            batches = list(stage.read(path))
        except CurateError as exc:
            _one_line(exc)
            return
    kept = pa.concat_tables([b.kept for b in batches])
    rejected = pa.concat_tables([b.rejected for b in batches])
    _utf8_ok(kept)
    _utf8_ok(rejected)
    ids = kept.column("id").to_pylist() + rejected.column("id").to_pylist()
    assert len(ids) == len(set(ids))
    assert sum(b.docs_in for b in batches) == len(ids)
    assert all(len(t) >= 1 for t in kept.column("text").to_pylist())


@SLOW
@given(st.data())
def test_warc_reader_on_damaged_files(data):
    gz = data.draw(st.booleans())
    check_warc(data.draw(mutated(WARC_GZ if gz else WARC_PLAIN)), gz)


@SLOW
@given(st.binary(max_size=3000), st.booleans())
def test_warc_reader_on_arbitrary_bytes(data, gz):
    check_warc(data, gz)


def test_warc_with_a_repeated_record_keeps_ids_unique():
    from tests.test_extract import members

    first = members(WARC_GZ)[1]  # the first response's member
    check_warc(WARC_GZ + WARC_GZ[first[0] : first[1]])


tags = st.sampled_from(["div", "p", "span", "a", "table", "tr", "td", "script", "style", "nav", "article", "h1", "li", "br", "x-y"])
html_nodes = st.recursive(
    st.text(max_size=30).map(lambda t: t.replace("<", "&lt;")),
    lambda inner: st.tuples(tags, st.text(max_size=10), st.lists(inner, max_size=4)).map(
        lambda t: f'<{t[0]} class="{t[1]}">' + "".join(t[2]) + f"</{t[0]}>"
    ),
    max_leaves=25,
)


def check_html(html: str, body: bytes | None = None, charset: str | None = None) -> None:
    """Decoding and the three extractors on arbitrary markup: a string out, never an exception."""
    from curate.stages.extract.extract_stage import EXTRACTORS
    from curate.stages.extract.extractors import extractor_function
    from curate.warc.charset import decode_html, looks_binary

    raw = body if body is not None else html.encode("utf-8", "surrogatepass")
    looks_binary(raw)
    text, codec, how = decode_html(raw, charset)
    assert text is None or isinstance(text, str)
    for name in EXTRACTORS:
        out = extractor_function(name)(html)
        assert isinstance(out, str)


@SLOW
@given(
    html_nodes,
    st.binary(max_size=300),
    st.one_of(st.none(), st.text(max_size=12), st.sampled_from(["utf-8", "latin1", "x-mac-roman", "utf-7"])),
)
def test_html_decoding_and_extraction(html, body, charset):
    check_html(f"<html><head><title>t</title></head><body>{html}</body></html>", body, charset)


# --------------------------------------------------------------------------- the heuristic rules and the text stages


def check_text_stages(texts: list[str], sources: list[str]) -> None:
    """clean, filter and langid on arbitrary text: every row kept or rejected with a known reason."""
    from curate.stages.clean import CleanStage
    from curate.stages.filters import FilterStage, known_rule_sets
    from curate.stages.langid import LangIdStage

    n = len(texts)
    table = pa.table(
        {"id": [f"d{i}" for i in range(n)], "text": pa.array(texts, pa.large_string()), "source": sources,
         "url": pa.nulls(n, pa.string()), "meta": pa.nulls(n, pa.string())}
    )  # fmt: skip
    for stage in (CleanStage(), FilterStage(), LangIdStage(keep=["en"])):
        res = stage(table)
        assert res.kept.num_rows + res.rejected.num_rows == n
        assert sorted(res.kept.column("id").to_pylist() + res.rejected.column("id").to_pylist()) == sorted(table.column("id").to_pylist())
        _utf8_ok(res.kept)
        for reason in res.rejected.column("reason").to_pylist():
            rs, _, rule = reason.partition(":")
            assert reason in ("empty", "lang", "invalid_utf8") or (rs in known_rule_sets() and rule in known_rule_sets()[rs].reasons), (
                reason
            )


texts = st.lists(
    st.one_of(
        st.text(),
        st.lists(
            st.sampled_from([*WORDS, ".", "\n", "\n\n", "...", "•", "{", "lorem ipsum", "javascript", "[1]", "Ã©", "ﬁ"]), max_size=80
        ).map(" ".join),
    ),
    min_size=1,
    max_size=6,
)


@SLOW
@given(texts, st.sampled_from(["cc/CC-MAIN-2020-50", "pile/Wikipedia", "pile/Github", ""]))
def test_text_stages_on_arbitrary_text(texts, source):
    check_text_stages(texts, [source] * len(texts))


# --------------------------------------------------------------------------- shingling and MinHash


def check_minhash(texts: list[str], ngram: int = 3) -> None:
    """Signatures are the same for a document alone, in a batch, and in any order; identical texts agree."""
    from curate.dedup.minhash import MinHasher, exact_jaccard, unique_per_doc

    h = MinHasher(num_perm=16, ngram=ngram, seed=1)
    sig, counts, sh, off = h.signatures(pa.array(texts, pa.large_string()))
    assert sig.shape == (len(texts), 16) and len(counts) == len(texts)
    for i, t in enumerate(texts):
        alone, c_alone, _, _ = h.signatures(pa.array([t], pa.large_string()))
        assert c_alone[0] == counts[i] and np.array_equal(alone[0], sig[i])
        if t.isascii():  # the words of ASCII text are its runs of letters and digits
            w = len(re.findall(r"[A-Za-z0-9]+", t))
            assert counts[i] == (0 if w == 0 else max(1, w - ngram + 1)), (t, counts[i])
    rev, _, _, _ = h.signatures(pa.array(texts[::-1], pa.large_string()))
    assert np.array_equal(rev[::-1], sig)
    u, uoff = unique_per_doc(sh, off)
    for i in range(len(texts)):
        a = u[uoff[i] : uoff[i + 1]]
        assert exact_jaccard(a, a) == (1.0 if len(a) else 0.0)
        for j in range(len(texts)):
            if texts[i] == texts[j]:
                assert np.array_equal(sig[i], sig[j])


@given(
    st.lists(
        st.one_of(st.text(), st.lists(st.sampled_from(WORDS + ["A", "b.", "--", "É"]), max_size=30).map(" ".join)), min_size=1, max_size=6
    )
)
def test_minhash_is_per_document_and_deterministic(texts):
    check_minhash(texts)


@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=40), st.data())
def test_shingles_ignore_case_punctuation_and_spacing(words, data):
    from curate.dedup.minhash import MinHasher

    seps = data.draw(st.lists(st.sampled_from([" ", "  ", ", ", ".\n", " - ", "\t", "!? "]), min_size=len(words), max_size=len(words)))
    noisy = "".join((w.upper() if data.draw(st.booleans()) else w) + s for w, s in zip(words, seps))
    sig, _, _, _ = MinHasher(num_perm=32, ngram=4).signatures(pa.array([" ".join(words), noisy], pa.large_string()))
    assert np.array_equal(sig[0], sig[1])


@given(st.lists(st.one_of(st.none(), st.text(), st.text(alphabet="aZ9 éÉ-中\u0301\u00a0", max_size=200)), max_size=8), st.integers(1, 6))
def test_compiled_shingles_equal_numpy_on_any_text(texts, ngram):
    from curate.dedup import minhash

    if minhash._native is None:
        pytest.skip("compiled kernel not built")
    arr = pa.array(texts, pa.large_string())
    native = minhash.MinHasher(ngram=ngram).shingles(arr)
    ref = minhash.shingle_hashes(*minhash.word_hashes(arr), ngram)
    assert np.array_equal(native[1], ref[1]) and np.array_equal(native[0], ref[0])


# --------------------------------------------------------------------------- decontamination


def check_decontam(evals: list[str], docs: list[str], cut_chars: int = 20, n: int = 5, min_n: int = 3) -> None:
    """No kept piece holds an evaluation key; pieces and removed regions partition each document; ids stay unique."""
    from curate.decontam.cut import DecontamStage, cut_spans, find_matches, id_hashes
    from curate.decontam.index import build_index

    try:
        index = build_index([("e", evals)], n, min_n)
    except CurateError as exc:  # a set with no key at all
        _one_line(exc)
        return
    m = find_matches(docs, index)
    for j, text in enumerate(docs):
        sel = m.doc == j
        spans = list(dict.fromkeys(zip(m.start[sel].tolist(), m.end[sel].tolist())))
        pieces, removed = cut_spans(text, spans, cut_chars)
        bounds = sorted(pieces + removed)
        assert bounds[0][0] == 0 if bounds else text == "" or not spans
        for (a, b), (c, _) in zip(bounds, bounds[1:]):
            assert a <= b == c  # contiguous, in order
        if bounds:
            assert bounds[-1][1] == len(text)
        for s, e in spans:
            assert any(a <= s and e <= b for a, b in removed), (s, e, removed)
        if pieces:
            left = find_matches([text[a:b] for a, b in pieces], index)
            assert len(left) == 0, [text[a:b] for a, b in pieces]
    # the stage itself, with every document a candidate
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        index.save(work / "index")
        ids = [f"doc{i}" for i in range(len(docs))]
        np.save(work / "ignored.npy", np.zeros(0, np.uint64))
        hashes = np.sort(id_hashes(ids))
        np.savez(work / "count.npz", docs=hashes, keys=np.arange(len(hashes), dtype=np.uint64))  # every document holds a key
        stage = DecontamStage(evals=["e"], eval_fields=[], eval_splits=[], eval_fingerprint="", ngram=n, min_ngram=min_n,
                              cut_chars=cut_chars, min_piece_chars=10, max_pieces=3, work=str(work),
                              counts=str(work / "count.npz"))  # fmt: skip
        table = pa.table({"id": ids, "text": pa.array(docs, pa.large_string()), "source": ["s"] * len(docs),
                          "url": pa.nulls(len(docs), pa.string()), "meta": pa.nulls(len(docs), pa.string())})  # fmt: skip
        res = stage(table)
    kept_ids = res.kept.column("id").to_pylist()
    assert len(kept_ids) == len(set(kept_ids))
    assert len(find_matches(res.kept.column("text").to_pylist(), index)) == 0
    _utf8_ok(res.kept)


vocab_text = st.lists(st.sampled_from(WORDS[:12]), min_size=0, max_size=20).map(" ".join)


@SLOW
@given(
    st.lists(vocab_text, min_size=1, max_size=4),
    st.lists(st.lists(st.one_of(vocab_text, st.sampled_from([".", "!", "?", "\n", "İ", "ΣΑΣ"]), st.text(max_size=8)), max_size=12).map(" ".join),
             min_size=1, max_size=4),
    st.integers(0, 40),
)  # fmt: skip
def test_decontamination_never_leaves_an_evaluation_ngram(evals, docs, cut_chars):
    check_decontam(evals, docs, cut_chars)


# --------------------------------------------------------------------------- tokenization and the Megatron writer


def check_tokenizer_round_trip(text: str) -> None:
    from curate.stages.tokenize import load_tokenizer

    tok = load_tokenizer("gpt2")
    ids = tok.encode([text])[0]
    assert ids.dtype.kind in "iu" and (len(ids) == 0) == (text == "")
    assert tok.decode(ids) == text


@given(st.text())
def test_gpt2_round_trips_any_text(text):
    check_tokenizer_round_trip(text)


def check_megatron(docs: list[list[int]], chunks: list[int], known: bool) -> None:
    from curate import megatron

    with tempfile.TemporaryDirectory() as d:
        prefix = Path(d) / "x"
        w = megatron.IndexedDatasetWriter(prefix, np.uint16, documents=len(docs) if known else None)
        i = 0
        for size in [*chunks, len(docs)]:
            batch = docs[i : i + max(1, size)]
            if batch:
                w.add_documents(
                    np.concatenate([np.array(b, np.uint16) for b in batch] or [np.zeros(0, np.uint16)]), [len(b) for b in batch]
                )
            i += len(batch)
            if i >= len(docs):
                break
        assert w.finish() == (len(docs), sum(map(len, docs)))
        ds = megatron.IndexedDataset(prefix)
        ds.check()
        assert ds.num_documents == len(docs)
        for k, b in enumerate(docs):
            assert ds.document(k).tolist() == b


@given(st.lists(st.lists(st.integers(0, 65535), max_size=20), max_size=30), st.lists(st.integers(1, 10), max_size=8), st.booleans())
def test_megatron_writer_round_trips(docs, chunks, known):
    check_megatron(docs, chunks, known)


@SLOW
@given(st.lists(st.tuples(st.text(max_size=200), st.sampled_from(["pile/A", "cc/B", "../x", "a/b"])), min_size=1, max_size=12))
def test_tokenize_stage_round_trips(rows):
    from curate.executor import LocalExecutor
    from curate.megatron import IndexedDataset
    from curate.runtime import run as run_py
    from curate.stages.tokenize import TokenizeStage
    from curate.tokenizer import load_tokenizer

    assume(any(t for t, _ in rows))
    tok = load_tokenizer("gpt2")
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "in"
        src.mkdir()
        table = pa.table({"id": [f"d{i}" for i in range(len(rows))], "text": pa.array([t for t, _ in rows], pa.large_string()),
                          "source": [s for _, s in rows]})  # fmt: skip
        import pyarrow.parquet as pq

        pq.write_table(table, src / "part-00000.parquet", row_group_size=3)
        rec = run_py(TokenizeStage(), inputs=[str(src)], out=Path(d) / "tok", executor=LocalExecutor(1))
        ds = IndexedDataset(Path(d) / "tok")
        want = [t for t, _ in rows if t]
        assert ds.num_documents == rec["documents"] == len(want)
        for k, t in enumerate(want):
            ids = ds.document(k)
            assert ids[-1] == tok.eod and tok.decode(ids[:-1]) == t


# --------------------------------------------------------------------------- small parsers: listings, configs, names, UTF-8


def check_listing(data: bytes) -> None:
    from curate.stages.download_cc import dest_path, parse_listing

    try:
        paths = parse_listing(data, "L")
    except CurateError as exc:
        _one_line(exc)
        return
    out = Path("/nonexistent/out")
    for p in paths:
        assert not p.startswith("/") and ".." not in p.split("/") and "://" not in p
        dest_path(out, p)


@given(
    st.one_of(
        st.binary(max_size=300), st.lists(st.text(max_size=40), max_size=6).map(lambda ls: "\n".join(ls).encode("utf-8", "surrogatepass"))
    )
)
def test_listing_parser(data):
    check_listing(data)
    check_listing(gzip.compress(data, mtime=0))


def check_filter_config(text: str) -> None:
    from curate.config import load_yaml
    from curate.stages.filters import FilterConfig

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "f.yaml"
        f.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            FilterConfig.from_mapping(load_yaml(f), str(f))
        except CurateError as exc:
            _one_line(exc)


config_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 200)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["c4", "fineweb", "x"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["default", "sources", "thresholds", "c4", "gopher_quality", "min_words", "cc/*", "zz"]), inner, max_size=4
        )
    ),
    max_leaves=10,
)


@given(st.one_of(st.text(max_size=200), config_values.map(lambda v: yaml.safe_dump(v))))
def test_filter_config_loader(text):
    check_filter_config(text)


@given(st.text())
def test_source_slug_is_a_safe_file_name(source):
    from curate.stages.tokenize import source_slug

    slug = source_slug(source)
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", slug) and len(slug) <= 100
    assert (Path("/out") / slug).resolve().parent == Path("/out").resolve()


@given(st.lists(st.one_of(st.none(), st.binary(max_size=20)), min_size=1, max_size=8))
def test_repair_utf8(values):
    from curate.dataset import repair_utf8

    table = pa.table({"s": pa.array(values, pa.binary()).view(pa.string()), "n": list(range(len(values)))})
    fixed, counts = repair_utf8(table)
    _utf8_ok(fixed)
    bad = 0
    for v, got in zip(values, fixed.column("s").to_pylist()):
        if v is None:
            assert got is None
            continue
        try:
            assert got == v.decode("utf-8")
        except UnicodeDecodeError:
            bad += 1
            assert got == v.decode("utf-8", "replace")
    assert counts == ({"s": bad} if bad else {})


# --------------------------------------------------------------------------- the zstd reader itself


@given(st.data())
def test_zstd_frames_reads_what_was_written_or_fails_cleanly(data):
    import zstandard as z

    from curate.stages.pile import ZstdFrames

    parts = data.draw(st.lists(st.binary(max_size=3000), min_size=1, max_size=4))
    packed = b"".join(z.ZstdCompressor(level=1, write_checksum=True).compress(p) for p in parts)
    damaged = data.draw(st.one_of(st.just(packed), mutated(packed)))
    try:
        got = io.BufferedReader(ZstdFrames(io.BytesIO(damaged))).read()
    except (z.ZstdError, EOFError):
        return
    if damaged == packed:
        assert got == b"".join(parts)


@pytest.mark.parametrize("check", ["jsonl", "warc", "listing"])
def test_atheris_targets_accept_their_seed(check):
    """The atheris harness (make fuzz) runs these same functions: they must accept their seed input."""
    {
        "jsonl": lambda: check_jsonl(b'{"text": "x"}\n'),
        "warc": lambda: check_warc(WARC_GZ),
        "listing": lambda: check_listing(b"a.warc.gz\n"),
    }[check]()
