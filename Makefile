# curate: the two commands a new user needs.
#   make demo   creates .venv if needed, installs curate, runs the whole sample pipeline
#   make test   installs the test extras into .venv and runs the test suite
#   make fuzz   longer fuzzing: hypothesis with many examples, then atheris (needs the fuzz extra)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
OUT    ?= out/sample
WORKERS ?= 2

.PHONY: demo test fuzz install install-test lint clean-demo

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# setup.py compiles curate/dedup/_shingles.c, curate/stages/filters/_ngrams.c and curate/_fasttext.c (optional: without a compiler numpy)
$(VENV)/.installed: pyproject.toml setup.py curate/dedup/_shingles.c curate/stages/filters/_ngrams.c curate/_fasttext.c | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

demo: install
	$(MAKE) -C pipelines/sample CURATE=$(abspath $(BIN)/curate) PYTHON=$(abspath $(BIN)/python) OUT=$(abspath $(OUT)) WORKERS=$(WORKERS)

test: install-test
	$(BIN)/python -m pytest -q

# Longer fuzzing (issue 11): the hypothesis properties of tests/test_fuzz.py with thousands of random
# examples, then each atheris (libFuzzer) target for FUZZ_SECONDS. Crashes go to fuzz/crashes/.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= jsonl jsonl_zst jsonl_gz warc warc_plain listing html config
fuzz: install-test
	$(BIN)/python -m pip install --quiet -e '.[test,fuzz]'
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -q tests/test_fuzz.py
	for t in $(FUZZ_TARGETS); do $(BIN)/python fuzz/atheris_fuzz.py $$t -max_total_time=$(FUZZ_SECONDS) || exit 1; done

lint: install-test
	$(BIN)/ruff check curate tests benchmarks
	$(BIN)/ruff format --check curate tests benchmarks

clean-demo:
	rm -rf $(OUT)
