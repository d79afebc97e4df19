"""Coverage-guided fuzzing of curate's parsers with atheris (libFuzzer), run by ``make fuzz``.

    .venv/bin/python fuzz/atheris_fuzz.py TARGET [libFuzzer options]
    .venv/bin/python fuzz/atheris_fuzz.py warc -max_total_time=60

TARGET is one of the names in ``TARGETS``. Each feeds libFuzzer's bytes to a ``check_*``
function of ``tests/test_fuzz.py``, the same properties the hypothesis tests assert (only
CurateError escapes, unique ids, valid UTF-8 out, ...); anything else is a crash that
libFuzzer saves under ``fuzz/crashes/`` (replay it: ``fuzz/atheris_fuzz.py TARGET FILE``).
The corpus of interesting inputs grows in ``fuzz/corpus/TARGET/`` (not committed), seeded
with a valid input. atheris needs the ``fuzz`` extra: ``pip install -e '.[fuzz]'``.
"""

from __future__ import annotations

import gzip
import logging
import os
import sys
from pathlib import Path

import atheris

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

with atheris.instrument_imports(include=["curate"]):
    import curate.config
    import curate.decontam.cut
    import curate.stages.download_cc
    import curate.stages.extract.extract_stage
    import curate.stages.extract.extractors
    import curate.stages.extract.fast
    import curate.stages.filters
    import curate.stages.pile  # noqa: F401

from tests.test_fuzz import WARC_GZ, WARC_PLAIN, check_filter_config, check_html, check_jsonl, check_listing, check_warc  # noqa: E402

SEED_JSONL = b'{"text": "Hello world.", "meta": {"pile_set_name": "ArXiv"}}\n{"text": "caf\\u00e9", "url": "http://x"}\n'


def _html(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    charset = fdp.PickValueInList([None, "utf-8", "latin1", "shift_jis", "utf-16", fdp.ConsumeUnicodeNoSurrogates(12)])
    body = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 512))
    check_html(fdp.ConsumeUnicodeNoSurrogates(4096), body, charset)


def _zst(data: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor(level=3).compress(data)


#: target -> (function of the fuzzer's bytes, seed input)
TARGETS = {
    "jsonl": (lambda d: check_jsonl(d, ".jsonl"), SEED_JSONL),
    "jsonl_zst": (lambda d: check_jsonl(d, ".jsonl.zst"), _zst(SEED_JSONL)),
    "jsonl_gz": (lambda d: check_jsonl(d, ".jsonl.gz"), gzip.compress(SEED_JSONL, mtime=0)),
    "warc": (lambda d: check_warc(d, gz=True), WARC_GZ),
    "warc_plain": (lambda d: check_warc(d, gz=False), WARC_PLAIN),
    "listing": (check_listing, gzip.compress(b"crawl-data/CC-MAIN-2020-50/segments/1/warc/a.warc.gz\n", mtime=0)),
    "html": (_html, b"\x00\x00<html><body><p>Hello <b>world</b>.</p></body></html>"),
    "config": (
        lambda d: check_filter_config(d.decode("utf-8", "replace")),
        b"sources:\n  'cc/*': [c4]\nthresholds:\n  c4: {min_words_per_line: 3}\n",
    ),
}


def main() -> None:
    logging.getLogger("curate").disabled = True  # the readers warn about every bad record: noise at 10,000 inputs/s
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(f"usage: {sys.argv[0]} TARGET [libFuzzer options]; TARGET: {', '.join(TARGETS)}")
    target = sys.argv[1]
    fn, seed = TARGETS[target]
    args = sys.argv[2:]
    if not any(not a.startswith("-") for a in args):  # no corpus or crash file given: use fuzz/corpus/TARGET
        corpus = ROOT / "fuzz" / "corpus" / target
        corpus.mkdir(parents=True, exist_ok=True)
        if not any(corpus.iterdir()):
            (corpus / "seed").write_bytes(seed)
        crashes = ROOT / "fuzz" / "crashes"
        crashes.mkdir(parents=True, exist_ok=True)
        args = [f"-artifact_prefix={crashes}{os.sep}{target}-", *args, str(corpus)]
    atheris.Setup([sys.argv[0], *args], fn)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
