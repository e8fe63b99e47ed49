#!/usr/bin/env bash
# porting_test.sh - production kernels in the shapes they take, verified on
# a GPU without editing their bodies (issue 16; ctest label gpu, exits 77
# without one): a template with explicit instances and the host's
# vector-width choice as two launches with "when", kernels in an
# extern "C" { } block, kernels a macro declares (C++ names), and a
# cub::BlockReduce with a device assert. Each must pass on a copy of
# rmsnorm whose small group has widths the 8-wide instance cannot take
# (32x1028, 33x1001), so the template passes only if "when" picks the
# 1-wide instance there. The precondition fixture has its own test
# (precond_cuda_test.sh).
#   porting_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
set -o pipefail
need_gpu cuda "this test verifies CUDA candidates on one"
T=$tmp
export KILN_TASKS=$T/tasks

begin "a copy of rmsnorm whose small group has widths the 8-wide instance cannot take"
mkdir -p "$KILN_TASKS/rmsodd/base"
cp -r "$SRC/tasks/rmsnorm/." "$KILN_TASKS/rmsodd/"
sed -i 's/rmsnorm_reference/kiln_reference/' "$KILN_TASKS/rmsodd/reference.c"
sed 's/\brmsnorm(/rmsodd(/' "$SRC/kernels/rmsnorm/cpu/starter.c" > "$KILN_TASKS/rmsodd/base/starter.c"
cp "$SRC/kernels/rmsnorm/cuda/starter.cu" "$KILN_TASKS/rmsodd/base/starter.cu"
sed 's/"name": "rmsnorm"/"name": "rmsodd"/; s|"\.\./\.\./kernels/rmsnorm/[a-z]*/|"base/|g;
     s/{"rows": 32, "cols": 1024}/{"rows": 32, "cols": 1028}/g;
     s/{"rows": 33, "cols": 1000}/{"rows": 33, "cols": 1001}/g' \
    "$SRC/tasks/rmsnorm/task.json" > "$KILN_TASKS/rmsodd/task.json"
grep -q '"cols": 1028' "$KILN_TASKS/rmsodd/task.json" || fail "could not make the task"

for fix in rmsnorm_template rmsnorm_extern_block rmsnorm_macro rmsnorm_cub_assert; do
    begin "$fix passes"
    "$KILN" verify "$SRC/tests/integration/porting/$fix.cu" --task rmsodd --backend cuda \
        --dtype bf16 --group small --no-daemon --json > "$T/$fix.json" 2> "$T/$fix.err"
    rc=$?
    [ $rc = 0 ] && [ "$(json_get status "$T/$fix.json")" = pass ] ||
        fail "$fix: exit $rc: $(json_get reason "$T/$fix.json" 2>/dev/null) $(head -c 400 "$T/$fix.err")"
    end "$fix passes ($(json_get reason "$T/$fix.json"))"
done
t_done
