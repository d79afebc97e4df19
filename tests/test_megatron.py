"""Megatron-LM indexed datasets: the .idx layout byte by byte, streaming and merged writes, the reader."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from curate import megatron
from curate.errors import CurateError
from curate.megatron import IndexedDataset, IndexedDatasetWriter


def write(prefix, docs, dtype=np.uint16, documents=None, chunk=None):
    """Write ``docs`` (lists of ids), ``chunk`` documents per call."""
    w = IndexedDatasetWriter(prefix, dtype, documents=documents)
    chunk = chunk or max(1, len(docs))
    for i in range(0, len(docs), chunk):
        part = docs[i : i + chunk]
        flat = np.array([t for d in part for t in d], dtype=np.int64)
        w.add_documents(flat, [len(d) for d in part])
    return w.finish()


def test_idx_bytes_field_by_field(tmp_path):
    docs = [[1, 2, 3], [65535], [7, 8]]
    assert write(tmp_path / "x", docs) == (3, 6)
    idx = (tmp_path / "x.idx").read_bytes()
    assert idx[0:9] == b"MMIDIDX\x00\x00"  # magic
    assert struct.unpack("<Q", idx[9:17]) == (1,)  # version
    assert idx[17] == 8  # dtype code: uint16
    assert struct.unpack("<Q", idx[18:26]) == (3,)  # sequence count
    assert struct.unpack("<Q", idx[26:34]) == (4,)  # document-index count = documents + 1
    assert struct.unpack("<3i", idx[34:46]) == (3, 1, 2)  # int32 sequence lengths
    assert struct.unpack("<3q", idx[46:70]) == (0, 6, 8)  # int64 byte pointers (2 bytes per token)
    assert struct.unpack("<4q", idx[70:102]) == (0, 1, 2, 3)  # int64 document indices
    assert len(idx) == 102
    assert (tmp_path / "x.bin").read_bytes() == struct.pack("<6H", 1, 2, 3, 65535, 7, 8)
    # no temporary files left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.bin", "x.idx"]


def test_int32_layout_and_pointers(tmp_path):
    docs = [[70_000, 1], [2, 3, 4]]
    write(tmp_path / "y", docs, dtype=np.int32)
    idx = (tmp_path / "y.idx").read_bytes()
    assert idx[17] == 4  # int32
    assert struct.unpack("<2i", idx[34:42]) == (2, 3)
    assert struct.unpack("<2q", idx[42:58]) == (0, 8)  # 4 bytes per token
    assert struct.unpack("<5i", (tmp_path / "y.bin").read_bytes()) == (70_000, 1, 2, 3, 4)
    ds = IndexedDataset(tmp_path / "y")
    assert ds.dtype == np.int32 and ds[0].tolist() == [70_000, 1]


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float64, np.float32, np.uint16])
def test_dtype_codes_are_megatrons(dtype):
    codes = {np.uint8: 1, np.int8: 2, np.int16: 3, np.int32: 4, np.int64: 5, np.float64: 6, np.float32: 7, np.uint16: 8}
    assert megatron.encode_header(dtype, 0, 1)[17] == codes[dtype]


def test_dtype_for_vocab():
    assert megatron.dtype_for_vocab(50_257) == np.uint16
    assert megatron.dtype_for_vocab(65_535) == np.uint16
    assert megatron.dtype_for_vocab(65_536) == np.int32
    assert megatron.dtype_for_vocab(128_256) == np.int32


def test_streaming_index_equals_buffered(tmp_path):
    rng = np.random.default_rng(0)
    docs = [rng.integers(0, 50_000, rng.integers(1, 40)).tolist() for _ in range(300)]
    write(tmp_path / "buffered", docs)
    write(tmp_path / "streamed", docs, documents=len(docs), chunk=7)
    for suffix in (".bin", ".idx"):
        assert (tmp_path / f"buffered{suffix}").read_bytes() == (tmp_path / f"streamed{suffix}").read_bytes()


def test_streaming_writer_checks_the_announced_count(tmp_path):
    w = IndexedDatasetWriter(tmp_path / "z", np.uint16, documents=3)
    w.add_documents(np.array([1, 2]), [1, 1])
    with pytest.raises(ValueError, match="announced"):
        w.finish()
    assert not list(tmp_path.iterdir())  # aborted: nothing left


def test_merge_equals_single_write(tmp_path):
    rng = np.random.default_rng(1)
    docs = [rng.integers(0, 60_000, rng.integers(1, 30)).tolist() for _ in range(100)]
    write(tmp_path / "whole", docs)
    cuts = [0, 10, 10, 55, 100]  # includes an empty piece
    parts = []
    for i, (a, b) in enumerate(zip(cuts, cuts[1:])):
        write(tmp_path / f"part{i}", docs[a:b])
        parts.append(tmp_path / f"part{i}")
    assert megatron.merge(parts, tmp_path / "merged") == (100, sum(map(len, docs)))
    for suffix in (".bin", ".idx"):
        assert (tmp_path / f"whole{suffix}").read_bytes() == (tmp_path / f"merged{suffix}").read_bytes()


def test_merge_refuses_mixed_dtypes(tmp_path):
    write(tmp_path / "a", [[1]], dtype=np.uint16)
    write(tmp_path / "b", [[1]], dtype=np.int32)
    with pytest.raises(CurateError, match="different dtypes"):
        megatron.merge([tmp_path / "a", tmp_path / "b"], tmp_path / "c")


def test_reader(tmp_path):
    docs = [[5, 6, 7], [8], [9, 10]]
    write(tmp_path / "r", docs)
    ds = IndexedDataset(tmp_path / "r")
    ds.check()
    assert len(ds) == 3 and ds.num_documents == 3 and ds.num_tokens == 6
    assert [ds[i].tolist() for i in range(3)] == docs
    assert ds[-1].tolist() == [9, 10]
    assert ds.document(1).tolist() == [8]
    assert ds.document_lengths().tolist() == [3, 1, 2]
    assert ds.document_indices[-1] == len(ds)  # what Megatron asserts on load
    with pytest.raises(IndexError):
        ds[3]


def test_reader_empty_dataset(tmp_path):
    write(tmp_path / "e", [])
    ds = IndexedDataset(tmp_path / "e")
    ds.check()
    assert len(ds) == 0 and ds.num_documents == 0 and ds.num_tokens == 0
    assert (tmp_path / "e.idx").stat().st_size == 34 + 8


def test_reader_reads_multi_sequence_documents(tmp_path):
    # as Megatron's preprocess_data.py --split-sentences writes: 3 sequences, 2 documents
    lengths = np.array([2, 1, 3], "<i4")
    idx = (
        megatron.encode_header(np.uint16, 3, 3)
        + lengths.tobytes()
        + np.array([0, 4, 6], "<i8").tobytes()
        + np.array([0, 2, 3], "<i8").tobytes()
    )
    (tmp_path / "m.idx").write_bytes(idx)
    (tmp_path / "m.bin").write_bytes(np.arange(6, dtype="<u2").tobytes())
    ds = IndexedDataset(tmp_path / "m")
    ds.check()
    assert ds.num_documents == 2 and not ds.one_sequence_per_document()
    assert ds.document(0).tolist() == [0, 1, 2] and ds.document(1).tolist() == [3, 4, 5]
    assert ds.document_lengths().tolist() == [3, 3]


def test_reader_errors_name_the_file(tmp_path):
    write(tmp_path / "ok", [[1, 2, 3]])
    idx = (tmp_path / "ok.idx").read_bytes()

    (tmp_path / "magic.idx").write_bytes(b"NOTANIDX!" + idx[9:])
    (tmp_path / "magic.bin").write_bytes((tmp_path / "ok.bin").read_bytes())
    with pytest.raises(CurateError, match=r"magic\.idx: not a Megatron indexed dataset"):
        IndexedDataset(tmp_path / "magic")

    (tmp_path / "ver.idx").write_bytes(idx[:9] + struct.pack("<Q", 2) + idx[17:])
    (tmp_path / "ver.bin").write_bytes((tmp_path / "ok.bin").read_bytes())
    with pytest.raises(CurateError, match="version 2"):
        IndexedDataset(tmp_path / "ver")

    (tmp_path / "short.idx").write_bytes(idx)
    (tmp_path / "short.bin").write_bytes((tmp_path / "ok.bin").read_bytes()[:-2])
    with pytest.raises(CurateError, match=r"short\.bin: truncated"):
        IndexedDataset(tmp_path / "short")

    (tmp_path / "cut.idx").write_bytes(idx[:-8])
    (tmp_path / "cut.bin").write_bytes((tmp_path / "ok.bin").read_bytes())
    with pytest.raises(CurateError, match=r"cut\.idx: truncated index"):
        IndexedDataset(tmp_path / "cut")

    with pytest.raises(CurateError, match="no such index file"):
        IndexedDataset(tmp_path / "missing")
