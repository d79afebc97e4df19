"""The compiled kernels; everything else is in pyproject.toml.

* ``curate/dedup/_shingles.c``: shingle hashes, MinHash bins and exact Jaccard for fuzzy dedup;
* ``curate/stages/filters/_ngrams.c``: Gopher repetition n-gram statistics for ``curate filter``;
* ``curate/_fasttext.c``: fastText classifier prediction (``curate/fasttext.py``; ``curate langid``).

``optional=True``: without a C compiler the install still succeeds and both stages use the
numpy implementations (and the fasttext library) they are tested against (same results, slower).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("curate.dedup._shingles", ["curate/dedup/_shingles.c"], extra_compile_args=["-O3"], optional=True),
        Extension("curate.stages.filters._ngrams", ["curate/stages/filters/_ngrams.c"], extra_compile_args=["-O3"], optional=True),
        # no -ffast-math (nor FMA contraction): fastText's float32 sums in fastText's order, for fastText's results
        Extension("curate._fasttext", ["curate/_fasttext.c"], extra_compile_args=["-O3", "-ffp-contract=off"], optional=True),
    ]
)
