# Per-part wall times of a CI script, printed as a table when it exits (sourced by .ci/run).
#
#   source .ci/timing.sh
#   trap ci_timing_table EXIT
#   ci_part "fast suite" make test        # runs the command, records its seconds and status
#   ci_background "vllm" make vllm-venv    # runs a part beside the following ones (2 cores: CI's
#   ci_wait                               #   parts are mostly one process each); collects it
#
# A part runs in a subshell with `set -e` (a function part stops at its first failing line; what it
# exports does not outlive it). A failing part is recorded as failed and its status returned, so
# `set -e` still stops the run; the EXIT trap then prints what ran up to there. Set CI_TIMING_FILE to also append the rows
# (tab-separated: part, seconds, status) to a file.

CI_PART_NAMES=()
CI_PART_SECONDS=()
CI_PART_STATUS=()
CI_BG_PIDS=()
CI_BG_NAMES=()
CI_BG_FILES=()

_ci_now() { date +%s.%N; }
CI_START=$(_ci_now)

_ci_record() {  # name seconds rc
  CI_PART_NAMES+=("$1")
  CI_PART_SECONDS+=("$2")
  CI_PART_STATUS+=("$([ "$3" -eq 0 ] && echo ok || echo "failed ($3)")")
  if [ -n "${CI_TIMING_FILE:-}" ]; then
    printf '%s\t%s\t%s\n' "$1" "$2" "${CI_PART_STATUS[-1]}" >>"$CI_TIMING_FILE"
  fi
}

_ci_seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

ci_part() {
  local name=$1 start end rc errexit=0
  shift
  [[ $- == *e* ]] && errexit=1
  start=$(_ci_now)
  # A subshell with errexit on, outside any `||`: inside `cmd || rc=$?` bash ignores `set -e` in
  # the whole command, so a function part would run on past a failing line.
  set +e
  (set -e; "$@")
  rc=$?
  [ "$errexit" -eq 1 ] && set -e
  end=$(_ci_now)
  _ci_record "$name" "$(_ci_seconds "$start" "$end")" "$rc"
  return "$rc"
}

# A part started in the background; its output goes to a log printed by ci_wait, so the parts'
# lines do not interleave.
ci_background() {
  local name=$1 file
  shift
  file=$(mktemp)
  (
    set +e  # the part's own status is recorded, not inherited errexit's early exit
    start=$(_ci_now)
    (set -e; "$@") >"$file.log" 2>&1
    rc=$?
    printf '%s\t%s\n' "$(_ci_seconds "$start" "$(_ci_now)")" "$rc" >"$file"
  ) </dev/null >/dev/null 2>&1 &   # not holding CI's output open if the run stops early
  CI_BG_PIDS+=($!)
  CI_BG_NAMES+=("$name")
  CI_BG_FILES+=("$file")
}

# Waits for every background part, prints its log, records it; returns the first failure's status.
ci_wait() {
  local i seconds rc first=0
  for i in "${!CI_BG_PIDS[@]}"; do
    wait "${CI_BG_PIDS[$i]}" || true
    echo "--- ${CI_BG_NAMES[$i]} (ran in the background) ---"
    cat "${CI_BG_FILES[$i]}.log"
    IFS=$'\t' read -r seconds rc <"${CI_BG_FILES[$i]}" || { seconds=0; rc=1; }
    rm -f "${CI_BG_FILES[$i]}" "${CI_BG_FILES[$i]}.log"
    _ci_record "${CI_BG_NAMES[$i]} (background)" "$seconds" "$rc"
    [ "$rc" -ne 0 ] && [ "$first" -eq 0 ] && first=$rc
  done
  CI_BG_PIDS=()
  CI_BG_NAMES=()
  CI_BG_FILES=()
  return "$first"
}

# A background part the run did not wait for (a foreground part failed first): listed as it ended,
# or stopped (its process tree) and listed as such, so its log is not lost and nothing outlives CI.
_ci_kill_tree() {
  local child
  for child in $(pgrep -P "$1" || true); do _ci_kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}

_ci_collect_unwaited() {
  local i seconds rc
  for i in "${!CI_BG_PIDS[@]}"; do
    if [ ! -s "${CI_BG_FILES[$i]}" ]; then
      _ci_kill_tree "${CI_BG_PIDS[$i]}"
      printf '%s\t%s\n' "$(_ci_seconds "$CI_START" "$(_ci_now)")" 143 >"${CI_BG_FILES[$i]}"
    fi
  done
  ci_wait || true
}

ci_timing_table() {
  local rc=$? i total=0
  _ci_collect_unwaited
  [ "${#CI_PART_NAMES[@]}" -eq 0 ] && return "$rc"
  for i in "${!CI_PART_NAMES[@]}"; do
    total=$(awk -v a="$total" -v b="${CI_PART_SECONDS[$i]}" 'BEGIN { printf "%.1f", a + b }')
  done
  printf '\n%-44s %9s %7s %6s  %s\n' "CI part" "seconds" "min" "share" "status"
  for i in "${!CI_PART_NAMES[@]}"; do
    awk -v n="${CI_PART_NAMES[$i]}" -v s="${CI_PART_SECONDS[$i]}" -v t="$total" -v st="${CI_PART_STATUS[$i]}" \
      'BEGIN { printf "%-44s %9.1f %7.1f %5.0f%%  %s\n", n, s, s / 60, (t > 0 ? 100 * s / t : 0), st }'
  done
  awk -v t="$total" 'BEGIN { printf "%-44s %9.1f %7.1f\n", "sum of parts", t, t / 60 }'
  local wall
  wall=$(_ci_seconds "$CI_START" "$(_ci_now)")
  awk -v t="$wall" 'BEGIN { printf "%-44s %9.1f %7.1f\n", "wall (background parts overlap)", t, t / 60 }'
  return "$rc"
}
