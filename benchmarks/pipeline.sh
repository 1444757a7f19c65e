#!/usr/bin/env bash
# Times a clean `dvc repro` of the demo study and the no-op `dvc repro` after it, beside the
# targets (300 and 3 seconds on 2 cores, issue 30), with the deps and outputs a no-op checks, and
# says where the clean run's time goes: per stage kind (scenarios, init, train, select, pilot,
# evaluate, panel, track, validate, analyze, report, audit; "code": the code_<kind> stages) the stages' own
# seconds (the command, then DVC saving its outputs and parsing dvc.lock, which it does before it
# logs "Updating lock file"), and DVC's own time before the first stage and between stages
# (writing the stage's dvc.lock back, checking the next stage's deps).
#
# Run from the repository root with the venv's bin on PATH (`make install` first). "Clean" means
# what a fresh clone has: it deletes outputs/demo/, the demo's dvc.lock files (the study file's
# and each arm folder's) and DVC's run cache (.dvc/cache/runs,
# records of earlier runs that `dvc repro` would restore instead of running); the other studies'
# outputs and the data cache stay. MLflow runs go to a throwaway store, since the track stage
# skips runs the store already holds. Logs: outputs/demo-repro.log, outputs/demo-noop.log.
#
# `--small` (CI's slow suite): the same clean-then-no-op run and report for the three stages of one
# scripted arm (scenarios, its arm folder's select and pilot) and their code stages, in a throwaway
# `git clone` of this checkout's HEAD (committed files only; the checkout's outputs are never touched).
set -euo pipefail
store=$(mktemp -d)
trap 'rm -rf "$store"' EXIT
export MLFLOW_TRACKING_URI="sqlite:///$store/mlflow.db"
targets=()
scope="the demo study"
if [ "${1:-}" = "--small" ]; then
  git clone --quiet "$PWD" "$store/clone"
  cd "$store/clone"
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"   # the stages run the clone's package
  targets=(pipelines/demo/arms/ref_boulware/dvc.yaml:pilot)
  scope="small: ref_boulware's pilot and its deps"
fi
rm -rf outputs/demo dvc.lock pipelines/demo/arms/*/dvc.lock .dvc/cache/runs
mkdir -p outputs

# Each output line of dvc prefixed with the seconds since the run started.
stamp() { python -u -c '
import sys, time
t0 = float(sys.argv[1])
for line in sys.stdin:
    print(f"{time.time() - t0:9.2f} {line}", end="", flush=True)' "$1"; }
now() { python -c 'import time; print(time.time())'; }

start=$(now)
set +e
dvc repro "${targets[@]}" 2>&1 | stamp "$start" >outputs/demo-repro.log
status=$?
set -e
middle=$(now)
if [ "$status" -ne 0 ]; then tail -40 outputs/demo-repro.log; exit 1; fi
dvc repro "${targets[@]}" 2>&1 | stamp "$middle" >outputs/demo-noop.log
end=$(now)

python - "$start" "$middle" "$end" outputs/demo-repro.log outputs/demo-noop.log "$scope" <<'PY'
import re, sys
from collections import defaultdict

start, middle, end = map(float, sys.argv[1:4])
print(f"scope: {sys.argv[6]}")
clean, noop = middle - start, end - middle
# lines end at \n only: a progress bar's \r (e.g. "Downloading ...") stays inside its stamped line
events = [(float(line[:9]), line[10:]) for line in open(sys.argv[4], encoding="utf-8", newline="\n")
          if line[:9].strip()]
stages: dict[str, list[float]] = defaultdict(list)
between, running, last_end, first = 0.0, None, 0.0, None
for t, text in events:
    if match := re.match(r"Running stage '([^']+)'", text):
        running = (match.group(1), t)
        between += t - last_end if first is not None else 0.0
        first = t if first is None else first
    elif text.startswith("Updating lock file") and running:
        kind = running[0].split(":")[-1].split("@")[0]  # <arm file>:train@run, code_train
        stages["code" if kind.startswith("code_") else kind].append(t - running[1])
        running, last_end = None, t
count = sum(len(v) for v in stages.values())
rerun = sum("Running stage" in line for line in open(sys.argv[5], encoding="utf-8"))
full = not sys.argv[6].startswith("small")  # the targets are the whole study's
print(f"clean dvc repro : {clean:7.1f} s for {count} stages" + (f"   (target 300 s; ratio {clean / 300:.2f})" * full))
print(f"no-op dvc repro : {noop:7.1f} s, {rerun} stages rerun" + (f" (target 3 s; ratio {noop / 3:.2f})" * full))
from dvc.repo import Repo  # what a no-op checks: every stage's deps (code, params, upstream) and outs
checked = Repo(".").index.stages
print(f"dvc checks      : {sum(len(s.deps) for s in checked)} deps and {sum(len(s.outs) for s in checked)} outs "
      f"of {len(checked)} stages")
print("\nwhere the clean run's time goes (stage: its command, DVC saving its outputs and parsing dvc.lock)")
print(f"{'stage kind':<22}{'stages':>7}{'seconds':>10}{'per stage':>11}{'share':>8}")
rows = sorted(stages.items(), key=lambda kv: -sum(kv[1]))
for kind, secs in rows:
    print(f"{kind:<22}{len(secs):>7}{sum(secs):>10.1f}{sum(secs) / len(secs):>11.1f}{sum(secs) / clean:>8.0%}")
before = first or 0.0
after = clean - last_end
print(f"{'dvc before 1st stage':<22}{'':>7}{before:>10.1f}{'':>11}{before / clean:>8.0%}")
print(f"{'dvc between stages':<22}{count - 1:>7}{between:>10.1f}{between / max(1, count - 1):>11.1f}"
      f"{between / clean:>8.0%}")
print(f"{'dvc after last stage':<22}{'':>7}{after:>10.1f}{'':>11}{after / clean:>8.0%}")
sys.exit(1 if rerun else 0)
PY
