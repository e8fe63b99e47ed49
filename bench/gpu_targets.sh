#!/usr/bin/env bash
# gpu_targets.sh - the GPU-resident verification targets (issue 12), measured
# through a running kilnd on a GPU (run by scripts/gpu-check.sh): full
# verifications of the rmsnorm, softmax and layernorm starters (bf16) on the
# prefill, large and small groups, gemm at 4096^3 against cuBLAS, and five
# fresh verifications of the rmsnorm starter against itself (the task's
# baseline is the starter) for the self-ratio and its spread. The verdicts
# land in OUT_DIR as JSON; bench/gpu_targets.py prints the table.
#
#   bench/gpu_targets.sh BUILD_DIR OUT_DIR
set -uo pipefail
B=${1:?build dir}
O=${2:?out dir}
mkdir -p "$O"
KILN=$B/kiln
export KILN_SOCKET=$O/kilnd.sock
"$KILN" daemon start >"$O/daemon.txt" 2>&1 || { echo "gpu_targets: kilnd did not start"; cat "$O/daemon.txt"; exit 1; }
run() {   # run NAME ARGS... -> $O/NAME.json, with the wall time seen here
    local name=$1
    shift
    local t0 t1
    t0=$(date +%s.%N)
    timeout 300 "$KILN" verify "$@" --json >"$O/$name.json" 2>"$O/$name.err"
    local rc=$?
    t1=$(date +%s.%N)
    echo "$name rc=$rc wall=$(awk "BEGIN{printf \"%.3f\", $t1 - $t0}")s" | tee -a "$O/walls.txt"
}
: >"$O/walls.txt"
for task in rmsnorm softmax layernorm; do
    for g in prefill large small; do
        run "$task-$g" "kernels/$task/cuda/starter.cu" --task "$task" --dtype bf16 --group "$g"
    done
done
run "gemm-square" kernels/gemm/cuda/starter.cu --task gemm --dtype bf16 --group square
for i in 1 2 3 4 5; do
    run "self-$i" kernels/rmsnorm/cuda/starter.cu --task rmsnorm --dtype bf16 --group prefill
done
"$KILN" daemon stop >/dev/null 2>&1
exit 0
