"""curate blend: weights met within one document, sampling without replacement per epoch, --data-path, errors."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import yaml

from curate.dataset import read_success
from curate.formats.parquet import ParquetWriter
from curate.megatron import IndexedDataset, IndexedDatasetWriter
from curate.schema import BASE_SCHEMA
from curate.stages.blend.plan import parse_data_path, partial_count
from tests.conftest import prose

SPAN = 10_000  # source s uses token ids s*SPAN .. s*SPAN+SPAN-1; a document starts with its own id


def make_source(prefix: Path, s: int, n_docs: int, seed: int, tokenizer_sha: str | None = "same") -> int:
    """A tokenized source whose documents say which source and document they are; returns its tokens."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 120, n_docs)
    flat = np.concatenate([np.concatenate(([s * SPAN + j], np.full(n - 1, s * SPAN + 9_999))) for j, n in enumerate(lengths)])
    w = IndexedDatasetWriter(prefix, np.uint16)
    w.add_documents(flat, lengths)
    w.finish()
    if tokenizer_sha is not None:
        Path(f"{prefix}.stats.json").write_text(json.dumps({"tokenizer": {"name": "t", "sha256": tokenizer_sha}}))
    return int(lengths.sum())


@pytest.fixture
def sources(tmp_path) -> dict[str, tuple[Path, int]]:
    out = {}
    for s, (name, n) in enumerate([("pile/Books3", 60), ("pile/Wikipedia", 200), ("cc/CC-MAIN-2020-50", 300), ("pile/StackExchange", 40)]):
        prefix = tmp_path / "tok" / name.replace("/", "_")
        out[name] = (prefix, make_source(prefix, s, n, seed=s))
    return out


def write_config(path: Path, body: dict) -> Path:
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def blend_output(prefix: Path) -> tuple[dict[int, int], dict[int, Counter]]:
    """Tokens per source and occurrences of each document, read back from a blend."""
    ds = IndexedDataset(prefix)
    tokens: dict[int, int] = Counter()
    seen: dict[int, Counter] = {}
    for i in range(ds.num_documents):
        d = ds.document(i)
        s, j = divmod(int(d[0]), SPAN)
        tokens[s] += len(d)
        seen.setdefault(s, Counter())[j] += 1
    return tokens, seen


def test_weights_are_met_within_one_document(tmp_path, run, sources):
    names = list(sources)
    total = round(1.5 * sources[names[3]][1]) + int(2.5 * sources[names[0]][1] / 0.5)  # Books3 at about 2.5 epochs
    cfg = write_config(
        tmp_path / "blend.yaml",
        {
            "total_tokens": total,
            "max_epochs": 5,
            "sources": [
                {"name": names[0], "path": str(sources[names[0]][0]), "weight": 0.5},
                {"name": names[1], "path": str(sources[names[1]][0]), "weight": "0.3"},
                {"name": names[2], "path": str(sources[names[2]][0]), "weight": 0.2},
                {"name": names[3], "path": str(sources[names[3]][0]), "epochs": 1.5},
            ],
        },
    )
    r = run("blend", "--config", cfg, "--out", tmp_path / "out", "--seed", "3")
    header = r.stdout.splitlines()[1].split()
    assert header[:2] == ["source", "tokens"] and "weight" in header and "epochs" in header
    rows = {row["name"]: row for row in json.loads((tmp_path / "out" / "blend.json").read_text())["rows"]}
    avail = {n: sources[n][1] for n in names}
    fixed = round(1.5 * avail[names[3]])
    rest = total - fixed
    expected = {names[0]: round(rest * 0.5), names[1]: round(rest * 0.3), names[2]: round(rest * 0.2), names[3]: fixed}
    tokens, seen = blend_output(tmp_path / "out" / "blend")
    for s, name in enumerate(names):
        assert rows[name]["target_tokens"] == expected[name]
        assert rows[name]["tokens_taken"] == tokens[s]
        max_doc = int(IndexedDataset(sources[name][0]).sequence_lengths.max())
        assert abs(tokens[s] - expected[name]) <= max_doc, name
        assert f"{tokens[s]:,}" in r.stdout
    # Books3 needs more than 2 epochs: every document 2 or 3 times; sources under one epoch: each at most once
    books_epochs = expected[names[0]] / avail[names[0]]
    assert 2 < books_epochs < 3
    assert set(seen[0].values()) <= {2, 3} and len(seen[0]) == 60
    assert max(seen[2].values()) == 1
    assert set(seen[3].values()) <= {1, 2} and len(seen[3]) == 40
    # documents of the sources are interleaved, not one source after the other
    ds = IndexedDataset(tmp_path / "out" / "blend")
    ds.check()
    first = [int(ds[i][0]) // SPAN for i in range(40)]
    assert len(set(first)) >= 3
    stats = json.loads((tmp_path / "out" / "blend.stats.json").read_text())
    assert stats["documents"] == ds.num_documents and stats["tokens"] == ds.num_tokens
    assert (tmp_path / "out" / "_SUCCESS").exists() and (tmp_path / "out" / "blend_table.txt").read_text().startswith("blend of 4 sources")


def test_sampling_is_deterministic_by_seed(tmp_path, run, sources):
    body = {"total_tokens": 5_000, "sources": [{"name": n, "path": str(p), "weight": 1} for n, (p, _) in sources.items()]}
    cfg = write_config(tmp_path / "b.yaml", body)
    run("blend", "--config", cfg, "--out", tmp_path / "a", "--seed", "1")
    run("blend", "--config", cfg, "--out", tmp_path / "b", "--seed", "1")
    run("blend", "--config", cfg, "--out", tmp_path / "c", "--seed", "2")
    a, b, c = ((tmp_path / d / "blend.bin").read_bytes() for d in "abc")
    assert a == b and a != c
    assert (tmp_path / "a" / "blend.idx").read_bytes() == (tmp_path / "b" / "blend.idx").read_bytes()


def test_megatron_args_parse_back_to_the_weights(tmp_path, run, sources):
    weights = [0.14336, 0.19336, 0.05689, 0.02897]
    body = {
        "total_tokens": 4_000,
        "sources": [{"name": n, "path": str(p), "weight": w} for (n, (p, _)), w in zip(sources.items(), weights)],
    }
    cfg = write_config(tmp_path / "b.yaml", body)
    r = run("blend", "--config", cfg, "--out", tmp_path / "m", "--mode", "megatron-args")
    text = (tmp_path / "m" / "data_path.txt").read_text().strip()
    assert f"--data-path {text}" in r.stdout
    pairs = parse_data_path(text)
    assert [p for _, p in pairs] == [str(p.resolve()) for p, _ in sources.values()]
    got = [w for w, _ in pairs]
    want = [w / sum(weights) for w in weights]
    assert got == pytest.approx(want, rel=1e-9)
    # Megatron normalises the weights itself: the ratios are the configured ones
    assert got[1] / got[0] == pytest.approx(weights[1] / weights[0], rel=1e-9)
    assert not (tmp_path / "m" / "blend.bin").exists()


def test_weight_beyond_max_epochs_names_the_source(tmp_path, run, sources):
    (p1, a1), (p2, _) = sources["pile/StackExchange"], sources["pile/Wikipedia"]
    body = {
        "total_tokens": a1 * 20,
        "sources": [
            {"name": "pile/StackExchange", "path": str(p1), "weight": 0.5},
            {"name": "pile/Wikipedia", "path": str(p2), "weight": 0.5},
        ],
    }
    cfg = write_config(tmp_path / "b.yaml", body)
    r = run("blend", "--config", cfg, "--out", tmp_path / "o", "--max-epochs", "3", ok=False)
    assert r.exit_code == 1
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1 and "'pile/StackExchange'" in line and "max_epochs 3" in line
    r = run("blend", "--config", cfg, "--out", tmp_path / "o", "--max-epochs", "10")


def test_total_tokens_auto_takes_no_source_twice(tmp_path, run, sources):
    body = {
        "total_tokens": "auto",
        "sources": [{"name": n, "path": str(p), "weight": w} for (n, (p, _)), w in zip(sources.items(), [1, 2, 3, 4])],
    }
    cfg = write_config(tmp_path / "b.yaml", body)
    run("blend", "--config", cfg, "--out", tmp_path / "o", "--mode", "megatron-args")
    rows = json.loads((tmp_path / "o" / "blend.json").read_text())["rows"]
    assert max(r["epochs"] for r in rows) == pytest.approx(1.0, abs=1e-3)


def test_dataset_directory_source_is_tokenized(tmp_path, run, sources):
    d = tmp_path / "clean"
    d.mkdir()
    rows = [{"id": str(i), "text": prose(i), "source": "cc/X" if i % 2 else "pile/Y", "url": None, "meta": None} for i in range(30)]
    w = ParquetWriter(d / "part-00000.parquet", BASE_SCHEMA)
    w.write(pa.Table.from_pylist(rows, schema=BASE_SCHEMA))
    w.close()
    body = {"total_tokens": 1_000_000, "sources": [{"name": "cc", "path": str(d), "sources": "cc/*", "epochs": 2}]}
    cfg = write_config(tmp_path / "b.yaml", body)
    run("blend", "--config", cfg, "--out", tmp_path / "o", "--workers", "1")
    src = IndexedDataset(tmp_path / "o" / "sources" / "cc")
    assert src.num_documents == 15
    out = IndexedDataset(tmp_path / "o" / "blend")
    assert out.num_documents == 30 and out.num_tokens == 2 * src.num_tokens


def test_a_source_without_documents_is_an_error_or_a_warning_quiet_does_not_hide(tmp_path, run, sources):
    d = tmp_path / "clean"
    d.mkdir()
    rows = [{"id": str(i), "text": prose(i), "source": "pile/Y", "url": None, "meta": None} for i in range(10)]
    w = ParquetWriter(d / "part-00000.parquet", BASE_SCHEMA)
    w.write(pa.Table.from_pylist(rows, schema=BASE_SCHEMA))
    w.close()
    p, _ = sources["pile/Wikipedia"]
    body = {"total_tokens": 2_000, "sources": [{"name": "wiki", "path": str(p), "weight": 0.5},
                                               {"name": "cc", "path": str(d), "sources": "cc/*", "weight": 0.5}]}  # fmt: skip
    cfg = write_config(tmp_path / "b.yaml", body)
    r = run("--quiet", "blend", "--config", cfg, "--out", tmp_path / "o", "--workers", "1", ok=False)
    assert r.exit_code == 1 and "source 'cc': " in r.stderr and "no documents left to tokenize" in r.stderr and "--skip-missing" in r.stderr
    r = run("--quiet", "blend", "--config", cfg, "--out", tmp_path / "o", "--workers", "1", "--skip-missing")
    assert "blend: source 'cc' has no documents" in r.stderr  # a warning line, shown under --quiet
    assert read_success(tmp_path / "o")["skipped_sources"] == ["cc"]


def test_partial_count_takes_the_closest_prefix():
    lengths = np.array([10, 10, 10, 10])
    order = np.arange(4)
    assert partial_count(lengths, order, 0) == 0
    assert partial_count(lengths, order, 4) == 0  # 0 is closer than 10
    assert partial_count(lengths, order, 6) == 1
    assert partial_count(lengths, order, 5) == 0  # a tie takes fewer
    assert partial_count(lengths, order, 39) == 4


@pytest.mark.parametrize(
    "source, top, message",
    [
        ({"name": "a", "path": "/nonexistent/prefix", "weight": 1}, {}, "source 'a': no tokenized prefix"),
        ({"name": "a", "path": "SRC", "weight": "heavy"}, {}, "source 'a': weight must be a number, got 'heavy'"),
        ({"name": "a", "path": "SRC", "weight": -2}, {}, "weight must be a positive number"),
        ({"name": "a", "path": "SRC", "weight": 1, "epochs": 1}, {}, "give exactly one of weight or epochs"),
        ({"name": "a", "path": "SRC", "wieght": 1}, {}, "unknown key 'wieght' in sources[0]; did you mean 'weight'?"),
        ({"name": "a", "path": "SRC", "weight": 1}, {"total_tokenz": 5}, "unknown key 'total_tokenz'"),
        ({"name": "a", "path": "EMPTY", "weight": 1}, {}, "is empty (0 documents)"),
        ({"name": "a", "path": "${NO_SUCH_VARIABLE_8}/x", "weight": 1}, {}, "$NO_SUCH_VARIABLE_8, which is not set"),
    ],
)
def test_bad_configs_are_one_line_errors(tmp_path, run, sources, source, top, message):
    prefix = sources["pile/Wikipedia"][0]
    empty = tmp_path / "empty"
    IndexedDatasetWriter(empty, np.uint16).finish()
    source = {k: (str(prefix) if v == "SRC" else str(empty) if v == "EMPTY" else v) for k, v in source.items()}
    cfg = write_config(tmp_path / "b.yaml", {"total_tokens": 1000, **top, "sources": [source]})
    r = run("blend", "--config", cfg, "--out", tmp_path / "o", ok=False)
    assert r.exit_code == 1, r.stdout
    assert message in r.stderr and r.stderr.startswith(f"curate: error: {cfg}")
    assert len(r.stderr.strip().splitlines()) == 1


def test_weights_need_a_budget_and_one_tokenizer(tmp_path, run, sources):
    (p1, _), (p2, _) = sources["pile/Books3"], sources["pile/Wikipedia"]
    cfg = write_config(tmp_path / "b.yaml", {"sources": [{"name": "a", "path": str(p1), "weight": 1}]})
    r = run("blend", "--config", cfg, "--out", tmp_path / "o", ok=False)
    assert r.exit_code == 1 and "total_tokens is required" in r.stderr
    Path(f"{p2}.stats.json").write_text(json.dumps({"tokenizer": {"name": "other", "sha256": "different"}}))
    cfg = write_config(
        tmp_path / "c.yaml",
        {"total_tokens": 100, "sources": [{"name": "a", "path": str(p1), "weight": 1}, {"name": "b", "path": str(p2), "weight": 1}]},
    )
    r = run("blend", "--config", cfg, "--out", tmp_path / "o", ok=False)
    assert r.exit_code == 1 and "different tokenizers" in r.stderr and "'b'" in r.stderr


def test_skip_missing_leaves_a_source_out(tmp_path, run, sources):
    p, _ = sources["pile/Wikipedia"]
    body = {
        "total_tokens": 2_000,
        "sources": [{"name": "wiki", "path": str(p), "weight": 0.3}, {"name": "realnews", "path": str(tmp_path / "nope"), "weight": 0.7}],
    }
    cfg = write_config(tmp_path / "b.yaml", body)
    r = run("blend", "--config", cfg, "--out", tmp_path / "o", ok=False)
    assert r.exit_code == 1 and "source 'realnews': no tokenized prefix" in r.stderr
    r = run("blend", "--config", cfg, "--out", tmp_path / "o", "--skip-missing", "--mode", "megatron-args")
    assert "left out, not found: realnews" in r.stdout
    assert [w for w, _ in parse_data_path((tmp_path / "o" / "data_path.txt").read_text())] == [1.0]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 1000, 70_001])
def test_permutation_is_a_seeded_bijection_made_in_chunks(n, monkeypatch):
    """The blend's order: every document once per epoch, the same for the same seed, computed chunk by chunk."""
    import numpy as np

    from curate.stages.blend import plan

    monkeypatch.setattr(plan, "ORDER_CHUNK", 4096)
    p = plan.Permutation(n, [7, 1, 0])
    order = np.concatenate(list(p.chunks()))
    assert sorted(order.tolist()) == list(range(n))
    assert np.array_equal(order, np.concatenate(list(plan.Permutation(n, [7, 1, 0]).chunks())))
    if n > 100:
        other = np.concatenate(list(plan.Permutation(n, [8, 1, 0]).chunks()))
        assert not np.array_equal(order, other) and abs(np.corrcoef(order, np.arange(n))[0, 1]) < 0.05  # shuffled
        assert np.array_equal(np.concatenate(list(p.chunks(n // 3))), order[: n // 3])


def test_partial_count_streams_the_order_in_chunks():
    import numpy as np

    lengths = np.array([5, 1, 7, 3, 9, 2, 4], np.int32)
    order = np.array([3, 0, 6, 2, 1, 5, 4])
    for remainder in range(0, int(lengths.sum()) + 1):
        whole = partial_count(lengths, order, remainder)
        assert partial_count(lengths, iter([order[:2], order[2:5], order[5:]]), remainder) == whole
