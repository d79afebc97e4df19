"""The compiled shingle kernel (curate/dedup/_shingles.c); everything else is in pyproject.toml.

``optional=True``: without a C compiler the install still succeeds and fuzzy dedup uses the
numpy implementation it is tested against (same hashes; the signature phase about 2x slower).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("curate.dedup._shingles", ["curate/dedup/_shingles.c"], extra_compile_args=["-O3"], optional=True)])
