#!/usr/bin/env bash
# roofline_test.sh - the CPU roofline floor never rejects an honest kernel
# for its baseline's speed (issue 30, class 7). The measured bandwidth is
# scaled down (KILN_TEST_BANDWIDTH_SCALE, as a machine busy through every
# reading would measure it) so that the floor falls between a fast parent
# (the vectorised plant, which then beats it) and a slow honest child (the
# task's starter, which stays well above it):
#   - the child passes against that parent (it used to be `suspect`,
#     baseline-below-roofline), and every shape's floor is the measured one
#     or the parent's median, whichever is lower;
#   - a candidate that claims 20x less time than it took is still caught:
#     its claim counts for nothing (the time is the CPU the kernel charged,
#     less a trusted overhead: docs/sandbox.md), so it is held to the floor
#     at its true time and flagged for the lie (timer-disagreement);
#   - without the fault, the vectorised kernel passes against the task's
#     baseline, and no floor is above the baseline's median.
# The measured floors are recomputed here from kiln's bandwidth cache, so
# that the test fails if the parent did not in fact beat the floor.
#   roofline_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
set -eo pipefail
T=$tmp
cp "$SRC/tests/redteam/cpu/rmsnorm_honest_avx512.c" "$T/parent.c"
CHILD=$SRC/kernels/rmsnorm/cpu/starter.c
SCALE=0.08

verify() {   # name want_rc args...
    local name=$1 want=$2 rc=0
    shift 2
    "$KILN" verify "$@" --task rmsnorm --no-daemon --json --timing-ms 600 >"$T/$name.json" \
        2>"$T/$name.err" || rc=$?
    # exit 1 where 0 was wanted: roof() accepts a timer-only suspect, and says so
    [ "$rc" = "$want" ] || { [ "$want" = 0 ] && [ "$rc" = 1 ]; } ||
        fail "$name: exit $rc, expected $want"$'\n'"$(cat "$T/$name.err")"$'\n'"$(verdict_of "$T/$name.json")"
}
# verdict_of FILE: the verdict's status, code, reason and flags, on one line.
verdict_of() {
    local k
    for k in status code reason flags; do json_get "$k" "$1" 2>/dev/null || true; done | tr '\n' ' '
}

# roof NAME STATUS SCALE BEATEN [FLAG...]: the verdict's status and the
# flags it must hold; every timed shape's floor is min(measured, baseline
# median), the measured floor being bytes / (bandwidth x SCALE) at the
# shape's bucket as kiln's cache holds it; BEATEN=1: on some shape the
# baseline beat the measured floor.
# What it found is shown as comment lines; what is wrong fails the test.
roof() {
    local py
    py=$(python3 - "$T/$1.json" "$KILN_STATE/bandwidth-cpu.json" "$@" 2>&1 <<'PY'
import json, sys
path, cache, name, status, scale, beaten, *flags = sys.argv[1:]
v = json.load(open(path))
table = {int(k): x for k, x in json.load(open(cache))["bytes_per_s"].items()}
def bad(msg):
    sys.exit(f"{name}: {msg}\n  reason: {v['reason']}\n  flags: {v['flags']}")
def bound(nbytes):   # bandwidth.c: the bucket, and the best figure at it or above
    b = 16 << 10
    while b * 2 <= nbytes and b * 2 <= 256 << 20:
        b *= 2
    return max(x for k, x in table.items() if k >= b) * float(scale)
# The CPU timer cross-check (docs/sandbox.md) can flag an honest kernel on a
# loaded machine; it is not what this test is about, and the floor is still
# checked below. Anything else is a failure.
timer_only = v["status"] == "suspect" and v["flags"] and \
    all(x.startswith("timer-disagreement") for x in v["flags"])
if v["status"] != status and not (status == "pass" and timer_only):
    bad(f"status {v['status']} ({v['code']}), expected {status}")
if v["status"] != status:
    print(f"note: {name}: suspect for timer-disagreement only (a loaded machine?): {v['flags'][0]}")
for f in flags:
    if not any(x.startswith(f) for x in v["flags"]):
        bad(f"no flag {f!r}")
if any(x.startswith("baseline-below-roofline") for x in v["flags"]):
    bad("the baseline's speed flagged the candidate")
timed = [s for s in v["shapes"] if "time" in s]
if not timed:
    bad("no timed shape")
under = 0
for s in timed:
    measured = s["bytes"] / bound(s["bytes"]) * 1e9
    base = s["time"]["baseline"]["median_ns"]
    under += base < measured
    if abs(s["floor_ns"] - min(measured, base)) > 1e-6 * measured:
        bad(f"shape {s['id']}: floor {s['floor_ns']:.0f} ns, expected min({measured:.0f}, {base:.0f})")
if beaten == "1" and not under:
    bad("the baseline beat the measured floor on no shape: the test proved nothing")
print(f"{name}: {v['status']} ({v['code']}), speedup {v['summary']['geomean_speedup']:.2f}x, "
      f"the baseline under the measured floor on {under} of {len(timed)} shapes")
PY
) || fail "$py"
    printf '%s\n' "$py" | sed 's/^/# /'
}

export KILN_TEST_BANDWIDTH_SCALE=$SCALE
begin "an honest child passes against a parent that beat the scaled floor; every floor is min(measured, the parent's median)"
verify child 0 "$CHILD" --baseline "$T/parent.c"
roof child pass $SCALE 1
end
begin "a candidate that claims 20x less time than it took is held to the floor at its true time and flagged timer-disagreement"
verify liar 1 "$T/parent.c" --baseline "$T/parent.c" --test-report-scale 0.05
roof liar suspect $SCALE 0 timer-disagreement
end
unset KILN_TEST_BANDWIDTH_SCALE
begin "the vectorised kernel passes against the task's baseline; no floor is above the baseline's median"
verify honest 0 "$T/parent.c"
roof honest pass 1 0
end
t_done
