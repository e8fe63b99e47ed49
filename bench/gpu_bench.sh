#!/usr/bin/env bash
# gpu_bench.sh - benchmarks of the CUDA backend on a GPU (run by
# scripts/gpu-check.sh): for each task and dtype, one full verification of
# the starter kernel against itself (wall time per stage, the three timers,
# achieved bandwidth against the measured copy bandwidth), then five fresh
# verifications of one starter for the spread of its median.
#
#   bench/gpu_bench.sh BUILD_DIR OUT_DIR
set -uo pipefail
B=${1:?build dir}
O=${2:?out dir}
mkdir -p "$O"
KILN=$B/kiln
run() {   # run NAME ARGS... -> $O/NAME.json
    local name=$1
    shift
    local t0=$SECONDS
    timeout 300 "$KILN" verify "$@" --no-daemon --json >"$O/$name.json" 2>"$O/$name.err"
    echo "$name rc=$? wall=$((SECONDS - t0))s"
}
for task in rmsnorm softmax layernorm rope rope_interleaved gemm add_rmsnorm cross_entropy; do
    for dt in f32 f16 bf16; do
        # the newer tasks in bf16 alone, to keep gpu-check's time
        case $task-$dt in add_rmsnorm-f*|cross_entropy-f*) continue ;; esac
        [ -f "kernels/$task/cuda/starter.cu" ] || continue
        grep -q "\"cuda\"[^]]*\"$dt\"" "tasks/$task/task.json" || continue
        run "$task-$dt" "kernels/$task/cuda/starter.cu" --task "$task" --dtype "$dt"
    done
done
# gemm is timed against cuBLAS in both of its groups.
run "gemm-bf16-decode" kernels/gemm/cuda/starter.cu --task gemm --dtype bf16 --group decode
for i in 1 2 3 4 5; do
    run "repeat-$i" kernels/rmsnorm/cuda/starter.cu --task rmsnorm --dtype bf16
done
