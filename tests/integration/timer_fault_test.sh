#!/usr/bin/env bash
# timer_fault_test.sh - fault injection: a worker that lies about the
# candidate's times must be caught by the verifier's cross-checks
# (kernel-charged CPU time and the round trip), and an honest one must not.
#   timer_fault_test.sh KILN SOURCE_DIR
set -u
KILN=$1
cd "$2" || exit 2
pass=0 fail=0
check() {   # check NAME WANT_STATUS WANT_CODE ARGS...
  local name=$1 want=$2 code=$3; shift 3
  local out
  out=$("$KILN" verify kernels/rmsnorm/cpu/starter.c --task rmsnorm --no-daemon --json "$@" 2>&1)
  local st cd
  st=$(grep -m1 '"status"' <<<"$out" | sed 's/.*"status":[[:space:]]*"\([a-z]*\)".*/\1/')
  cd=$(grep -m1 '"code"' <<<"$out" | sed 's/.*"code":[[:space:]]*"\([a-z-]*\)".*/\1/')
  if [ "$st" = "$want" ] && [ "$cd" = "$code" ]; then
    echo "ok - $name"; pass=$((pass + 1))
  else
    echo "not ok - $name: got $st/$cd, want $want/$code"; fail=$((fail + 1))
    grep -m3 -i 'reason\|flag' <<<"$out" | sed 's/^/#   /'
  fi
}
check "under-reported times (x0.2) are suspect" suspect timer-disagreement --test-report-scale 0.2 --timing-ms 500
check "over-reported times (x3) are suspect" suspect timer-disagreement --test-report-scale 3 --timing-ms 500
check "honest times pass" pass ok --timing-ms 500
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
