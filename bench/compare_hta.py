#!/usr/bin/env python3
"""Compares `gpulens trace --compat hta --format json` with bench/hta_reference.py
output field by field; prints a table and exits 1 if any number differs by more
than the tolerance (default 0.5 %, absolute floor 0.01 us for near-zero values).

usage: compare_hta.py GPULENS.json HTA.json [--tol 0.005]
"""
import json
import sys


def rel(a, b):
    if a is None or b is None:
        return 0.0 if a == b else float("inf")
    if abs(a - b) <= 0.01:
        return 0.0
    return abs(a - b) / max(abs(a), abs(b))


def main():
    ours = json.load(open(sys.argv[1]))
    hta = json.load(open(sys.argv[2]))
    tol = float(sys.argv[sys.argv.index("--tol") + 1]) if "--tol" in sys.argv else 0.005
    by_rank = {r["rank"]: r for r in ours["ranks"]}
    worst = 0.0
    rows = []
    for h in hta["ranks"]:
        o = by_rank[h["rank"]]
        pairs = []
        for k, v in h.get("temporal", {}).items():
            pairs.append((f"temporal.{k}", o["temporal"][k], v))
        if "comm_comp_overlap_pct" in h:
            hv = h["comm_comp_overlap_pct"]
            hv = None if hv != hv else hv  # NaN: no communication
            ov = o["comm_comp_overlap_pct"]
            pairs.append(("comm_comp_overlap_pct", None if ov is None else round(ov, 2), hv))
        ostreams = {s["stream"]: s for s in o["idle_by_stream"]}
        for s in h.get("idle_by_stream", []):
            for k in ("host_wait_us", "kernel_wait_us", "other_us"):
                pairs.append((f"idle[{s['stream']}].{k}", ostreams.get(s["stream"], {}).get(k), s[k]))
        if "kernel_types" in h:
            otypes = {t["type"]: t["us"] for t in o["kernel_types"]}
            for k, v in h["kernel_types"].items():
                pairs.append((f"kernel_types.{k.lower()}", otypes.get(k.lower(), 0.0), v))
        otop = {t["name"]: t["total_us"] for t in o["top_kernels"]}
        for i, t in enumerate(h.get("top_kernels", [])[:5]):
            pairs.append((f"top_kernels[{i}].total_us", otop.get(t["name"]), t["total_us"]))
        if "launch_delay" in h:
            for k in ("count", "mean_us", "max_us"):
                pairs.append((f"launch_delay.{k}", o["launch_delay"][k], h["launch_delay"][k]))
        oq = {q["stream"]: q for q in o["queue_length"]}
        for q in h.get("queue_length", []):
            for k in ("max", "mean"):
                pairs.append((f"queue[{q['stream']}].{k}", oq.get(q["stream"], {}).get(k), q[k]))
        for name, a, b in pairs:
            e = rel(a, b)
            worst = max(worst, e)
            rows.append((h["rank"], name, a, b, e))
    for r, name, a, b, e in rows:
        flag = "" if e <= tol else "  <-- differs"
        print(f"rank {r:<3} {name:<45} gpulens={a!s:<22} hta={b!s:<22} {100*e:.3f}%{flag}")
    print(f"worst relative difference: {100*worst:.4f}% ({len(rows)} numbers)")
    sys.exit(0 if worst <= tol else 1)


if __name__ == "__main__":
    main()
