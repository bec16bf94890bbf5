#!/usr/bin/env python3
"""Writes a generated GPU fleet in dcgm-exporter + node_exporter form, for
loading into a real Prometheus (OpenMetrics for promtool's backfill) or a real
VictoriaMetrics (JSON lines for its /api/v1/import).

Every host has 8 GPUs; host h is an input-pipeline case when h % 4 == 0 (all
GPUs, host CPU saturated), a thermal case when h % 4 == 1 (GPU 5 throttled),
else healthy. Each case is rendered once with a placeholder host and then
copied per host, so a thousand hosts cost string copies, not a thousand
simulations.

    fleet_gen.py --hosts N --start UNIX_S [--duration S] [--step S]
                 [--mixed-names] [--jobs J] (--om FILE | --jsonl FILE)   (FILE - : stdout)

--jobs J: the hosts form J training jobs of consecutive hosts (host h runs
job "job-<h * J // N>"), named on every GPU series by dcgm-exporter's
hpc_job label, as its --hpc-job-mapping-dir writes it.

--mixed-names: host 4 is named "GPU-004.dc1.example" by dcgm-exporter (case
and domain differ from node_exporter's "gpu004.dc1.example:9100"), host 8
only by IP address (instance="10.0.0.8:9400", no Hostname label); the rest
"gpuNNN". All of them join to one host each (host keys gpu004, 10.0.0.8);
both are input-pipeline cases, whose evidence needs the node's CPU series.
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "data", "recordings"))
import gen  # noqa: E402

CASES = ("input_pipeline", "thermal", "healthy")
PH = "@H@"


def case_of(h):
    return CASES[0] if h % 4 == 0 else CASES[1] if h % 4 == 1 else CASES[2]


def template(case, step, duration, start):
    import random
    rnd = random.Random(CASES.index(case))
    rec = gen.Rec(step, duration, start)
    for g in range(8):
        if case == "input_pipeline":
            gen.gpu_block(rec, g, rnd, util=0.45, sm=0.2, occ=0.15, tensor=0.1, pcie_rx=1e9, host=PH)
        elif case == "thermal" and g == 5:
            gen.gpu_block(rec, g, rnd, temp=91, clock=1200, throttle=0x20 | 0x40, sm=0.75, host=PH)
        else:
            gen.gpu_block(rec, g, rnd, host=PH)
    gen.host_block(rec, rnd, cpu_busy=0.97 if case == "input_pipeline" else 0.3,
                   psi_cpu=0.6 if case == "input_pipeline" else 0.02, instance=PH + ":9100")
    return rec


def names(h, mixed):
    """(dcgm host label pair, node_exporter host) for host h."""
    if mixed and h == 4:
        return ('Hostname="GPU-004.dc1.example"', "gpu-004.dc1.example")
    if mixed and h == 8:
        return ('instance="10.0.0.8:9400"', "10.0.0.8")
    return (f'Hostname="gpu-{h:03d}"', f"gpu-{h:03d}")


def fmt(v):
    v = float(v)
    return str(int(v)) if v.is_integer() else f"{v:.4g}" if abs(v) < 1e4 else str(round(v))


def job_label(h, hosts, jobs):
    """The hpc_job label pair of host h's GPU series ("" without jobs)."""
    return f',hpc_job="job-{h * jobs // hosts}"' if jobs else ""


def write_om(out, recs, hosts, mixed, jobs):
    fams = {}
    for case, rec in recs.items():
        for (name, labels), vals in rec.series.items():
            fams.setdefault(name, {}).setdefault(case, []).append((labels, vals))
    first = next(iter(recs.values()))
    for name, by_case in fams.items():
        t = first.types.get(name) or next(r.types[name] for r in recs.values() if name in r.types)
        fam = name[:-6] if t == "counter" and name.endswith("_total") else name
        out.write(f"# TYPE {fam} {t}\n")
        # One rendered block per case, copied per host.
        blocks = {}
        for case, rows in by_case.items():
            lines = []
            for labels, vals in rows:
                for i, v in enumerate(vals):
                    lines.append(f"{name}{{{labels}}} {fmt(v)} {first.start + i * first.step}\n")
            blocks[case] = "".join(lines)
        for h in range(hosts):
            block = blocks.get(case_of(h))
            if block is None:
                continue
            pair, node = names(h, mixed)
            out.write(block.replace(f'Hostname="{PH}"', pair + job_label(h, hosts, jobs)).replace(PH, node))
    out.write("# EOF\n")


def write_jsonl(out, recs, hosts, mixed, jobs):
    label = re.compile(r'(\w+)="([^"]*)"')
    blocks = {}
    for case, rec in recs.items():
        ts = json.dumps([(rec.start + i * rec.step) * 1000 for i in range(rec.n)])
        lines = []
        for (name, labels), vals in rec.series.items():
            metric = {"__name__": name}
            metric.update(label.findall(labels))
            values = "[" + ",".join(fmt(v) for v in vals) + "]"
            lines.append(f'{{"metric":{json.dumps(metric, separators=(",", ":"))},'
                         f'"values":{values},"timestamps":{ts}}}\n')
        blocks[case] = "".join(lines)
    for h in range(hosts):
        pair, node = names(h, mixed)
        k, v = pair.split("=", 1)
        job = f',"hpc_job":"job-{h * jobs // hosts}"' if jobs else ""
        out.write(blocks[case_of(h)].replace(f'"Hostname":"{PH}"', f'"{k}":{v}{job}').replace(PH, node))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, required=True)
    ap.add_argument("--start", type=int, required=True)
    ap.add_argument("--duration", type=int, default=3600)
    ap.add_argument("--step", type=int, default=15)
    ap.add_argument("--mixed-names", action="store_true")
    ap.add_argument("--jobs", type=int, default=0)
    ap.add_argument("--om")
    ap.add_argument("--jsonl")
    a = ap.parse_args()
    recs = {c: template(c, a.step, a.duration, a.start) for c in CASES}
    path = a.om or a.jsonl
    out = sys.stdout if path == "-" else open(path, "w")
    if a.jobs < 0 or a.jobs > a.hosts:
        ap.error("--jobs: between 0 and --hosts")
    (write_om if a.om else write_jsonl)(out, recs, a.hosts, a.mixed_names, a.jobs)
    out.flush()


if __name__ == "__main__":
    main()
