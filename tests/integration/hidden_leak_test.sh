#!/usr/bin/env bash
# hidden_leak_test.sh - nothing about a hidden shape leaves the verifier but
# its id, pass or fail, and a code (issue: hidden shapes leak). Two CPU
# candidates fail only on hidden shapes, one by crashing after printing its
# dims, one by being slightly wrong; their verdicts (as kiln.db, notes,
# reports and prompts get them) must hold no dims text, no per-shape
# numbers for hidden shapes, and job times rounded to 0.1 s.
#   hidden_leak_test.sh KILN SOURCE_DIR
set -euo pipefail
KILN=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export KILN_STATE=$T/state
fail() { echo "FAIL: $*" >&2; exit 1; }
for plant in crash_loud wrong_hidden; do
    set +e
    "$KILN" verify "$SRC/tests/integration/hidden_leak/$plant.c" --task rmsnorm --no-daemon --json \
        >"$T/$plant.json" 2>"$T/$plant.err"
    rc=$?
    set -e
    [ $rc = 1 ] || { cat "$T/$plant.err"; fail "$plant: exit $rc, expected 1 (fail)"; }
    python3 - "$T/$plant.json" "$SRC/tasks/rmsnorm/hidden.json" "$plant" <<'PY' || exit 1
import json, re, sys
v = json.load(open(sys.argv[1]))
hidden = json.load(open(sys.argv[2]))
plant = sys.argv[3]
def bad(msg):
    print(f"FAIL: {plant}: {msg}", file=sys.stderr)
    sys.exit(1)
if v["status"] != "fail" or v["stage"] != "hidden":
    bad(f"expected fail at stage hidden, got {v['status']} at {v['stage']} ({v['reason']})")
want = "crash" if plant == "crash_loud" else "wrong-output"
if v["code"] != want:
    bad(f"code {v['code']}, expected {want}")
text = json.dumps(v)
if "LEAKDIMS" in text:
    bad("the candidate's own output reached the verdict")
for field in ("reason", "feedback"):
    if re.search(r"\d", v[field].replace(re.search(r"h\d+", v[field]).group(0), "")):
        bad(f"{field} holds a number: {v[field]!r}")
dims = set()
for s in hidden["groups"]["prefill"]["shapes"]:
    dims.update(str(x) for x in s.values() if x > 40)
for s in v["shapes"]:
    if s["visible"]:
        continue
    if set(s) - {"id", "visible", "dtype", "status", "code"}:
        bad(f"hidden shape {s['id']} carries {sorted(set(s))}")
    for d in dims:
        if re.search(rf"\b{d}\b", json.dumps(s)):
            bad(f"hidden shape {s['id']} shows {d}")
failed = [s for s in v["shapes"] if not s["visible"] and s.get("status") == "fail"]
if len(failed) != 1 or failed[0].get("code") != want:
    bad(f"expected one failed hidden shape with code {want}: {failed}")
def tenth(x):
    return x is None or abs(x * 10 - round(x * 10)) < 1e-9
for k in ["seconds"] + [f"stage_seconds.{s}" for s in v["stage_seconds"]]:
    x = v["seconds"] if k == "seconds" else v["stage_seconds"][k.split(".")[1]]
    if not tenth(x):
        bad(f"{k} = {x} is not rounded to 0.1 s")
for k, x in v.get("rusage", {}).items():
    if not tenth(x):
        bad(f"rusage.{k} = {x} is not rounded to 0.1 s")
print(f"ok: {plant}: {v['reason']}")
PY
done
echo "hidden_leak_test: passed"
