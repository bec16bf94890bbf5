#!/usr/bin/env python3
"""Runs HolisticTraceAnalysis (HTA) on profiler traces and prints its numbers
as JSON in the shape of `gpulens trace --format json`, so the two can be
compared field by field (bench/trace-vs-hta.sh does that).

HTA is not a dependency of gpulens: point HTA_DIR at a checkout of
facebookresearch/HolisticTraceAnalysis. HTA_DISABLE_NS_ROUNDING=1 is set so that
HTA keeps exact float timestamps, the definition `gpulens trace --compat hta`
reproduces.

usage: HTA_DIR=/path/to/hta python3 bench/hta_reference.py TRACE.json[.gz]...
"""
import json
import os
import re
import sys
import time

os.environ.setdefault("HTA_DISABLE_NS_ROUNDING", "1")
sys.path.insert(0, os.environ.get("HTA_DIR", "."))
for extra in os.environ.get("HTA_EXTRA_PATH", "").split(":"):
    if extra:
        sys.path.insert(0, extra)

import logging  # noqa: E402

t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis  # noqa: E402
from hta.configs.config import logger  # noqa: E402

logger.setLevel(logging.ERROR)


def rank_of(path, fallback):
    import gzip
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        m = re.search(r'"rank":\s+(\d+)', f.read())
    return int(m.group(1)) if m else fallback


def main(paths):
    files = {}
    for i, p in enumerate(paths):
        files[rank_of(p, i)] = os.path.abspath(p)
    ta = TraceAnalysis(trace_files=files, trace_dir="/")
    ranks = sorted(files)
    out = {r: {} for r in ranks}

    tb = ta.get_temporal_breakdown(visualize=False)
    for row in tb.itertuples():
        out[row.rank]["temporal"] = {
            "idle_us": float(row[2]), "compute_us": float(row[3]),
            "non_compute_us": float(row[4]), "span_us": float(row[5])}

    ov = ta.get_comm_comp_overlap(visualize=False)
    for row in ov.itertuples():
        out[row.rank]["comm_comp_overlap_pct"] = float(row.comp_comm_overlap_pctg)

    kt, kernels = ta.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True,
                                              num_kernels=10**9, duration_ratio=1.0)
    for r in ranks:
        kr = kernels[kernels["rank"] == r]
        top = kr.sort_values("sum (us)", ascending=False).head(10)
        out[r]["top_kernels"] = [{"name": n, "total_us": float(s)}
                                 for n, s in zip(top["name"], top["sum (us)"])]
    if len(ranks) == 1:
        out[ranks[0]]["kernel_types"] = {k: float(v) for k, v in zip(kt["kernel_type"], kt["sum"])}

    for r in ranks:
        idle, _ = ta.get_idle_time_breakdown(ranks=[r], visualize=False)
        streams = {}
        for row in idle.itertuples():
            s = streams.setdefault(int(row.stream), {"stream": int(row.stream), "host_wait_us": 0.0,
                                                     "kernel_wait_us": 0.0, "other_us": 0.0})
            s[row.idle_category + "_us"] = float(row.idle_time)
        out[r]["idle_by_stream"] = sorted(streams.values(), key=lambda s: s["stream"])

    ls = ta.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
    for r, df in ls.items():
        d = df["launch_delay"]
        out[r]["launch_delay"] = {"count": int(len(d)), "mean_us": float(d.mean()) if len(d) else 0.0,
                                  "max_us": float(d.max()) if len(d) else 0.0}

    ql = ta.get_queue_length_summary(ranks=ranks)
    if ql is not None:
        for (r, stream), row in ql.iterrows():
            out[r].setdefault("queue_length", []).append(
                {"stream": int(stream), "max": float(row[("queue_length", "max")]),
                 "mean": float(row[("queue_length", "mean")])})

    elapsed = time.perf_counter() - t0
    json.dump({"elapsed_s": elapsed, "ranks": [dict(rank=r, **out[r]) for r in ranks]},
              sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
