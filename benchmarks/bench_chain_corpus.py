"""Build the chain benchmark's CommonCrawl-like WARC corpus (the generator is the package ``benchmarks/corpus/``).

    .venv/bin/python benchmarks/bench_chain_corpus.py --pages 10000 --seed 1 --out benchmarks/_work/corpus-10k
    .venv/bin/python benchmarks/bench_chain_corpus.py --pages 200 --sources repo --out /tmp/c   # no network

``--help`` lists the options; ``benchmarks/corpus/__init__.py`` says what the corpus holds.
"""

from __future__ import annotations

from corpus.cli import main

if __name__ == "__main__":
    main()
