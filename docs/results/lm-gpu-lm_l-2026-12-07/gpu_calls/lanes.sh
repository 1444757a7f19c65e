#!/bin/bash
# The lm_l stages of pipelines/lm/gpu/dvc.yaml on one GPU in two lanes at once: training
# (shared -> continuation -> 3x) beside evaluation (select, pilot, evaluate of each arm as soon as
# its run is in the ledger). Both lanes are launch-bound, so the GPU interleaves them. The same
# command every device call: the ledger skips finished stages, a cut-short run resumes from its
# resume.pt and an evaluation from its store. Run from the repository root.
ledger=outputs/lm-gpu/stages-run.json
run() { python scripts/gpu_profile.py run --stages "$@"; }
done_() { grep -q "\"$1\"" "$ledger" 2>/dev/null; }
wait_for() { until done_ "$1"; do sleep 5; done; }

run scenarios tokenizer 'init@lm_l' || exit 1
(run 'train@lm_l_shared' && run 'train@lm_l_shared_cont' && run 'train@lm_l_lr3x') > "${OUT:-.}/lane_train.log" 2>&1 &
(
  for arm in lm_l_base lm_l_shared lm_l_shared_104 lm_l_lr3x; do
    case $arm in
      lm_l_shared) wait_for 'train@lm_l_shared' ;;
      lm_l_shared_104) wait_for 'train@lm_l_shared_cont' ;;
      lm_l_lr3x) wait_for 'train@lm_l_lr3x' ;;
    esac
    run "select@$arm" "pilot@$arm" "evaluate@$arm" || exit 1
  done
) > "${OUT:-.}/lane_eval.log" 2>&1 &
wait
