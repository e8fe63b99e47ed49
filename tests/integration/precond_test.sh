#!/usr/bin/env bash
# precond_test.sh - preconditions through the real kiln binary, no GPU
# needed. CPU: a kernel that handles whole chunks of 16 columns only
# (precond/rmsnorm_by16.c) passes with its /*@kiln require block, the
# verdict naming the visible shape it left out and keeping every hidden
# one; the same kernel without the block fails; a malformed block and one
# that admits no visible shape fail with clear reasons. CUDA: the static
# stage refuses every "require" entry but DIM % N == 0 as bad-manifest,
# naming the entry (before any GPU is needed).
#   precond_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
set -o pipefail
T=$tmp
FIX=$SRC/tests/integration/precond
verify() {   # verify OUT FILE ARGS...: the JSON verdict in OUT, exit status in rc
    local out=$1
    shift
    "$KILN" verify "$@" --no-daemon --json --timing-ms 200 >"$out" 2>"$out.err"
    rc=$?
}

begin "a C kernel with its precondition passes on the shapes it admits, v3 named as left out"
# prefill: 32x1024 64x4096 33x1000 128x2048 256x4096 512x2048; 9 + 2 hidden
verify $T/a.json "$FIX/rmsnorm_by16.c" --task rmsnorm --group prefill
[ $rc = 0 ] || fail "with its precondition: exit $rc: $(head -c 400 $T/a.json) $(head -c 300 $T/a.json.err)"
[ "$(json_get status $T/a.json)" = pass ] || fail "not a pass: $(json_get reason $T/a.json)"
[ "$(json_get preconditions.require $T/a.json)" = '["cols % 16 == 0"]' ] ||
    fail "require: $(json_get preconditions.require $T/a.json)"
[ "$(json_get preconditions.left_out $T/a.json)" = '[{"id": "v3", "dims": {"rows": 33, "cols": 1000}}]' ] ||
    fail "left out: $(json_get preconditions.left_out $T/a.json)"
json_get reason $T/a.json | grep -qF "every shape with cols % 16 == 0 (left out: v3 rows=33 cols=1000)" ||
    fail "the reason does not say what was left out: $(json_get reason $T/a.json)"
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
end "a C kernel with its precondition passes on the shapes it admits, v3 named as left out"

begin "the same kernel without its precondition fails"

sed '/@kiln require/d' "$FIX/rmsnorm_by16.c" >$T/none.c
verify $T/b.json $T/none.c --task rmsnorm --group prefill
[ $rc = 1 ] && [ "$(json_get status $T/b.json)" = fail ] || fail "without the precondition: exit $rc"
case $(json_get preconditions $T/b.json) in "" | null) ;; *) fail "preconditions listed for a kernel without" ;; esac
end "the same kernel without its precondition fails ($(json_get code $T/b.json))"

begin "a comparison in a C require block is bad-manifest, naming require[1]"

sed 's/"cols % 16 == 0"/"cols % 16 == 0", "cols >= 1024"/' "$FIX/rmsnorm_by16.c" >$T/bad.c
verify $T/c.json $T/bad.c --task rmsnorm --group prefill
[ $rc = 1 ] && [ "$(json_get code $T/c.json)" = bad-manifest ] || fail "cols >= 1024: exit $rc"
[ "$(json_get stage $T/c.json)" = static ] || fail "cols >= 1024 not refused at the static stage"
json_get reason $T/c.json | grep -qF "require[1]: 'cols >= 1024'" ||
    fail "the reason does not name the entry: $(json_get reason $T/c.json)"
end "a comparison in a C require block is bad-manifest, naming require[1]"

begin "preconditions that admit no visible shape fail, saying so"

sed 's/"cols % 16 == 0"/"cols % 65536 == 0"/' "$FIX/rmsnorm_by16.c" >$T/nothing.c
verify $T/d.json $T/nothing.c --task rmsnorm --group prefill
[ $rc = 1 ] && [ "$(json_get code $T/d.json)" = no-visible-shape ] || fail "cols % 65536: exit $rc"
json_get reason $T/d.json | grep -qF "no visible shape of group prefill satisfies the candidate's preconditions (cols % 65536 == 0)" ||
    fail "reason: $(json_get reason $T/d.json)"
end "preconditions that admit no visible shape fail, saying so"

begin "CUDA require entries other than DIM % N == 0 are bad-manifest at the static stage"

# CUDA, static stage: each refused entry is named; the good one gets past it.
for bad in 'cols > 8' 'cols == 4096' 'rows % 8 == 0 || cols % 8 == 0' 'cols % 0 == 0' \
           'cols % BLOCK == 0' 'cols % 8 == 1'; do
    sed "s/\"require\": \[\"cols % 8 == 0\"\]/\"require\": [\"cols % 8 == 0\", \"$bad\"]/" \
        "$FIX/rmsnorm_vec8.cu" >$T/bad.cu
    grep -qF "$bad" $T/bad.cu || fail "could not plant '$bad'"
    verify $T/e.json $T/bad.cu --task rmsnorm --backend cuda --dtype bf16
    [ "$(json_get code $T/e.json)" = bad-manifest ] && [ "$(json_get stage $T/e.json)" = static ] ||
        fail "'$bad': not bad-manifest at static: $(head -c 300 $T/e.json) $(head -c 300 $T/e.json.err)"
    json_get reason $T/e.json | grep -qF "manifest: require[1]: '$bad'" ||
        fail "'$bad': the reason does not name the entry: $(json_get reason $T/e.json)"
done
verify $T/f.json "$FIX/rmsnorm_vec8.cu" --task rmsnorm --backend cuda --dtype bf16
if grep -q '"status"' $T/f.json; then   # a GPU: a verdict past the static stage
    [ "$(json_get stage $T/f.json)" != static ] || fail "the good CUDA candidate fails at static: $(json_get reason $T/f.json)"
else                                    # none: the error after the static stage says so
    grep -qiE 'GPU|driver|CUDA' $T/f.json.err || fail "the good CUDA candidate: $(head -c 300 $T/f.json.err)"
fi
end "CUDA require entries other than DIM % N == 0 are bad-manifest at the static stage"
t_done
