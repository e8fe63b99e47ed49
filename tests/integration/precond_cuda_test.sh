#!/usr/bin/env bash
# precond_cuda_test.sh - on a GPU (ctest label gpu; exits 77, saying why,
# without one): precond/rmsnorm_vec8.cu, a bf16 rmsnorm that moves 8 bf16
# per load with no tail, verified on a copy of rmsnorm whose small group
# has two widths it cannot take (32x1028: rows not 16-byte aligned; 33x1001:
# a tail). With "require": ["cols % 8 == 0"] it passes, the verdict naming
# v1 and v3 as left out and keeping every hidden shape; the same kernel
# without the precondition fails.
#   precond_cuda_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
set -o pipefail
need_gpu "this test verifies a CUDA candidate on one"
T=$tmp
export KILN_TASKS=$T/tasks

begin "the vectorised kernel with cols % 8 == 0 passes; v1 and v3 named as left out"
# rmsodd: rmsnorm with 32x1024 -> 32x1028 and 33x1000 -> 33x1001.
mkdir -p "$KILN_TASKS"
cp -r "$SRC/tasks/rmsnorm" "$KILN_TASKS/rmsodd"
sed -i 's/rmsnorm_reference/kiln_reference/' "$KILN_TASKS/rmsodd/reference.c"
mkdir -p "$KILN_TASKS/rmsodd/base"
sed 's/\brmsnorm(/rmsodd(/' "$SRC/kernels/rmsnorm/cpu/starter.c" > "$KILN_TASKS/rmsodd/base/starter.c"
cp "$SRC/kernels/rmsnorm/cuda/starter.cu" "$KILN_TASKS/rmsodd/base/starter.cu"
sed 's/"name": "rmsnorm"/"name": "rmsodd"/; s|"\.\./\.\./kernels/rmsnorm/[a-z]*/|"base/|g;
     s/{"rows": 32, "cols": 1024}/{"rows": 32, "cols": 1028}/g;
     s/{"rows": 33, "cols": 1000}/{"rows": 33, "cols": 1001}/g' \
    "$SRC/tasks/rmsnorm/task.json" > "$KILN_TASKS/rmsodd/task.json"
grep -q '"cols": 1028' "$KILN_TASKS/rmsodd/task.json" || fail "could not make the task"
FIX=$SRC/tests/integration/precond/rmsnorm_vec8.cu

"$KILN" verify "$FIX" --task rmsodd --backend cuda --dtype bf16 --group small --timing-ms 500 \
    --no-daemon --json > $T/a.json 2> $T/a.err
rc=$?
[ $rc = 0 ] && [ "$(json_get status $T/a.json)" = pass ] ||
    fail "with its precondition: exit $rc: $(json_get reason $T/a.json) $(head -c 300 $T/a.err)"
[ "$(json_get preconditions.left_out $T/a.json)" = \
  '[{"id": "v1", "dims": {"rows": 32, "cols": 1028}}, {"id": "v3", "dims": {"rows": 33, "cols": 1001}}]' ] ||
    fail "left out: $(json_get preconditions.left_out $T/a.json)"
python3 - "$T/a.json" "$SRC/tasks/rmsnorm/hidden.json" <<'EOF' || fail "shapes"
import json, sys
v = json.load(open(sys.argv[1]))
g = json.load(open(sys.argv[2]))["cuda_groups"]["small"]
vis = [s["id"] for s in v["shapes"] if s["visible"]]
assert vis == ["v2", "v4", "v5", "v6"], vis
assert all(s["visible"] for s in v["shapes"]), "a hidden shape has an entry of its own"
hid = v["hidden"]
want = len(g["shapes"]) + g["random"]["count"]
assert hid == {"shapes": want, "status": "pass"}, "the hidden stage: %s, want %d shapes passed" % (hid, want)
EOF
end

begin "the same kernel without the precondition fails"

sed 's/"scratch": \[\],/"scratch": []}/; /"require"/d' "$FIX" > $T/none.cu
grep -q require $T/none.cu && fail "could not remove the precondition"
"$KILN" verify $T/none.cu --task rmsodd --backend cuda --dtype bf16 --group small --timing-ms 500 \
    --no-daemon --json > $T/b.json 2> $T/b.err
rc=$?
[ $rc = 1 ] && [ "$(json_get status $T/b.json)" = fail ] ||
    fail "without the precondition: exit $rc: $(json_get reason $T/b.json) $(head -c 300 $T/b.err)"
end "the same kernel without the precondition fails: $(json_get reason $T/b.json)"
t_done
