#!/usr/bin/env bash
# precond_test.sh - preconditions through the real kiln binary, no GPU
# needed. CPU: a kernel that handles whole chunks of 16 columns only
# (precond/rmsnorm_by16.c) passes with its /*@kiln require block, the
# verdict naming the visible shape it left out and keeping every hidden
# one; the same kernel without the block fails; a malformed block and one
# that admits no visible shape fail with clear reasons. CUDA: the static
# stage refuses every "require" entry but DIM % N == 0 as bad-manifest,
# naming the entry (before any GPU is needed).
#   precond_test.sh KILN SOURCE_DIR
set -uo pipefail
KILN=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export KILN_STATE=$T/state
fail() { echo "FAIL: $*" >&2; exit 1; }
FIX=$SRC/tests/integration/precond
verify() {   # verify OUT FILE ARGS...: the JSON verdict in OUT, exit status in rc
    local out=$1
    shift
    "$KILN" verify "$@" --no-daemon --json --timing-ms 200 >"$out" 2>"$out.err"
    rc=$?
}
field() { python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v.get(k) if isinstance(v, dict) else None
print(v if not isinstance(v, (dict, list)) else json.dumps(v))' "$1" "$2"; }

# prefill: 32x1024 64x4096 33x1000 128x2048 256x4096 512x2048; 9 + 2 hidden
verify $T/a.json "$FIX/rmsnorm_by16.c" --task rmsnorm --group prefill
[ $rc = 0 ] || fail "with its precondition: exit $rc: $(head -c 400 $T/a.json) $(head -c 300 $T/a.json.err)"
[ "$(field $T/a.json status)" = pass ] || fail "not a pass: $(field $T/a.json reason)"
[ "$(field $T/a.json preconditions.require)" = '["cols % 16 == 0"]' ] ||
    fail "require: $(field $T/a.json preconditions.require)"
[ "$(field $T/a.json preconditions.left_out)" = '[{"id": "v3", "dims": {"rows": 33, "cols": 1000}}]' ] ||
    fail "left out: $(field $T/a.json preconditions.left_out)"
field $T/a.json reason | grep -qF "every shape with cols % 16 == 0 (left out: v3 rows=33 cols=1000)" ||
    fail "the reason does not say what was left out: $(field $T/a.json reason)"
python3 - "$T/a.json" <<'EOF' || fail "shapes"
import json, sys
v = json.load(open(sys.argv[1]))
ids = [s["id"] for s in v["shapes"]]
vis = [s for s in v["shapes"] if s["visible"]]
assert [s["id"] for s in vis] == ["v1", "v2", "v4", "v5", "v6"], ids
assert all(s["dims"]["cols"] % 16 == 0 and "speedup" in s for s in vis), "a kept shape untimed"
assert all(s["visible"] for s in v["shapes"]), "a hidden shape has an entry of its own"
hid = v["hidden"]
assert hid == {"shapes": 11, "status": "pass"}, "the hidden stage: %s, want the group's 9 + 2 passed" % hid
EOF
echo "ok: a C kernel with its precondition passes on the shapes it admits, v3 named as left out"

sed '/@kiln require/d' "$FIX/rmsnorm_by16.c" >$T/none.c
verify $T/b.json $T/none.c --task rmsnorm --group prefill
[ $rc = 1 ] && [ "$(field $T/b.json status)" = fail ] || fail "without the precondition: exit $rc"
[ "$(field $T/b.json preconditions)" = None ] || fail "preconditions listed for a kernel without"
echo "ok: the same kernel without its precondition fails ($(field $T/b.json code))"

sed 's/"cols % 16 == 0"/"cols % 16 == 0", "cols >= 1024"/' "$FIX/rmsnorm_by16.c" >$T/bad.c
verify $T/c.json $T/bad.c --task rmsnorm --group prefill
[ $rc = 1 ] && [ "$(field $T/c.json code)" = bad-manifest ] || fail "cols >= 1024: exit $rc"
[ "$(field $T/c.json stage)" = static ] || fail "cols >= 1024 not refused at the static stage"
field $T/c.json reason | grep -qF "require[1]: 'cols >= 1024'" ||
    fail "the reason does not name the entry: $(field $T/c.json reason)"
echo "ok: a comparison in a C require block is bad-manifest, naming require[1]"

sed 's/"cols % 16 == 0"/"cols % 65536 == 0"/' "$FIX/rmsnorm_by16.c" >$T/nothing.c
verify $T/d.json $T/nothing.c --task rmsnorm --group prefill
[ $rc = 1 ] && [ "$(field $T/d.json code)" = no-visible-shape ] || fail "cols % 65536: exit $rc"
field $T/d.json reason | grep -qF "no visible shape of group prefill satisfies the candidate's preconditions (cols % 65536 == 0)" ||
    fail "reason: $(field $T/d.json reason)"
echo "ok: preconditions that admit no visible shape fail, saying so"

# CUDA, static stage: each refused entry is named; the good one gets past it.
for bad in 'cols > 8' 'cols == 4096' 'rows % 8 == 0 || cols % 8 == 0' 'cols % 0 == 0' \
           'cols % BLOCK == 0' 'cols % 8 == 1'; do
    sed "s/\"require\": \[\"cols % 8 == 0\"\]/\"require\": [\"cols % 8 == 0\", \"$bad\"]/" \
        "$FIX/rmsnorm_vec8.cu" >$T/bad.cu
    grep -qF "$bad" $T/bad.cu || fail "could not plant '$bad'"
    verify $T/e.json $T/bad.cu --task rmsnorm --backend cuda --dtype bf16
    [ "$(field $T/e.json code)" = bad-manifest ] && [ "$(field $T/e.json stage)" = static ] ||
        fail "'$bad': not bad-manifest at static: $(head -c 300 $T/e.json) $(head -c 300 $T/e.json.err)"
    field $T/e.json reason | grep -qF "manifest: require[1]: '$bad'" ||
        fail "'$bad': the reason does not name the entry: $(field $T/e.json reason)"
done
verify $T/f.json "$FIX/rmsnorm_vec8.cu" --task rmsnorm --backend cuda --dtype bf16
if grep -q '"status"' $T/f.json; then   # a GPU: a verdict past the static stage
    [ "$(field $T/f.json stage)" != static ] || fail "the good CUDA candidate fails at static: $(field $T/f.json reason)"
else                                    # none: the error after the static stage says so
    grep -qiE 'GPU|driver|CUDA' $T/f.json.err || fail "the good CUDA candidate: $(head -c 300 $T/f.json.err)"
fi
echo "ok: CUDA require entries other than DIM % N == 0 are bad-manifest at the static stage"
echo "precond_test: passed"
