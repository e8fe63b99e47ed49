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

# build_suite DIR CMAKE_ARGS...: configure and build DIR, the log in DIR/build.log.
build_suite() {
  local dir=$1; shift
  mkdir -p "$dir"
  { cmake -S . -B "$dir" "$@" && cmake --build "$dir" -j "$jobs"; } >"$dir/build.log" 2>&1
}

# test_suite DIR: run DIR's ctest, print the summary and the failures in full.
test_suite() {
  local dir=$1 t0=$SECONDS rc=0
  # two slots a core and one over: a busy test takes two, a waiting one one
  # (tests/CMakeLists.txt)
  ctest --test-dir "$dir" --output-on-failure -j $((2 * jobs + 1)) >"$dir/ctest.log" 2>&1 || rc=$?
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
  echo "   $dir: tested in $((SECONDS - t0)) s ($dir/ctest.log)"
  return $rc
}

# built DIR STATUS HOW: report a build (how long it took); a failed one's log in full.
built() {
  if [ "$2" -ne 0 ]; then
    cat "$1/build.log"
    echo "== test.sh: $1: the build failed"
    return 1
  fi
  echo "   built $3 ($1/build.log)"
}

# Both suites run even when the first fails: CI shows every failure at once.
# The sanitizer build is made while the normal suite runs, at idle priority
# (SCHED_IDLE, else nice 19): it takes only the cycles the tests leave, which
# were a fifth of the suite's on two cores, and yields to a test at once.
t_all=$SECONDS
rc=0
# Both suites share one build cache and one nvcc memo (tests/CMakeLists.txt
# says why), emptied here: a run's times never rest on an earlier run's.
mkdir -p "$normal_dir"
memo=$(cd "$normal_dir" && pwd)
rm -rf "$memo/test-build-cache" "$memo/test-nvcc-memo"
share=(-DKILN_TEST_BUILD_CACHE="$memo/test-build-cache" -DKILN_TEST_NVCC_MEMO="$memo/test-nvcc-memo")
echo "== test.sh: $normal_dir (-DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE=OFF)"
t0=$SECONDS
st=0
build_suite "$normal_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE=OFF "${share[@]}" || st=$?
built "$normal_dir" $st "in $((SECONDS - t0)) s" && normal_ok=1 || { normal_ok=0; rc=1; }
idle=(chrt --idle 0)
"${idle[@]}" true 2>/dev/null || idle=(nice -n 19)
t0=$SECONDS
( "${idle[@]}" bash -c "$(declare -f build_suite); jobs=$jobs; \
    build_suite $(printf '%q ' "$asan_dir" -DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON "${share[@]}")"
  echo $? >"$asan_dir/.build-status" ) &
asan_build=$!
if [ $normal_ok = 1 ]; then
  test_suite "$normal_dir" || rc=1
fi
t1=$SECONDS
wait $asan_build
echo "== test.sh: $asan_dir (-DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON)"
if built "$asan_dir" "$(cat "$asan_dir/.build-status" 2>/dev/null || echo 1)" \
    "beside the normal suite, at idle priority, in $((SECONDS - t0)) s ($((SECONDS - t1)) s after it)"; then
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 test_suite "$asan_dir" || rc=1
else
  rc=1
fi
rm -f "$asan_dir/.build-status"
echo "== test.sh: $((SECONDS - t_all)) s in all"
if [ $rc -ne 0 ]; then
  echo "== test.sh: failures (above)"
  exit 1
fi
echo "== test.sh: both suites passed"
