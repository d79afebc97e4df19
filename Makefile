# curate: the two commands a new user needs.
#   make demo   creates .venv if needed, installs curate, runs the whole sample pipeline
#   make test   installs the test extras into .venv and runs the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
OUT    ?= out/sample
WORKERS ?= 2

.PHONY: demo test install install-test lint clean-demo

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
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

lint: install-test
	$(BIN)/ruff check curate tests benchmarks
	$(BIN)/ruff format --check curate tests benchmarks

clean-demo:
	rm -rf $(OUT)
