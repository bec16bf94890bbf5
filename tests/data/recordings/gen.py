#!/usr/bin/env python3
"""Writes the diagnosis test recordings: one small OpenMetrics file per case,
in dcgm-exporter + node_exporter + vLLM form (one case in gpulens' own names),
at 1 s, 15 s or 60 s resolution. Deterministic (fixed seed, fixed start).

    python3 gen.py [OUT_DIR] [--start UNIX_SECONDS]

The test suite checks each file's expected top cause (expected.txt).
"""
import math
import os
import random
import sys

START = 1764410400  # 2025-11-29T10:00:00Z


class Rec:
    def __init__(self, step, duration, start):
        self.step, self.n, self.start = step, int(duration // step), start
        self.series = {}  # (name, labels) -> [values]
        self.types = {}

    def times(self):
        return [self.start + i * self.step for i in range(self.n)]

    def add(self, name, labels, values, mtype="gauge"):
        self.series[(name, labels)] = values
        self.types[name] = mtype

    def write(self, path):
        fams = {}
        for (name, labels), vals in self.series.items():
            fams.setdefault(name, []).append((labels, vals))
        with open(path, "w") as f:
            for name, rows in fams.items():
                t = self.types[name]
                fam = name
                if t == "counter" and name.endswith("_total"):
                    fam = name[:-6]
                if t == "histogram":
                    fam = name[: -len("_bucket")]
                f.write(f"# TYPE {fam} {t}\n")
                for labels, vals in rows:
                    for i, v in enumerate(vals):
                        if v is None:
                            continue
                        ts = self.start + i * self.step
                        v = float(v)
                        vs = str(int(v)) if v.is_integer() else f"{v:.4g}" if abs(v) < 1e4 else str(round(v))
                        f.write(f"{name}{{{labels}}} {vs} {ts}\n")
            f.write("# EOF\n")


def gauge(n, base, jitter=0.0, rnd=None):
    return [max(0.0, base + (rnd.uniform(-jitter, jitter) if rnd else 0)) for _ in range(n)]


def counter(rates, step, start=1000.0):
    out, v = [], start
    for r in rates:
        v += r * step
        out.append(round(v, 3))
    return out


def dcgm_labels(gpu, host="node1"):
    # A GPU UUID is unique across machines (diagnosis joins by it): the host is part of it.
    return f'gpu="{gpu}",UUID="GPU-{host}-{gpu:04d}",modelName="NVIDIA H100 80GB HBM3",Hostname="{host}"'


def gpu_block(rec, gpu, rnd, util=0.95, sm=0.8, occ=0.5, tensor=0.5, dram=0.4, pcie_rx=2e9, pcie_tx=1e9,
              fb_used=40000, temp=65, power=500, clock=1980, throttle=0, gen=5, width=16, xid=0,
              nvlink=0.0, profiling=True, host="node1"):
    n = rec.n
    L = dcgm_labels(gpu, host)
    seq = lambda x, j=0.0: x if isinstance(x, list) else gauge(n, x, j if x else 0.0, rnd)
    rec.add("DCGM_FI_DEV_GPU_UTIL", L, [round(min(100, v * 100)) for v in seq(util, 0.02)])
    rec.add("DCGM_FI_DEV_FB_USED", L, seq(fb_used))
    rec.add("DCGM_FI_DEV_FB_FREE", L, [81559 - v for v in seq(fb_used)])
    rec.add("DCGM_FI_DEV_GPU_TEMP", L, seq(temp, 1))
    rec.add("DCGM_FI_DEV_POWER_USAGE", L, seq(power, 5))
    rec.add("DCGM_FI_DEV_SM_CLOCK", L, seq(clock))
    rec.add("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", L, seq(throttle))
    rec.add("DCGM_FI_DEV_XID_ERRORS", L, seq(xid))
    rec.add("DCGM_FI_DEV_PCIE_LINK_GEN", L, seq(gen))
    rec.add("DCGM_FI_DEV_PCIE_MAX_LINK_GEN", L, gauge(n, 5))
    rec.add("DCGM_FI_DEV_PCIE_LINK_WIDTH", L, seq(width))
    rec.add("DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", L, gauge(n, 16))
    rec.add("DCGM_FI_PROF_PCIE_RX_BYTES", L, seq(pcie_rx, 1e8))
    rec.add("DCGM_FI_PROF_PCIE_TX_BYTES", L, seq(pcie_tx, 1e8))
    if profiling:
        rec.add("DCGM_FI_PROF_GR_ENGINE_ACTIVE", L, seq(util, 0.02))
        rec.add("DCGM_FI_PROF_SM_ACTIVE", L, seq(sm, 0.02))
        rec.add("DCGM_FI_PROF_SM_OCCUPANCY", L, seq(occ, 0.02))
        rec.add("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", L, seq(tensor, 0.02))
        rec.add("DCGM_FI_PROF_DRAM_ACTIVE", L, seq(dram, 0.02))
        rec.add("DCGM_FI_PROF_NVLINK_RX_BYTES", L, seq(nvlink * 450e9, 1e8))
        rec.add("DCGM_FI_PROF_NVLINK_TX_BYTES", L, seq(nvlink * 450e9, 1e8))


def host_block(rec, rnd, cpu_busy=0.3, iowait=0.01, psi_cpu=0.02, psi_io=0.01, disk=0.1, nic=1e8,
               ib=5e9, ib_ports=True, instance="node1:9100", ncpu=32):
    n, step = rec.n, rec.step
    L = f'instance="{instance}",job="node"'
    seq = lambda x, j=0.0: x if isinstance(x, list) else gauge(n, x, j, rnd)
    busy, iow = seq(cpu_busy, 0.02), seq(iowait)
    for mode in ("user", "system", "idle", "iowait"):
        if mode == "user":
            r = [ncpu * b * 0.8 for b in busy]
        elif mode == "system":
            r = [ncpu * b * 0.2 for b in busy]
        elif mode == "iowait":
            r = [ncpu * w for w in iow]
        else:
            r = [ncpu * max(0.0, 1 - b - w) for b, w in zip(busy, iow)]
        rec.add("node_cpu_seconds_total", f'cpu="all",{L},mode="{mode}"', counter(r, step), "counter")
    rec.add("node_pressure_cpu_waiting_seconds_total", L, counter(seq(psi_cpu), step), "counter")
    rec.add("node_pressure_io_waiting_seconds_total", L, counter(seq(psi_io), step), "counter")
    rec.add("node_disk_io_time_seconds_total", f'device="nvme0n1",{L}', counter(seq(disk, 0.01), step), "counter")
    rec.add("node_network_receive_bytes_total", f'device="eth0",{L}', counter(seq(nic, 1e6), step), "counter")
    rec.add("node_network_transmit_bytes_total", f'device="eth0",{L}', counter(seq(nic, 1e6), step), "counter")
    if step > 1:
        rec.add("node_network_receive_bytes_total", f'device="lo",{L}', counter(gauge(n, 9e9), step), "counter")
    rec.add("node_network_speed_bytes", f'device="eth0",{L}', gauge(n, 3.125e9))
    if ib_ports:
        rec.add("node_infiniband_port_data_received_bytes_total", f'device="mlx5_0",port="1",{L}',
                counter(seq(ib, 1e6), step), "counter")
        rec.add("node_infiniband_port_data_transmitted_bytes_total", f'device="mlx5_0",port="1",{L}',
                counter(seq(ib, 1e6), step), "counter")


VLLM_BUCKETS = [0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.5, float("inf")]


def vllm_block(rec, p99s, rps=50.0, instance="node1:8000"):
    """p99s: per-point target p99 (seconds); latencies spread below it."""
    n, step = rec.n, rec.step
    L = f'instance="{instance}",model_name="llama"'
    cum = [0.0] * len(VLLM_BUCKETS)
    series = [[] for _ in VLLM_BUCKETS]
    for i in range(n):
        reqs = rps * step
        p99 = p99s[i]
        for b, le in enumerate(VLLM_BUCKETS):
            # 98 % of requests at p99/2, 2 % at p99
            frac = (0.98 if le >= p99 / 2 else 0.0) + (0.02 if le >= p99 else 0.0)
            cum[b] += reqs * frac
            series[b].append(round(cum[b]))
    for b, le in enumerate(VLLM_BUCKETS):
        les = "+Inf" if math.isinf(le) else repr(le)
        rec.add("vllm:e2e_request_latency_seconds_bucket", f'{L},le="{les}"', series[b], "histogram")
    rec.add("vllm:num_requests_running", L, gauge(n, 8))


def build(case, step, duration, start):
    rnd = random.Random(hash(case) & 0xFFFF)
    rnd.seed(42)
    rec = Rec(step, duration, start)
    n = rec.n
    ramp = lambda a, b: [a + (b - a) * min(1.0, i / max(1, n // 3)) for i in range(n)]
    if case == "healthy":
        for g in range(2):
            gpu_block(rec, g, rnd)
        host_block(rec, rnd)
        vllm_block(rec, gauge(n, 0.2))
    elif case == "input_pipeline_cpu":
        for g in range(2):
            gpu_block(rec, g, rnd, util=0.45, sm=0.2, occ=0.15, tensor=0.1, pcie_rx=1e9)
        host_block(rec, rnd, cpu_busy=0.97, psi_cpu=0.6)
    elif case == "input_pipeline_storage":
        for g in range(2):
            gpu_block(rec, g, rnd, util=0.4, sm=0.18, occ=0.15, tensor=0.1, pcie_rx=5e8)
        host_block(rec, rnd, cpu_busy=0.25, iowait=0.4, psi_io=0.7, disk=0.99)
    elif case == "host_transfer":
        gpu_block(rec, 0, rnd, util=0.9, sm=0.35, pcie_rx=56e9, pcie_tx=3e9)
        host_block(rec, rnd)
    elif case == "memory_bandwidth":
        gpu_block(rec, 0, rnd, util=0.98, sm=0.9, occ=0.6, tensor=0.05, dram=0.92)
        host_block(rec, rnd)
    elif case == "communication":
        for g in range(4):
            gpu_block(rec, g, rnd, util=0.97, sm=0.3, occ=0.35, tensor=0.15, nvlink=0.8)
        host_block(rec, rnd)
    elif case == "network_fallback":
        for g in range(2):
            gpu_block(rec, g, rnd, util=0.96, sm=0.25, occ=0.3, tensor=0.1)
        host_block(rec, rnd, nic=3.0e9, ib=1e5)
    elif case == "kernel_launch":
        gpu_block(rec, 0, rnd, util=0.95, sm=0.6, occ=0.12, tensor=0.2)
        host_block(rec, rnd)
        vllm_block(rec, ramp(0.08, 0.26) if False else [0.08 if i < n // 4 else 0.26 for i in range(n)])
    elif case == "small_batch":
        gpu_block(rec, 0, rnd, util=0.9, sm=0.55, occ=0.12, tensor=0.2)
        host_block(rec, rnd)
        vllm_block(rec, gauge(n, 0.09))
    elif case == "memory_fragmentation":
        # gpulens' own names: the only source of in-process fragmentation.
        L = 'gpu="0",gpu_uuid="GPU-0000",gpu_name="NVIDIA A100-SXM4-80GB"'
        rec.add("gpu_utilization_ratio", L, gauge(n, 0.9, 0.02, rnd))
        rec.add("gpu_sm_active_ratio", L, gauge(n, 0.7, 0.02, rnd))
        rec.add("gpu_memory_used_bytes", L, gauge(n, 70e9))
        rec.add("gpu_memory_free_bytes", L, gauge(n, 10e9))
        rec.add("gpu_memory_fragmentation_ratio", L, gauge(n, 0.62, 0.03, rnd))
        rec.add("gpu_pcie_rx_bytes_total", L, counter(gauge(n, 2e9), step, 5e12), "counter")
        rec.add("gpu_pcie_link_generation", L, gauge(n, 4))
        rec.add("gpu_pcie_link_generation_max", L, gauge(n, 4))
        rec.add("gpu_pcie_link_width", L, gauge(n, 16))
        rec.add("gpu_pcie_link_width_max", L, gauge(n, 16))
        rec.add("gpu_up", L, gauge(n, 1))
        rec.add("host_cpu_seconds_total", 'mode="idle"', counter(gauge(n, 20), step), "counter")
        rec.add("host_cpu_seconds_total", 'mode="user"', counter(gauge(n, 12), step), "counter")
    elif case == "thermal_throttle":
        for g in range(8):
            if g == 5:
                gpu_block(rec, g, rnd, temp=91, clock=1200, throttle=0x20 | 0x40, sm=0.75)
            else:
                gpu_block(rec, g, rnd)
        host_block(rec, rnd)
    elif case == "power_cap":
        gpu_block(rec, 0, rnd, power=699, clock=1500, throttle=0x04)
        rec.add("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", dcgm_labels(0), gauge(n, 700))
        rec.add("DCGM_FI_DEV_MAX_SM_CLOCK", dcgm_labels(0), gauge(n, 1980))
        host_block(rec, rnd)
    elif case == "pcie_link_degraded":
        gpu_block(rec, 0, rnd, gen=3, width=8)
        host_block(rec, rnd)
    elif case == "pcie_idle_downshift":
        gpu_block(rec, 0, rnd, util=0.0, sm=0.0, occ=0.0, tensor=0.0, dram=0.0, pcie_rx=0, pcie_tx=0,
                  fb_used=0, gen=1, power=60, clock=345, throttle=0x1)
        host_block(rec, rnd, cpu_busy=0.02)
    elif case == "hardware_errors":
        fault = n // 2
        for g in range(4):
            if g == 2:
                gpu_block(rec, g, rnd, xid=[0] * fault + [79] * (n - fault),
                          util=[0.95] * fault + [0.0] * (n - fault), sm=[0.8] * fault + [0.0] * (n - fault))
            else:
                gpu_block(rec, g, rnd, util=[0.95] * fault + [0.0] * (n - fault),
                          sm=[0.8] * fault + [0.0] * (n - fault))
        host_block(rec, rnd)
    elif case == "idle":
        gpu_block(rec, 0, rnd, util=0.0, sm=0.0, occ=0.0, tensor=0.0, dram=0.0, pcie_rx=0, pcie_tx=0,
                  fb_used=30000)
        host_block(rec, rnd, cpu_busy=0.02)
    elif case == "mig":
        # dcgm-exporter on an A100 in MIG mode: every series per GPU instance
        # (GPU_I_PROFILE, GPU_I_ID), the GPU's temperature, power and XID
        # repeated on each; no whole-GPU utilisation. Instance 1 holds memory
        # and runs nothing, instance 2 is busy and well.
        base = 'gpu="0",UUID="GPU-0000",device="nvidia0",modelName="NVIDIA A100-SXM4-80GB"'
        for gi, profile, gr, sm, used in ((1, "3g.40gb", 0.0, 0.0, 20000), (2, "4g.40gb", 0.9, 0.8, 30000)):
            L = f'{base},GPU_I_PROFILE="{profile}",GPU_I_ID="{gi}",Hostname="node1"'
            rec.add("DCGM_FI_DEV_GPU_TEMP", L, gauge(n, 55, 1, rnd))
            rec.add("DCGM_FI_DEV_POWER_USAGE", L, gauge(n, 250, 5, rnd))
            rec.add("DCGM_FI_DEV_XID_ERRORS", L, gauge(n, 0))
            rec.add("DCGM_FI_DEV_FB_USED", L, gauge(n, used))
            rec.add("DCGM_FI_DEV_FB_FREE", L, [40000 - v for v in gauge(n, used)])
            rec.add("DCGM_FI_PROF_GR_ENGINE_ACTIVE", L, gauge(n, gr, 0.02 if gr else 0.0, rnd))
            rec.add("DCGM_FI_PROF_SM_ACTIVE", L, gauge(n, sm, 0.02 if sm else 0.0, rnd))
            rec.add("DCGM_FI_PROF_SM_OCCUPANCY", L, gauge(n, 0.5 if gr else 0.0))
            rec.add("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", L, gauge(n, 0.5 if gr else 0.0))
            rec.add("DCGM_FI_PROF_DRAM_ACTIVE", L, gauge(n, 0.4 if gr else 0.0))
        host_block(rec, rnd)
    else:
        raise SystemExit("unknown case " + case)
    return rec


# case, step seconds, duration seconds, expected top cause on each GPU listed ("-": no warning)
CASES = [
    ("healthy", 15, 1200, "-"),
    ("input_pipeline_cpu", 15, 1200, "input_pipeline"),
    ("input_pipeline_storage", 60, 2400, "input_pipeline"),
    ("host_transfer", 1, 180, "host_transfer"),
    ("memory_bandwidth", 15, 1200, "memory_bandwidth"),
    ("communication", 60, 2400, "communication"),
    ("network_fallback", 60, 2400, "network_fallback"),
    ("kernel_launch", 15, 1800, "kernel_launch"),
    ("small_batch", 60, 2400, "small_batch"),
    ("memory_fragmentation", 15, 900, "memory_fragmentation"),
    ("thermal_throttle", 60, 1200, "thermal_throttle@5"),
    ("power_cap", 60, 2400, "power_cap"),
    ("pcie_link_degraded", 15, 900, "pcie_link_degraded"),
    ("pcie_idle_downshift", 60, 2400, "-"),
    ("hardware_errors", 60, 2400, "hardware_errors@2"),
    ("idle", 1, 180, "idle"),
    ("mig", 15, 1200, "idle@0/gi1"),
]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else os.path.dirname(__file__)
    start = START
    if "--start" in sys.argv:
        start = int(sys.argv[sys.argv.index("--start") + 1])
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "expected.txt"), "w") as f:
        f.write("# file  expected top cause (-: no warning; cause@gpu: only that GPU)\n")
        for case, step, duration, expect in CASES:
            name = f"{case}_{step}s.om"
            build(case, step, duration, start).write(os.path.join(out, name))
            f.write(f"{name} {expect}\n")


if __name__ == "__main__":
    main()
