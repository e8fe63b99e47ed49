#!/usr/bin/env bash
# tune_gpu.sh - the search issue's tuner targets on a GPU: an offline tune
# (`kiln search TASK --backend cuda --dtype bf16`, prefill group, from the
# task's tunable kernel) of each TASK through a running kilnd for SECONDS,
# then what it kept: `kiln status`, the kept kernel's knob lines, and one
# fresh verification of that kernel with its per-shape bandwidth, beside
# the copy bandwidth kiln measures on the same GPU. Run by hand on the
# lent GPU (scripts/gpu-check.sh does not: it takes minutes).
#
#   bench/tune_gpu.sh BUILD_DIR OUT_DIR SECONDS TASK [TASK ...]
set -uo pipefail
B=$(readlink -f "${1:?build dir}") O=${2:?out dir} SECS=${3:?seconds}
shift 3
mkdir -p "$O"
O=$(readlink -f "$O")
KILN=$B/kiln
export KILN_SOCKET=$O/kilnd.sock
"$KILN" daemon start >"$O/daemon.txt" 2>&1 || { echo "tune_gpu: kilnd did not start"; cat "$O/daemon.txt"; exit 1; }
for task in "$@"; do
    ws=$O/ws-$task
    t0=$(date +%s.%N)
    "$KILN" search "$task" --backend cuda --dtype bf16 --group prefill --drafts 4 \
        --budget "${SECS}s" --workspace "$ws" >"$O/$task-search.txt" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    echo "== $task: search rc=$rc in $(awk "BEGIN{printf \"%.0f\", $t1 - $t0}") s"
    tail -12 "$O/$task-search.txt"
    "$KILN" status --workspace "$ws" >"$O/$task-status.txt" 2>&1
    sed -n 1,25p "$O/$task-status.txt"
    best=$O/$task-best.cu
    git -C "$ws" show "HEAD:$(git -C "$ws" ls-files | grep '\.cu$' | head -1)" >"$best" 2>/dev/null
    echo "kept kernel's knobs: $(grep -E '^#define [A-Z_]+ [0-9]+ //@kiln tune' "$best" | awk '{printf "%s=%s ", $2, $3}')"
    "$KILN" verify "$best" --task "$task" --backend cuda --dtype bf16 --group prefill --json \
        >"$O/$task-best.json" 2>"$O/$task-best.err"
    python3 - "$O/$task-best.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
bw = v["environment"].get("bandwidth_gbps", 0)
print(f"fresh verification: {v['status']}, geomean {v['summary']['geomean_speedup']:.3f}x "
      f"over the starter; copy bandwidth measured {bw:.0f} GB/s")
for s in v["shapes"]:
    if not s.get("visible"):
        continue
    ns = s["time"]["candidate"]["median_ns"]
    d = s["dims"]
    print(f"  {s['id']:3s} {d['rows']:6d}x{d['cols']:<6d} {ns/1e3:7.1f} us {s['bytes']/ns:6.0f} GB/s "
          f"({100*s['bytes']/ns/bw:.0f}% of copy)  starter {s['time']['baseline']['median_ns']/1e3:.1f} us")
PY
done
"$KILN" daemon stop >/dev/null 2>&1
exit 0
