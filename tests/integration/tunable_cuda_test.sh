#!/usr/bin/env bash
# tunable_cuda_test.sh - the CUDA tunable kernels the offline tuner starts
# from (kernels/T/cuda/tunable.cu) are correct: each passes kiln verify on
# the small group in bf16 and f32 at its default knobs, and at a second
# setting that takes the other paths (a warp per row, nothing kept in
# registers, 4-wide loads, streaming hints). ctest label gpu; exits 77
# without a GPU.
#   tunable_cuda_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
set -o pipefail
need_gpu cuda "this test verifies CUDA kernels on one"
T=$tmp

for task in rmsnorm softmax layernorm; do
    begin "$task tunable passes (default and alternative knobs, bf16 and f32)"
    src=$SRC/kernels/$task/cuda/tunable.cu
    alt=$T/$task-alt.cu
    sed -e 's/^#define VEC [0-9]*/#define VEC 4/' -e 's/^#define WARP_ROWS [0-9]*/#define WARP_ROWS 1/' \
        -e 's/^#define KEEP [0-9]*/#define KEEP 0/' -e 's/^#define STREAM [0-9]*/#define STREAM 1/' \
        -e 's/^#define UNROLL [0-9]*/#define UNROLL 2/' -e 's/^#define BLOCK [0-9]*/#define BLOCK 128/' \
        "$src" > "$alt"
    for f in "$src" "$alt"; do
        for dt in bf16 f32; do
            out=$T/$task-$(basename "$f" .cu)-$dt.json
            "$KILN" verify "$f" --task $task --backend cuda --dtype $dt --group small --no-daemon \
                --json > "$out" 2> "$out.err"
            rc=$?
            [ $rc = 0 ] && [ "$(json_get status "$out")" = pass ] ||
                fail "$task $(basename "$f") $dt: exit $rc: $(json_get reason "$out" 2>/dev/null) $(head -c 300 "$out.err")"
        done
    done
    end
done
t_done
