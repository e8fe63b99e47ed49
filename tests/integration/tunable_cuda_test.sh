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
#   tunable_cuda_test.sh KILN SOURCE_DIR [TASK ...]   (default: all three)
set -uo pipefail
KILN=$(readlink -f -- "$1")
SRC=$(readlink -f -- "$2")
shift 2
TASKS=${*:-rmsnorm layernorm softmax}
if [ ! -e /dev/nvidia0 ] || ! nvidia-smi -L > /dev/null 2>&1 ||
   [ ! -x "$(dirname "$KILN")/kiln-worker-cuda" ]; then
    echo "skipped: no NVIDIA GPU or no CUDA build (this test verifies CUDA kernels on one)"
    exit 77
fi
. "$SRC/tests/integration/family_settings.sh"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export KILN_STATE=$T/state
field() { python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(" ".join(str(d.get(k, "")) for k in sys.argv[2:]))' "$@"; }

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
    if [ $rc != 0 ] || [ "$(field "$out" status 2>/dev/null)" != pass ]; then
        failed=$((failed + 1))
        echo "FAIL: $1 $4 $5 [${3:-default}]: exit $rc: $(field "$out" status stage code reason 2>/dev/null) $(head -c 300 "$out.err")" >&2
    fi
}

for task in $TASKS; do
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
    echo "$task: $n verifications so far, $failed failed, $((SECONDS - start)) s"
done
[ $failed = 0 ] || { echo "FAIL: $failed of $n verifications" >&2; exit 1; }
echo "ok: $n verifications of the kernel families passed ($((SECONDS - start)) s)"
