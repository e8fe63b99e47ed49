#!/usr/bin/env bash
# test.sh - build and run the whole ctest suite twice: a normal build (build/)
# and an AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/).
#
# It prints a line per finished test group (unit, red-team CPU and CUDA
# plants, integration, GPU), every failure in full, and ctest's closing
# lines; the whole build and test logs stay in DIR/build.log and
# DIR/ctest.log. Other build directories can be named:
#   scripts/test.sh [NORMAL_DIR ASAN_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
normal_dir=${1:-build}
asan_dir=${2:-build-asan}

# The group a test belongs to, from its name.
group_of() {
  case $1 in
    unit_*) echo unit ;;
    redteam_cpu_*) echo "red-team CPU plants" ;;
    redteam_cuda_*) echo "red-team CUDA plants" ;;
    gpu_*) echo "GPU tests" ;;
    *) echo integration ;;
  esac
}

# Per group: passed, failed and skipped counts, from ctest's result lines.
summarize() {
  local log=$1
  declare -A pass fail skip
  local order=() name status g
  while read -r name status; do
    g=$(group_of "$name")
    [[ -v "pass[$g]" ]] || { order+=("$g"); pass[$g]=0 fail[$g]=0 skip[$g]=0; }
    case $status in
      Passed) pass[$g]=$((pass[$g] + 1)) ;;
      *Skipped*|*Not\ Run*) skip[$g]=$((skip[$g] + 1)) ;;
      *) fail[$g]=$((fail[$g] + 1)) ;;
    esac
  done < <(sed -n 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) [ .]*\**\([A-Za-z][A-Za-z ]*[a-z]\).*/\1 \2/p' "$log")
  for g in "${order[@]}"; do
    printf '   %-22s %3d passed, %d failed, %d skipped\n' "$g" "${pass[$g]}" "${fail[$g]}" "${skip[$g]}"
  done
}

run_suite() {
  local dir=$1; shift
  echo "== test.sh: $dir ($*)"
  local t0=$SECONDS
  mkdir -p "$dir"
  if ! { cmake -S . -B "$dir" "$@" && cmake --build "$dir" -j "$jobs"; } >"$dir/build.log" 2>&1; then
    cat "$dir/build.log"
    echo "== test.sh: $dir: the build failed"
    return 1
  fi
  echo "   built in $((SECONDS - t0)) s ($dir/build.log)"
  local rc=0
  rm -rf "$dir/test-build-cache"   # the tests' build cache starts empty (tests/CMakeLists.txt)
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" >"$dir/ctest.log" 2>&1 || rc=$?
  summarize "$dir/ctest.log"
  if [ $rc -ne 0 ]; then
    echo "== test.sh: $dir: failures, in full:"
    # Each failing test's output, as ctest --output-on-failure printed it.
    awk '/Test *#[0-9]+: .*\*\*\*(Failed|Exception|Timeout)/ {show = 1}
         /Test *#[0-9]+: .*(Passed|Skipped)/ {show = 0}
         /tests passed, .* tests failed out of/ {show = 0}
         show' "$dir/ctest.log"
  fi
  grep -E "tests passed|tests failed|Total Test time" "$dir/ctest.log" || true
  # the names of the failed tests (skipped ones are counted above)
  sed -n '/The following tests FAILED/,/^$/p' "$dir/ctest.log"
  echo "   $dir: $((SECONDS - t0)) s in all ($dir/ctest.log)"
  return $rc
}

# Both suites run even when the first fails: CI shows every failure at once.
rc=0
run_suite "$normal_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE=OFF || rc=1
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite "$asan_dir" -DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON || rc=1
if [ $rc -ne 0 ]; then
  echo "== test.sh: failures (above)"
  exit 1
fi
echo "== test.sh: both suites passed"
