#!/usr/bin/env python3
"""gpu_targets.py - the table of bench/gpu_targets.sh: each target of the
GPU-resident verification issue, the figure before (host-resident data,
measured on the H200 on 2026-12-01: shared/GPU.md and docs/BENCHMARKS.md),
the figure now, and met or missed.

    bench/gpu_targets.py OUT_DIR
"""
import glob
import os
import re
import sys

from gpu_summary import load   # bench/: the same reading of a verdict file

BEFORE = {   # host-resident data path, same H200 (see the module comment)
    "prefill": "98-115 s (16384x4096)",
    "large": "not measurable (>300 s)",
    "small": "3.4-5.4 s",
    "gemm-square": "20-29 s (gemm groups)",
    "events-cupti": "events +2.4 us (40-60%)",
    "self-ratio": "0.79-1.01x",
    "self-spread": "1.9-5.5%",
}


def walls(d):
    out = {}
    try:
        for line in open(os.path.join(d, "walls.txt")):
            m = re.match(r"(\S+) rc=(\d+) wall=([\d.]+)s", line)
            if m:
                out[m.group(1)] = (int(m.group(2)), float(m.group(3)))
    except OSError:
        pass
    return out


def timed(v):
    return [s for s in (v or {}).get("shapes", []) if "time" in s]


def row(name, before, now, ok):
    print(f"{name:44s} {before:26s} {now:34s} {'met' if ok else 'MISSED'}")


def wall_target(d, w, name, limit):
    rc, s = w.get(name, (None, None))
    v = load(os.path.join(d, name + ".json"))
    status = v.get("status", "?") if v else "no verdict"
    ok = rc is not None and s <= limit and status == "pass"
    group = name.split("-", 1)[1] if "-" in name else name
    before = BEFORE.get(name, BEFORE.get(group, ""))
    row(f"{name}: full verification <= {limit:g} s", before,
        f"{s:.2f} s ({status})" if s is not None else "not run", ok)
    return v


def timer_target(verdicts):
    worst, where = 0.0, ""
    ok = bool(verdicts)
    for name, v in verdicts.items():
        for s in timed(v):
            t = s.get("timers", {})
            for side in ("candidate", "baseline"):
                k, e = t.get(side + "_kernel_ns", 0), t.get(side + "_events_ns", 0)
                if not k or not e:
                    ok = False
                    continue
                gap = abs(e - k)
                allowed = max(0.02 * k, 1000.0)
                if gap / allowed > worst:
                    worst, where = gap / allowed, f"{name} {s['id']} {side}: {gap / 1e3:.2f} us of {k / 1e3:.1f}"
                ok = ok and gap <= allowed
    row("events vs CUPTI per launch <= max(2%, 1 us)", BEFORE["events-cupti"],
        f"worst {where}" if where else "no timed shapes", ok)


def self_targets(d):
    runs = [load(p) for p in sorted(glob.glob(os.path.join(d, "self-*.json")))]
    runs = [v for v in runs if v]
    per = {}
    for v in runs:
        for s in timed(v):
            per.setdefault(s["id"], []).append(s.get("speedup", 0))
    lo = min((min(x) for x in per.values()), default=0)
    hi = max((max(x) for x in per.values()), default=0)
    ok = len(runs) == 5 and all(len(x) == 5 for x in per.values()) and per and 0.99 <= lo and hi <= 1.01
    row("identical kernel: 0.99-1.01x every shape, 5 runs", BEFORE["self-ratio"],
        f"{lo:.4f}-{hi:.4f}x over {len(runs)} runs", ok)
    spread = max(((max(x) - min(x)) / (sum(x) / len(x)) for x in per.values() if x), default=1)
    row("spread of that ratio across the 5 runs <= 1%", BEFORE["self-spread"],
        f"{100 * spread:.2f}%", bool(per) and spread <= 0.01)
    return runs


def main():
    d = sys.argv[1]
    w = walls(d)
    print(f"{'target':44s} {'before':26s} {'now':34s} result")
    verdicts = {}
    for task in ("rmsnorm", "softmax", "layernorm"):
        for g, lim in (("prefill", 3), ("large", 6), ("small", 1)):
            name = f"{task}-{g}"
            verdicts[name] = wall_target(d, w, name, lim)
    verdicts["gemm-square"] = wall_target(d, w, "gemm-square", 6)
    timer_target({k: v for k, v in verdicts.items() if v})
    self_targets(d)
    print()
    print(f"{'verification':22s} {'shape':6s} {'sets':>4s} {'pairs':>5s} {'cand us':>9s} "
          f"{'base us':>9s} {'speedup [95% interval]':>28s} {'GB/s':>7s} {'TFLOP/s':>8s}")
    for name, v in sorted(verdicts.items()):
        for s in timed(v):
            t, c = s.get("timers", {}), s["time"]["candidate"]["median_ns"]
            iv = s.get("speedup_interval", [0, 0])
            print(f"{name:22s} {s['id']:6s} {t.get('sets', 0):4d} {t.get('pairs', 0):5d} "
                  f"{c / 1e3:9.2f} {s['time']['baseline']['median_ns'] / 1e3:9.2f} "
                  f"{s.get('speedup', 0):8.4f} [{iv[0]:.4f}, {iv[1]:.4f}] "
                  f"{s.get('bytes', 0) / c:7.0f} {s.get('flops', 0) / c / 1e3:8.1f}")


if __name__ == "__main__":
    main()
