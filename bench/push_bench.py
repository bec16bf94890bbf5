#!/usr/bin/env python3
"""Push path benchmarks, on loopback, in one run:

1. the receiver: the same 100-series text body PUT over one keep-alive
   connection N times to `gpulens serve --push` and to a real
   prometheus-pushgateway; per server: samples accepted per second of the
   server's CPU (utime + stime from /proc/<pid>/stat) and the p50/p99 latency
   of a push as the pusher sees it;
2. the Python client (clients/python) with the PyTorch stand-in: CPU of the
   host process per push (collect, render, PUT to the agent) without and with
   an allocator snapshot of BLOCKS blocks.

    bench/push_bench.py build/release/gpulens [PUSHES] [BLOCKS]
"""

import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
sys.path.insert(0, os.path.join(ROOT, "clients", "python", "tests", "fake_torch"))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait(port, path):
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            c.request("GET", path)
            if c.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("server on %d not ready" % port)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def body_100(uuid):
    lines = ["# TYPE gpu_allocator_external_fragmentation_ratio gauge\n"]
    for i in range(50):
        lines.append('gpu_allocator_external_fragmentation_ratio{gpu_uuid="%s",pool="large",stream="%d"} 0.%03d\n'
                     % (uuid, i, i))
    lines.append("# TYPE gpu_allocator_largest_free_block_bytes gauge\n")
    for i in range(50):
        lines.append('gpu_allocator_largest_free_block_bytes{gpu_uuid="%s",pool="large",stream="%d"} %d\n'
                     % (uuid, i, 2097152 * (i + 1)))
    return "".join(lines).encode()


def push_run(name, port, pid, body, n):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    path = "/metrics/job/bench/pid/%d" % os.getpid()
    headers = {"Content-Type": "text/plain; version=0.0.4; charset=utf-8"}
    for _ in range(20):  # warm up
        conn.request("PUT", path, body, headers)
        conn.getresponse().read()
    lat = []
    cpu0 = cpu_seconds(pid)
    for _ in range(n):
        t0 = time.perf_counter()
        conn.request("PUT", path, body, headers)
        r = conn.getresponse()
        r.read()
        lat.append(time.perf_counter() - t0)
        if r.status // 100 != 2:
            raise SystemExit("%s answered %d" % (name, r.status))
    cpu = cpu_seconds(pid) - cpu0
    lat.sort()
    return {"server": name, "pushes": n, "server_cpu_s": round(cpu, 3),
            "samples_per_cpu_s": round(n * 100 / cpu) if cpu > 0 else None,
            "p50_ms": round(lat[len(lat) // 2] * 1e3, 3), "p99_ms": round(lat[int(len(lat) * 0.99)] * 1e3, 3)}


def client_run(port, uuid, blocks, pushes):
    import torch
    from torch.cuda import build
    import gpulens_client

    MiB = 2**20
    stats = {"reserved_bytes.all.current": 40000 * MiB, "allocated_bytes.all.current": 30000 * MiB,
             "active_bytes.all.current": 30000 * MiB, "inactive_split_bytes.all.current": 5000 * MiB,
             "num_alloc_retries": 3, "num_ooms": 0}
    torch.cuda._set(True, [{"uuid": uuid[4:], "stats": stats}], build.fragmented(0, blocks))
    out = {}
    for label, every in (("without snapshot", 0), ("with snapshot", 1)):
        c = gpulens_client.Client("127.0.0.1:%d" % port, snapshot_every=every, torch_module=torch)
        c.push_once()
        t0, w0 = time.process_time(), time.perf_counter()
        for _ in range(pushes):
            if not c.push_once():
                raise SystemExit("client push failed: " + c.last_error)
        cpu = (time.process_time() - t0) / pushes
        wall = (time.perf_counter() - w0) / pushes
        out[label] = {"cpu_ms_per_push": round(cpu * 1e3, 3), "wall_ms_per_push": round(wall * 1e3, 3)}
    out["snapshot_blocks"] = blocks
    return out


def main():
    gpulens = os.path.abspath(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    blocks = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
    tmp = tempfile.mkdtemp()
    procs = []
    try:
        ap, gp = free_port(), free_port()
        procs.append(subprocess.Popen([gpulens, "serve", "--listen", "127.0.0.1:%d" % ap, "--source", "sim",
                                       "--interval", "10s", "--push", "--log-level", "warn"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp))
        procs.append(subprocess.Popen(["prometheus-pushgateway", "--web.listen-address=127.0.0.1:%d" % gp,
                                       "--log.level=warn"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      cwd=tmp))
        wait(ap, "/healthz")
        wait(gp, "/-/ready")
        c = http.client.HTTPConnection("127.0.0.1", ap)
        c.request("GET", "/api/v1/current")
        uuid = json.loads(c.getresponse().read())["gpus"][0]["uuid"]
        body = body_100(uuid)
        results = [push_run("gpulens serve --push", ap, procs[0].pid, body, n),
                   push_run("prometheus-pushgateway", gp, procs[1].pid, body, n)]
        for r in results:
            print(json.dumps(r))
        print(json.dumps({"ratio_samples_per_cpu_s": round(results[0]["samples_per_cpu_s"] /
                                                           results[1]["samples_per_cpu_s"], 1)}))
        print(json.dumps({"python_client": client_run(ap, uuid, blocks, max(50, n // 20))}))
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()


if __name__ == "__main__":
    main()
