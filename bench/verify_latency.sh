#!/usr/bin/env bash
# verify_latency.sh - wall time of full verifications of the starter kernels,
# in process and through kilnd, N runs each; prints the median and range.
#   bench/verify_latency.sh [N]   (default 5)
set -u
cd "$(dirname "$0")/.."
N=${1:-5}
KILN=$PWD/build/kiln
tmp=$(mktemp -d)
export KILN_SOCKET=$tmp/k.sock KILN_STATE=$tmp/state
trap '"$KILN" daemon stop >/dev/null 2>&1; rm -rf "$tmp"' EXIT
"$KILN" daemon start >/dev/null

measure() {   # measure LABEL ARGS...: N wall times in seconds
  local label=$1; shift
  local times=()
  for ((i = 0; i < N; i++)); do
    local t0 t1
    t0=$(date +%s.%N)
    "$KILN" verify "$@" >/dev/null 2>&1
    t1=$(date +%s.%N)
    times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk -v l="$label" '
    {v[NR] = $1} END {printf "%-44s median %.2f s  (min %.2f, max %.2f, n=%d)\n", l, v[int((NR + 1) / 2)], v[1], v[NR], NR}'
}

for task in rmsnorm softmax; do
  for group in decode prefill; do
    measure "$task $group, in process (--no-daemon)" kernels/$task/cpu/starter.c --task $task --group $group --no-daemon
    measure "$task $group, through kilnd" kernels/$task/cpu/starter.c --task $task --group $group
  done
done
