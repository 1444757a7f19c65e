#!/usr/bin/env bash
# Times a clean `dvc repro` of the demo study and the no-op `dvc repro` after it, beside the
# targets (10 minutes and 10 seconds on 2 cores). Run from the repository root with the venv's
# bin on PATH (`make install` first). Deletes outputs/ and dvc.lock (both generated).
set -euo pipefail
rm -rf outputs dvc.lock
mkdir -p outputs
now() { python -c 'import time; print(time.time())'; }
start=$(now)
dvc repro >outputs/repro.log 2>&1 || { tail -40 outputs/repro.log; exit 1; }
middle=$(now)
dvc repro >outputs/noop.log 2>&1
end=$(now)
stages=$(grep -c "Running stage" outputs/repro.log || true)
rerun=$(grep -c "Running stage" outputs/noop.log || true)
python - "$start" "$middle" "$end" "$stages" "$rerun" <<'PY'
import sys
start, middle, end = map(float, sys.argv[1:4])
stages, rerun = map(int, sys.argv[4:6])
clean, noop = middle - start, end - middle
print(f"clean dvc repro : {clean:7.1f} s for {stages} stages   (target 600 s; ratio {clean / 600:.2f})")
print(f"no-op dvc repro : {noop:7.1f} s, {rerun} stages rerun (target 10 s; ratio {noop / 10:.2f})")
sys.exit(1 if rerun else 0)
PY
