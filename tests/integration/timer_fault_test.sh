#!/usr/bin/env bash
# timer_fault_test.sh - fault injection: a worker that lies about the
# candidate's times must be caught by the verifier's cross-checks
# (kernel-charged CPU time and the round trip), and an honest one must not.
#   timer_fault_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
cd "$SRC" || exit 2
expect_verdict() {   # expect_verdict NAME WANT_STATUS WANT_CODE ARGS...
  local name=$1 want=$2 code=$3; shift 3
  local out
  begin
  out=$("$KILN" verify kernels/rmsnorm/cpu/starter.c --task rmsnorm --no-daemon --json "$@" 2>"$tmp/err")
  local st cd
  st=$(json_get status <<<"$out" 2>/dev/null)
  cd=$(json_get code <<<"$out" 2>/dev/null)
  if [ "$st" != "$want" ] || [ "$cd" != "$code" ]; then
    problem "got $st/$cd, want $want/$code"
    problem "$(grep -m3 -i 'reason\|flag' <<<"$out")"
  fi
  end "$name"
}
expect_verdict "under-reported times (x0.2) are suspect" suspect timer-disagreement --test-report-scale 0.2 --timing-ms 500
expect_verdict "over-reported times (x3) are suspect" suspect timer-disagreement --test-report-scale 3 --timing-ms 500
expect_verdict "honest times pass" pass ok --timing-ms 500
t_done
