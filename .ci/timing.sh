# Per-part wall times of a CI script, printed as a table when it exits (sourced by .ci/run).
#
#   source .ci/timing.sh
#   trap ci_timing_table EXIT
#   ci_part "fast suite" make test        # runs the command, records its seconds and status
#
# A part runs in a subshell with `set -e` (a function part stops at its first failing line; what it
# exports does not outlive it). A failing part is recorded as failed and its status returned, so
# `set -e` still stops the run; the EXIT trap then prints what ran up to there. Set CI_TIMING_FILE to also append the rows
# (tab-separated: part, seconds, status) to a file.

CI_PART_NAMES=()
CI_PART_SECONDS=()
CI_PART_STATUS=()

_ci_now() { date +%s.%N; }

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
  CI_PART_NAMES+=("$name")
  CI_PART_SECONDS+=("$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')")
  CI_PART_STATUS+=("$([ "$rc" -eq 0 ] && echo ok || echo "failed ($rc)")")
  if [ -n "${CI_TIMING_FILE:-}" ]; then
    printf '%s\t%s\t%s\n' "$name" "${CI_PART_SECONDS[-1]}" "${CI_PART_STATUS[-1]}" >>"$CI_TIMING_FILE"
  fi
  return "$rc"
}

ci_timing_table() {
  local rc=$? i total=0
  [ "${#CI_PART_NAMES[@]}" -eq 0 ] && return "$rc"
  for i in "${!CI_PART_NAMES[@]}"; do
    total=$(awk -v a="$total" -v b="${CI_PART_SECONDS[$i]}" 'BEGIN { printf "%.1f", a + b }')
  done
  printf '\n%-44s %9s %7s %6s  %s\n' "CI part" "seconds" "min" "share" "status"
  for i in "${!CI_PART_NAMES[@]}"; do
    awk -v n="${CI_PART_NAMES[$i]}" -v s="${CI_PART_SECONDS[$i]}" -v t="$total" -v st="${CI_PART_STATUS[$i]}" \
      'BEGIN { printf "%-44s %9.1f %7.1f %5.0f%%  %s\n", n, s, s / 60, (t > 0 ? 100 * s / t : 0), st }'
  done
  awk -v t="$total" 'BEGIN { printf "%-44s %9.1f %7.1f\n", "total", t, t / 60 }'
  return "$rc"
}
