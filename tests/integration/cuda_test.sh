#!/usr/bin/env bash
# cuda_test.sh - the CUDA backend end to end on a GPU (ctest label gpu; run
# by scripts/gpu-check.sh): the bf16 starter passes in process and through a
# real kilnd on its cuda:0 lane, and through the host-resident path
# (KILN_HOST_DATA=1); a worker that lies about the events (fault
# injection, EXPLOITS.md classes 16 and 17) is caught by the CUPTI and
# wall-clock timers; a speedup over 100x is suspect (class 18); the gemm
# starter passes against cuBLAS with gold from the CUDA reference. Exits 77
# (skipped) where there is no GPU.
#   cuda_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
cd "$SRC" || exit 2
need_gpu cuda
expect_verdict() {   # expect_verdict NAME WANT_STATUS WANT_CODE ARGS...
    local name=$1 want=$2 code=$3
    shift 3
    local out st cd
    begin
    out=$("$KILN" verify kernels/rmsnorm/cuda/starter.cu --task rmsnorm --dtype bf16 --json "$@" 2>"$tmp/err")
    st=$(json_get status <<<"$out" 2>/dev/null)
    cd=$(json_get code <<<"$out" 2>/dev/null)
    if [ "$st" != "$want" ] || [ "$cd" != "$code" ]; then
        problem "got $st/$cd, want $want/$code"
        problem "$( (grep -m3 -i 'reason\|flag\|error' <<<"$out"; tail -3 "$tmp/err") )"
    fi
    end "$name"
}
# the small CUDA group: the shapes these checks were set on
S=(--group small --timing-ms 500)
expect_verdict "the bf16 starter passes in process" pass ok --no-daemon "${S[@]}"
expect_verdict "events under-reported (x0.3) are suspect" suspect timer-disagreement --test-report-scale 0.3 "${S[@]}"
expect_verdict "events over-reported (x3) are suspect" suspect timer-disagreement --test-report-scale 3 "${S[@]}"
expect_verdict "events reported x0.001 are suspect" suspect timer-disagreement --test-report-scale 0.001 "${S[@]}"
expect_verdict "more than 100x over a 2 ms baseline is suspect" suspect speedup-ceiling --no-daemon \
    --baseline tests/integration/slow_baseline.cu --group decode --timing-ms 500
expect_verdict "through kilnd on its cuda:0 lane" pass ok --socket "$tmp/k.sock" "${S[@]}"
# The host-resident data path (KILN_HOST_DATA=1: the CUDA backend's second
# table, with gold from the C reference, or for gemm from the CUDA
# reference in a worker of its own).
KILN_HOST_DATA=1 expect_verdict "host-resident data: the bf16 starter passes" pass ok --no-daemon "${S[@]}"
begin "host-resident data: gemm with gold from its CUDA reference worker"
out=$(KILN_HOST_DATA=1 "$KILN" verify kernels/gemm/cuda/starter.cu --task gemm --dtype bf16 \
      --group small --json --no-daemon --timing-ms 500 2>"$tmp/err")
if [ "$(json_get status <<<"$out" 2>/dev/null)" != pass ]; then
    problem "host-resident gemm: $(json_get status <<<"$out" 2>/dev/null)/$(json_get code <<<"$out" 2>/dev/null)"
    problem "$( (grep -m3 -i 'reason\|flag\|error' <<<"$out"; tail -3 "$tmp/err") )"
fi
end

# gemm: gold from the CUDA reference in a worker of its own, timed against
# the built-in cuBLAS baseline; the verdict names cuBLAS's version and the
# device's peak, and no shape beats the roofline floor (flops at peak).
begin "gemm starter against cuBLAS, gold from the CUDA reference"
out=$("$KILN" verify kernels/gemm/cuda/starter.cu --task gemm --dtype bf16 --group small --json \
      --no-daemon --timing-ms 1000 2>"$tmp/gemm.err")
if ! { [ "$(json_get status <<<"$out" 2>/dev/null)" = pass ] && command -v python3 >/dev/null &&
   python3 - "$out" >"$tmp/gemm.check" 2>&1 <<'PY'; }; then
import json, sys
v = json.loads(sys.argv[1])
env = v["environment"]
assert env["gpu"].get("cublas", 0) > 0, env["gpu"]
assert env.get("peak_tflops", 0) > 100, env
for s in v["shapes"]:
    if "time" in s:
        assert 0 < s["roofline_fraction"] <= 1.0, (s["id"], s["roofline_fraction"])
        assert s["time"]["baseline"]["median_ns"] > 0, s
PY
    problem "gemm starter: $(json_get status <<<"$out" 2>/dev/null)/$(json_get code <<<"$out" 2>/dev/null)"
    problem "$( (grep -m3 -i 'reason\|flag' <<<"$out"; tail -3 "$tmp/gemm.err"; cat "$tmp/gemm.check" 2>/dev/null) )"
fi
end
t_done
