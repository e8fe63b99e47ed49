#!/usr/bin/env bash
# tunable_cuda_test.sh - the CUDA kernel families the offline tuner starts
# from (kernels/T/cuda/tunable.cu) are correct: kiln verify passes each
#  - on the small group (odd widths, 1 row, 1 column among its hidden
#    shapes), in f32, f16 and bf16, at the default, at each knob's
#    smallest and largest value, and at 8 settings drawn with a fixed seed
#    per family (family_settings.sh): 20-21 settings a family;
#  - on decode and prefill (LLM sizes), in bf16, at the default and three
#    fixed settings: a 16-CTA cluster of warps (non-portable), a 4-CTA
#    cluster of CTAs held in shared memory, persistent CTAs that prefetch.
# 183 + 24 = 207 verifications for the three, about 3.5 minutes on an H200
# (ctest runs one family a test). Every failure is listed before the test
# fails. ctest label gpu; exits 77 without a GPU.
#   tunable_cuda_test.sh BUILD_DIR SOURCE_DIR [TASK]   (default: all three)
. "$(dirname "$0")/lib.sh"
t_init -a '[TASK]' "$@"
TASKS=${T_ARGS[*]:-rmsnorm layernorm softmax}
need_gpu cuda "this test verifies CUDA kernels on one"
. "$SRC/tests/integration/family_settings.sh"
T=$tmp

BIG_SETTINGS=("TPR=32 CLUSTER=16 REGS=4"
              "TPR=128 CLUSTER=4 HOLD=1 UNROLL=2"
              "TPR=512 ROWS=2 REGS=4 PERSIST=2 PREFETCH=1 STREAM=1 OCC=2")
n=0 failed=0 start=$SECONDS
# verify TASK FILE SETTING GROUP DTYPE
verify() {
    local out=$T/v$n.json
    n=$((n + 1))
    "$KILN" verify "$2" --task "$1" --backend cuda --dtype "$5" --group "$4" --no-daemon \
        --json > "$out" 2> "$out.err" < /dev/null
    local rc=$?
    if [ $rc != 0 ] || [ "$(json_get status "$out" 2>/dev/null)" != pass ]; then
        failed=$((failed + 1))
        problem "$1 $4 $5 [${3:-default}]: exit $rc: $(json_get stage "$out" 2>/dev/null) $(json_get code "$out" 2>/dev/null) $(json_get reason "$out" 2>/dev/null) $(head -c 300 "$out.err")"
    fi
}

for task in $TASKS; do
    begin "$task: the family passes at its default, each knob's extremes and sampled settings"
    case $task in rmsnorm) seed=33 ;; layernorm) seed=34 ;; *) seed=35 ;; esac
    fam=$SRC/kernels/$task/cuda/tunable.cu
    i=0
    while IFS= read -r setting; do
        f=$T/$task-$i.cu
        family_apply "$fam" "$setting" "$f"
        for dt in f32 f16 bf16; do
            verify "$task" "$f" "$setting" small $dt
        done
        i=$((i + 1))
    done < <(family_settings "$fam" 8 $seed)
    for setting in "" "${BIG_SETTINGS[@]}"; do
        f=$T/$task-big-$i.cu
        family_apply "$fam" "$setting" "$f"
        i=$((i + 1))
        for group in decode prefill; do
            verify "$task" "$f" "$setting" $group bf16
        done
    done
    end "$task: $n verifications so far, $failed failed, $((SECONDS - start)) s"
done
t_done
