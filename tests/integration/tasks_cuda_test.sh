#!/usr/bin/env bash
# tasks_cuda_test.sh - add_rmsnorm and cross_entropy on a GPU (ctest label
# gpu; run by scripts/gpu-check.sh): the worker's probe gives a read
# bandwidth beside the copy one; each task's starter passes in f32, f16 and
# bf16 with device-resident data (integer targets drawn on the device, two
# outputs checked there, gold from the fp64 CUDA reference, which rounds r
# to the run's dtype) and in bf16 with host-resident data (targets drawn on
# the host, gold from the C reference built for bf16); at the default
# group, cross_entropy's floor takes the read bandwidth (its mix: reads,
# next to no writes) and add_rmsnorm's the copy bandwidth, and neither
# honest starter is suspect; the CUDA tunables pass at two settings each.
# Exits 77 (skipped) where there is no GPU.
#   tasks_cuda_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
need_gpu cuda "this test verifies the tasks' kernels on one"
WORKER=$BUILD/kiln-worker-cuda
cd "$SRC" || exit 2

# 1. The probe: copy and read bandwidth, both plausible.
begin "the probe measures read bandwidth beside copy bandwidth"
probe=$("$WORKER" --probe 2>&1)
if ! msg=$(python3 - "$probe" 2>&1 <<'PY'

import sys
f = dict(kv.split("=", 1) for kv in sys.argv[1].strip().split("|") if "=" in kv)
copy, read = float(f["copy_bw"]), float(f["read_bw"])
assert copy > 1e11 and read > 1e11, (copy, read)
assert 0.5 < read / copy < 3, (copy, read)
PY
); then
    problem "the probe: $probe"
    problem "$msg"
fi
bws=$(tr '|' '\n' <<<"$probe" | grep _bw | tr '\n' ' ')
end "the probe measures read bandwidth beside copy bandwidth: $bws"

verify() {   # verify NAME JSON_OUT ARGS...: one kiln verify, its status checked
    local name=$1 out=$2
    shift 2
    begin "$name"
    "$KILN" verify "$@" --json --no-daemon >"$out" 2>"$out.err"
    if [ "$(json_get status "$out" 2>/dev/null)" != pass ]; then
        problem "status $(json_get status "$out" 2>&1), code $(json_get code "$out" 2>&1): $(json_get reason "$out" 2>&1)"
        problem "$(tail -3 "$out.err")"
    fi
    end
}

# 2. The starters, device-resident, every dtype; and host-resident in bf16.
for t in add_rmsnorm cross_entropy; do
    for dt in f32 f16 bf16; do
        verify "$t starter passes, $dt, device-resident (group small)" "$tmp/$t-$dt.json" \
            "kernels/$t/cuda/starter.cu" --task "$t" --dtype "$dt" --group small --timing-ms 300
    done
    KILN_HOST_DATA=1 verify "$t starter passes, bf16, host-resident (gold from the C reference)" \
        "$tmp/$t-host.json" "kernels/$t/cuda/starter.cu" --task "$t" --dtype bf16 --group small \
        --timing-ms 300
done

# The CUDA tunables (kernels/T/cuda/tunable.cu, where the tuner starts) at
# their defaults and at a setting that takes the other paths.
for t in add_rmsnorm cross_entropy; do
    alt=$tmp/$t-tunable-alt.cu
    sed -e 's/^#define VEC [0-9]*/#define VEC 4/' -e 's/^#define BLOCK [0-9]*/#define BLOCK 128/' \
        -e 's/^#define KEEP [0-9]*/#define KEEP 0/' -e 's/^#define ONLINE [0-9]*/#define ONLINE 0/' \
        "kernels/$t/cuda/tunable.cu" > "$alt"
    for f in "kernels/$t/cuda/tunable.cu" "$alt"; do
        for dt in bf16 f32; do
            verify "$t $(basename "$f" .cu) passes, $dt (group small)" "$tmp/$t-$(basename "$f" .cu)-$dt.json" \
                "$f" --task "$t" --dtype "$dt" --group small --timing-ms 300
        done
    done
done

# 3. The floor's bandwidth at the default group: the mix of each task's
# reads and writes, from the probe figures the verifier cached.
cat >"$tmp/floor.py" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
line = [l for l in open(sys.argv[2]) if l.strip()][-1].split("\t")
copy, read = float(line[1]), float(line[2])
bw = v["environment"]["bandwidth_gbps"] * 1e9
# cross_entropy writes 4 bytes a row (under 0.1% of its bytes): the read
# bandwidth, never taken below the copy one (on the H200 the read probe
# measured 3983 GB/s, under copy's 4229: a floor must be an upper bound);
# add_rmsnorm reads and writes alike (w's bytes aside): the copy one
want = max(read, copy) if sys.argv[3] == "cross_entropy" else copy
assert abs(bw - want) / max(read, copy) < 0.01, (bw, copy, read)
for s in v["shapes"]:
    if "time" in s:
        assert 0 < s["roofline_fraction"] < 1.25, (s["id"], s["roofline_fraction"])
print("floor bandwidth %.0f GB/s (copy %.0f, read %.0f)" % (bw / 1e9, copy / 1e9, read / 1e9))
PY
for t in cross_entropy add_rmsnorm; do
    out=$tmp/$t-prefill.json
    verify "$t starter passes at prefill, bf16, not suspect" "$out" "kernels/$t/cuda/starter.cu" \
        --task "$t" --dtype bf16 --timing-ms 500
    begin
    msg=$(python3 "$tmp/floor.py" "$out" "$KILN_STATE/gpu-bandwidth.txt" "$t" 2>&1) ||
        problem "$msg"
    end "$t's floor takes the bandwidth of its mix: $msg"
done
t_done
