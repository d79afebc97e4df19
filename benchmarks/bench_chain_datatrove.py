"""The datatrove side of ``benchmarks/bench_chain.py``: WARC files to GPT-2 tokens with datatrove 0.10.1.

Run by the peer environment's python (``benchmarks/.env``, see benchmarks/requirements.txt), one
process per stage, as bench_chain.py times them::

    benchmarks/.env/bin/python benchmarks/bench_chain_datatrove.py --stage extract_filter --corpus DIR --work DIR
    benchmarks/.env/bin/python benchmarks/bench_chain_datatrove.py --stage minhash --work DIR
    benchmarks/.env/bin/python benchmarks/bench_chain_datatrove.py --stage tokenize --work DIR

Stages (each a ``LocalPipelineExecutor`` with ``workers=1``; one task, except MinHash's bucket
step, which datatrove runs as one task per bucket: 9 tasks, one after the other):

* ``extract_filter``: ``WarcReader`` -> ``ResiliparseExtractor`` (below: datatrove 0.10.1 ships
  only trafilatura; this calls resiliparse as curate's ``resiliparse`` extractor does) ->
  ``LanguageFilter(["en"], 0.65)`` -> ``GopherRepetitionFilter`` -> ``GopherQualityFilter`` ->
  ``C4QualityFilter(filter_no_terminal_punct=False)`` -> ``FineWebQualityFilter`` -> ``ParquetWriter``
  (FineWeb's order, datatrove examples/fineweb.py, with its defaults);
* ``minhash``: ``MinhashDedupSignature`` -> ``MinhashDedupBuckets`` -> ``MinhashDedupCluster`` ->
  ``MinhashDedupFilter`` + ``ParquetWriter`` with ``MinhashConfig(num_buckets=9, hashes_per_bucket=13)``
  (datatrove's default n-grams 5, hashes xxhash 64-bit), four executors in one process, chained as
  in examples/minhash_deduplication.py;
* ``tokenize``: ``ParquetReader`` -> ``DocumentTokenizer`` (GPT-2, ``<|endoftext|>`` after each
  document, no shuffling: curate keeps input order too).

No network: the language model is curate's ``lid.176.ftz`` (datatrove would download ``lid.176.bin``
from the hub), and the GPT-2 tokenizer is a ``tokenizer.json`` built once from curate's GPT-2 BPE
files (``encoder.json``, ``vocab.bpe``) with the ``tokenizers`` library (datatrove would download
``gpt2`` from the hub).

Two tiny pass-through steps record the ids that leave the extractor and the language filter (for the
agreement figures of bench_chain.py; a list append per document). Each stage writes ``WORK/<stage>.json``:
datatrove's own stats per step (documents in and out, seconds) and the number of tokens.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESOURCES = ROOT / "curate" / "resources"
MODEL = RESOURCES / "lid.176.ftz"
BUCKETS, ROWS = 9, 13


# ------------------------------------------------------------------------------------------- steps


def _steps():
    """The step classes (defined lazily: datatrove is imported only in the peer environment)."""
    from datatrove.pipeline.base import PipelineStep
    from datatrove.pipeline.extractors.base import BaseExtractor
    from datatrove.utils.lid import FT176LID

    class ResiliparseExtractor(BaseExtractor):
        """Main content with resiliparse, the call of curate's ``resiliparse`` extractor."""

        name = "⛏ Resiliparse"
        _requires_dependencies = ["resiliparse"]

        def __init__(self, timeout: float = 5.0):  # curate extract's --record-timeout default
            super().__init__(timeout)

        def extract(self, text: str) -> str:
            from resiliparse.extract.html2text import extract_plain_text

            return extract_plain_text(text, main_content=True, alt_texts=False, form_fields=False, noscript=False)

    class LocalFT176(FT176LID):
        """datatrove's ft176 language ID on a given model file (no hub download)."""

        def __init__(self, languages: list[str], path: str):
            super().__init__(languages)
            self._path = path

        @property
        def model(self):
            if self._model is None:
                from fasttext.FastText import _FastText

                self._model = _FastText(model_path=self._path)
            return self._model

    class IdTap(PipelineStep):
        """Passes documents through; writes their ids to a file at the end."""

        name = "id tap"
        type = "📝 - TAP"

        def __init__(self, path: str):
            super().__init__()
            self.path = path

        def run(self, data, rank: int = 0, world_size: int = 1):
            ids = []
            for doc in data:
                ids.append(doc.id)
                yield doc
            Path(self.path).write_text("".join(f"{i}\n" for i in ids))

    return ResiliparseExtractor, LocalFT176, IdTap


def gpt2_tokenizer_json(work: Path) -> Path:
    """``tokenizer.json`` of GPT-2 from curate's encoder.json / vocab.bpe (made once, outside any timing)."""
    path = work.parent / "gpt2-tokenizer.json"
    if path.exists():
        return path
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

    bpe = models.BPE.from_file(str(RESOURCES / "encoder.json"), str(RESOURCES / "vocab.bpe"))
    tok = Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.add_special_tokens(["<|endoftext|>"])
    assert tok.token_to_id("<|endoftext|>") == 50256
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tok.save(str(tmp))
    tmp.replace(path)
    return path


# ------------------------------------------------------------------------------------------- stages


def _stats(logging_dir: Path) -> list[dict]:
    """datatrove's merged stats of one executor: per step its name, seconds and counters."""
    out = []
    for s in json.loads((logging_dir / "stats.json").read_text()):
        counters = {}
        for k, v in (s.get("stats") or {}).items():
            counters[k] = v.get("total", v) if isinstance(v, dict) else v
        ts = s.get("time_stats") or {}
        out.append({"name": s.get("name"), "seconds": ts.get("total", 0.0), "stats": counters})
    return out


def stage_extract_filter(corpus: Path, work: Path) -> dict:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
        LanguageFilter,
    )
    from datatrove.pipeline.readers import WarcReader
    from datatrove.pipeline.writers import ParquetWriter

    ResiliparseExtractor, LocalFT176, IdTap = _steps()
    lang = LanguageFilter(languages=["en"], language_threshold=0.65)
    lang.model = LocalFT176(["en"], str(MODEL))
    logs = work / "logs" / "extract_filter"
    ex = LocalPipelineExecutor(
        pipeline=[
            WarcReader(str(corpus), glob_pattern="**/*.warc.gz"),
            ResiliparseExtractor(),
            IdTap(str(work / "ids_extract.txt")),
            lang,
            IdTap(str(work / "ids_langid.txt")),
            GopherRepetitionFilter(),
            GopherQualityFilter(),
            C4QualityFilter(filter_no_terminal_punct=False),
            FineWebQualityFilter(),
            ParquetWriter(str(work / "filtered")),
        ],
        tasks=1,
        workers=1,
        logging_dir=str(logs),
    )
    ex.run()
    return {"executors": {"extract_filter": _stats(logs)}}


def stage_minhash(work: Path) -> dict:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import MinhashDedupCluster, MinhashDedupFilter, MinhashDedupSignature
    from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupBuckets
    from datatrove.pipeline.readers import ParquetReader
    from datatrove.pipeline.writers import ParquetWriter

    config = MinhashConfig(num_buckets=BUCKETS, hashes_per_bucket=ROWS)
    m = work / "minhash"
    logs = work / "logs"
    sig = LocalPipelineExecutor(
        pipeline=[ParquetReader(str(work / "filtered")), MinhashDedupSignature(output_folder=str(m / "signatures"), config=config)],
        tasks=1,
        workers=1,
        logging_dir=str(logs / "minhash_signatures"),
    )
    buckets = LocalPipelineExecutor(
        pipeline=[MinhashDedupBuckets(input_folder=str(m / "signatures"), output_folder=str(m / "buckets"), config=config)],
        tasks=config.num_buckets,
        workers=1,
        logging_dir=str(logs / "minhash_buckets"),
        depends=sig,
    )
    cluster = LocalPipelineExecutor(
        pipeline=[MinhashDedupCluster(input_folder=str(m / "buckets"), output_folder=str(m / "remove_ids"), config=config)],
        tasks=1,
        workers=1,
        logging_dir=str(logs / "minhash_cluster"),
        depends=buckets,
    )
    filt = LocalPipelineExecutor(
        pipeline=[
            ParquetReader(str(work / "filtered")),
            MinhashDedupFilter(input_folder=str(m / "remove_ids")),
            ParquetWriter(str(work / "dedup")),
        ],
        tasks=1,
        workers=1,
        logging_dir=str(logs / "minhash_filter"),
        depends=cluster,
    )
    filt.run()
    names = ("signatures", "buckets", "cluster", "filter")
    return {"executors": {f"minhash_{n}": _stats(logs / f"minhash_{n}") for n in names}}


def stage_tokenize(work: Path) -> dict:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import ParquetReader
    from datatrove.pipeline.tokens import DocumentTokenizer

    tokenizer = gpt2_tokenizer_json(work)
    logs = work / "logs" / "tokenize"
    ex = LocalPipelineExecutor(
        pipeline=[
            ParquetReader(str(work / "dedup")),
            DocumentTokenizer(
                output_folder=str(work / "tokens"),
                tokenizer_name_or_path=str(tokenizer),
                eos_token="<|endoftext|>",
                shuffle_documents=False,
            ),
        ],
        tasks=1,
        workers=1,
        logging_dir=str(logs),
    )
    ex.run()
    stats = _stats(logs)
    tokens = 0
    for s in stats:
        tokens = max(tokens, int(s["stats"].get("tokens", 0) or 0))
    return {"executors": {"tokenize": stats}, "tokens": tokens}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stage", choices=["extract_filter", "minhash", "tokenize", "prepare"], required=True)
    ap.add_argument("--corpus", type=Path, help="the WARC corpus (extract_filter)")
    ap.add_argument("--work", type=Path, required=True, help="this run's directory (stages read and write under it)")
    a = ap.parse_args(argv)
    work = a.work.resolve()
    t0 = time.perf_counter()
    if a.stage == "prepare":  # untimed: the tokenizer file, and datatrove's imports warmed into the page cache
        gpt2_tokenizer_json(work)
        import datatrove.pipeline.dedup  # noqa: F401
        import datatrove.pipeline.filters  # noqa: F401
        import datatrove.pipeline.tokens  # noqa: F401

        print(json.dumps({"ok": True}))
        return
    if a.stage == "extract_filter":
        for d in ("filtered", "logs/extract_filter"):
            shutil.rmtree(work / d, ignore_errors=True)
        result = stage_extract_filter(a.corpus.resolve(), work)
    elif a.stage == "minhash":
        result = stage_minhash(work)
    else:
        result = stage_tokenize(work)
    result["seconds_in_process"] = time.perf_counter() - t0
    (work / f"{a.stage}.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
