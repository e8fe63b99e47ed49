#!/usr/bin/env bash
# knob_sweep.sh - verify one kernel at several knob settings, in-process, and
# print per setting its status, geomean speedup over the task's baseline and
# its time and bandwidth at one shape. A quick look at a knob space before a
# tune run (the tuner's own choices are in the run's record).
#
#   bench/knob_sweep.sh BUILD TASK KERNEL DTYPE GROUP SHAPE_ID "K=V K=V" ["K=V" ...]
#
# Each setting rewrites the kernel's "#define K V" lines in a copy.
set -uo pipefail
B=${1:?build dir} T=${2:?task} K=${3:?kernel} D=${4:?dtype} G=${5:?group} S=${6:?shape id}
shift 6
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for setting in "$@"; do
    f=$tmp/k.cu
    cp "$K" "$f"
    for kv in $setting; do
        sed -i -E "s/^#define ${kv%%=*} [^ ]+/#define ${kv%%=*} ${kv#*=}/" "$f"
    done
    timeout 120 "$B/kiln" verify "$f" --task "$T" --backend cuda --dtype "$D" --group "$G" \
        --no-daemon --json >"$tmp/v.json" 2>"$tmp/v.err"
    python3 - "$tmp/v.json" "$S" "$setting" <<'PY'
import json, sys
path, sid, setting = sys.argv[1:]
try:
    v = json.load(open(path))
except Exception as e:
    print(f"{setting:40s} no verdict ({e})")
    sys.exit(0)
line = f"{setting:40s} {v['status']:5s}"
if v["status"] != "pass":
    print(f"{line} {v.get('stage')} {v.get('code')}: {v.get('reason','')[:100]}")
    sys.exit(0)
bw = v["environment"].get("bandwidth_gbps", 0)
sh = next((s for s in v["shapes"] if s["id"] == sid), None)
g = v.get("summary", {}).get("geomean_speedup")
ns = sh["time"]["candidate"]["median_ns"]
gbps = sh["bytes"] / ns
print(f"{line} geomean {g:.3f}  {sid} {ns/1e3:7.1f} us {gbps:6.0f} GB/s "
      f"({100*gbps/bw:.0f}% of {bw:.0f}) baseline {sh['time']['baseline']['median_ns']/1e3:.1f} us")
PY
done
