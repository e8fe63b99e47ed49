#!/usr/bin/env bash
# family_compile_test.sh - every CUDA kernel family (kernels/T/cuda/tunable.cu)
# compiles, without a GPU: at its default and at each knob's smallest and
# largest value (family_settings.sh), for f32, f16 and bf16, with nvcc for
# sm_90a, warning-free. Exits 77 without nvcc. Whether the kernels are right
# is tunable_cuda_test.sh's business, on a GPU.
#   family_compile_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
need_nvcc
. "$SRC/tests/integration/family_settings.sh"
T=$tmp

# One compile: task, setting index, dtype; its log in $T/TASK-I-DT.log.
compile_one() {
    local task=$1 i=$2 dt=$3 base=$T/$1-$2
    "$NVCC" -arch=sm_90a -cubin -I "$SRC/worker/cuda" -DKILN_DTYPE_"$dt" -x cu "$base.cu" \
        -o "$base-$dt.cubin" > "$base-$dt.log" 2>&1 || echo "exit $?" >> "$base-$dt.log"
}
export -f compile_one
export NVCC SRC T

jobs=()
for task in rmsnorm layernorm softmax; do
    i=0
    while IFS= read -r setting; do
        family_apply "$SRC/kernels/$task/cuda/tunable.cu" "$setting" "$T/$task-$i.cu"
        echo "${setting:-default}" > "$T/$task-$i.setting"
        for dt in F32 F16 BF16; do
            jobs+=("$task $i $dt")
        done
        i=$((i + 1))
    done < <(family_settings "$SRC/kernels/$task/cuda/tunable.cu" 0 0)
done
printf '%s\n' "${jobs[@]}" | xargs -P 2 -L 1 bash -c 'compile_one "$@"' _

begin "every family compiles at its default and every knob extreme, f32 f16 bf16"
bad=0
for j in "${jobs[@]}"; do
    read -r task i dt <<< "$j"
    log=$T/$task-$i-$dt.log
    if [ -s "$log" ] || [ ! -s "$T/$task-$i-$dt.cubin" ]; then
        problem "$task $dt at $(cat "$T/$task-$i.setting"): $(head -c 600 "$log")"
        bad=$((bad + 1))
    fi
done
end "${#jobs[@]} compiles, $bad failed (each family at its default and every knob extreme, f32 f16 bf16)"
t_done
