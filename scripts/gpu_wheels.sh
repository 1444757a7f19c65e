#!/usr/bin/env bash
# Wheels a GPU machine without a package registry needs to run the GPU profile's device stages
# (scripts/gpu_profile.py run): pydantic and the packages it imports, at requirements.lock's
# versions, for that machine's Python (default 3.12) on x86-64 Linux. Everything else the device
# stages import (torch, transformers, numpy, pandas, pyarrow, pyyaml, typer, rich, httpx) is
# expected there; DVC, MLflow and great-expectations are not needed there.
#
# usage: scripts/gpu_wheels.sh [DIR] [PYTHON_VERSION]   (default .whl 3.12); --dry prints the command
# there:  pip install --no-index --find-links DIR pydantic
set -euo pipefail
cd "$(dirname "$0")/.."
DRY=0
if [ "${1:-}" = "--dry" ]; then DRY=1; shift; fi
DIR=${1:-.whl}
PY=${2:-3.12}
PACKAGES="pydantic pydantic-core annotated-types typing-inspection typing-extensions"
pins=()
for name in $PACKAGES; do
  pin=$(grep -i "^${name}==" requirements.lock) || { echo "error: requirements.lock:${name}: no pin" >&2; exit 2; }
  pins+=("$pin")
done
cmd=(python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version "$PY"
     --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --dest "$DIR" "${pins[@]}")
if [ "$DRY" = 1 ]; then echo "${cmd[*]}"; exit 0; fi
"${cmd[@]}"
ls "$DIR"
