#!/usr/bin/env python3
"""show_verdict.py - one verdict JSON as a few lines: status, stage times,
and per timed shape the kernel/event/span times, speedup and its interval,
sets and pairs. For reading benchmark output by eye.

    bench/show_verdict.py VERDICT.json
"""
import json
import sys

try:
    v = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print(f"  (no verdict: {e})")
    sys.exit(0)
print(" ", v["status"], v.get("code"), v.get("reason", "")[:300])
print("  stages", v.get("stage_seconds"), "seconds", v.get("seconds"))
for s in v.get("shapes", []):
    if "time" not in s:
        continue
    t = s["timers"]
    print(f"   {s['id']:4s} kern {t.get('candidate_kernel_ns', 0) / 1e3:9.2f} us  ev "
          f"{t.get('candidate_events_ns', 0) / 1e3:9.2f}  span {t.get('candidate_cupti_span_ns', 0) / 1e3:9.2f}"
          f"  base {t.get('baseline_kernel_ns', 0) / 1e3:9.2f}  x{s['speedup']:.4f} "
          f"{s.get('speedup_interval')} sets {t.get('sets')} pairs {t.get('pairs')} "
          f"GB/s {s.get('bytes', 0) / max(s['time']['candidate']['median_ns'], 1):.0f}")
