# Two entry points for a newcomer: `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
LINTED := $(wildcard src tests bench scripts)
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test lint typecheck pytest bench schema clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@ $(VENV)/.installed

# The embedded default model runs in-process through llama-cpp-python (the `local` extra): the
# first install compiles llama.cpp (10-15 min on 2 cores, progress shown); pip's wheel cache
# makes every later install take seconds. See scripts/install_local.py.
$(VENV)/.installed-local: pyproject.toml scripts/install_local.py | $(VENV)/.installed
	$(BIN)/python scripts/install_local.py
	touch $@

demo: $(VENV)/.installed-local
	$(BIN)/tether demo

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

typecheck: $(VENV)/.installed-dev
	$(BIN)/pyright src

pytest: $(VENV)/.installed-dev
	$(BIN)/python -m pytest

test: lint typecheck pytest

bench: $(VENV)/.installed-dev
	$(BIN)/python bench/run.py

schema: $(VENV)/.installed
	$(BIN)/tether schema > src/tether/wire/schema.json

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
