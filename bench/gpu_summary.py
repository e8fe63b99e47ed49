#!/usr/bin/env python3
"""gpu_summary.py - the table of bench/gpu_bench.sh's verdicts (run by
scripts/gpu-check.sh where python3 exists; the raw JSON stays in OUT).

Per verification: status, wall seconds by stage, the worst disagreement
of CUDA events with the CUPTI kernel span over the timed shapes, and the
bandwidth the starter achieves on its largest timed shape against the
measured copy bandwidth. Then, for compute-bound tasks (gemm), per timed
shape the TFLOP/s of the starter and of the cuBLAS baseline and the peak.
Then the spread of the median over repeat-*.json.
"""
import glob
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def largest(v):
    timed = [s for s in v.get("shapes", []) if "time" in s]
    return max(timed, key=lambda s: s.get("bytes", 0)) if timed else None


def row(name, v):
    if v is None:
        return f"{name:22s} (no verdict)"
    st = v.get("stage_seconds", {})
    worst = 0.0
    for s in v.get("shapes", []):
        t = s.get("timers", {})
        ev, cu = t.get("candidate_events_ns", 0), t.get("candidate_cupti_ns", 0)
        if ev > 0 and cu > 0:
            worst = max(worst, abs(ev - cu) / ev)
    big = largest(v)
    bw = v.get("environment", {}).get("bandwidth_gbps", 0)
    ach = frac = 0.0
    if big:
        ach = big["bytes"] / big["time"]["candidate"]["median_ns"]  # bytes/ns = GB/s
        frac = ach / bw if bw else 0
    return (f"{name:22s} {v['status']:8s} {v.get('seconds', 0):6.2f} {st.get('compile', 0):6.2f} "
            f"{st.get('correctness', 0):6.2f} {st.get('timing', 0):6.2f} {100 * worst:7.1f}% "
            f"{ach:8.0f} {100 * frac:5.0f}%")


def main():
    d = sys.argv[1]
    print(f"{'verification':22s} {'status':8s} {'total':>6s} {'build':>6s} {'check':>6s} "
          f"{'timing':>6s} {'ev-cupti':>8s} {'GB/s':>8s} {'of bw':>6s}")
    for p in sorted(glob.glob(os.path.join(d, "*.json"))):
        name = os.path.basename(p)[:-5]
        print(row(name, load(p)))
    for p in sorted(glob.glob(os.path.join(d, "*.json"))):
        v = load(p)
        peak = (v or {}).get("environment", {}).get("peak_tflops", 0)
        if not v or not peak or v.get("task") != "gemm":
            continue
        print(f"{os.path.basename(p)[:-5]}: per shape, starter / cuBLAS TFLOP/s "
              f"(dense peak {peak:.0f})")
        for s in v.get("shapes", []):
            if "time" not in s:
                continue
            c = s["flops"] / s["time"]["candidate"]["median_ns"] / 1e3
            b = s["flops"] / s["time"]["baseline"]["median_ns"] / 1e3
            dims = " ".join(f"{k}={n:.0f}" for k, n in s.get("dims", {}).items())
            print(f"  {s['id']:4s} {dims:24s} {c:7.1f} / {b:7.1f}  ({100 * c / b:.0f}% of cuBLAS, "
                  f"{100 * c / peak:.0f}% of peak)")
    meds = {}
    for p in sorted(glob.glob(os.path.join(d, "repeat-*.json"))):
        v = load(p)
        for s in (v or {}).get("shapes", []):
            if "time" in s:
                meds.setdefault(s["id"], []).append(s["time"]["candidate"]["median_ns"])
    for sid, m in sorted(meds.items()):
        if len(m) > 1:
            mid = sorted(m)[len(m) // 2]
            print(f"repeat spread {sid}: {len(m)} runs, median {mid / 1e3:.2f} us, "
                  f"(max-min)/median {100 * (max(m) - min(m)) / mid:.2f}%")


if __name__ == "__main__":
    main()
