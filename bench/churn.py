#!/usr/bin/env python3
"""Churn: pushers and a scrape target that rotate label values, against the
agent's series budgets (docs/limits.md).

Starts `gpulens serve --source sim,scrape --push` (an hour of history at 1 s,
the defaults) on loopback and, for DURATION, at the same time:

  * four pushers (jobs churn0..churn3) each PUT their group every second
    with PUSH_SERIES allocator series whose `pool` label takes new values at
    every push (a new series each time);
  * two scrape targets, each answering TARGET_SERIES node_network series
    whose `device` label takes new values at every scrape;
  * /metrics is fetched every second.

Every SAMPLE seconds it reads the agent's RSS (VmRSS) and prints one line.
With --check it exits 1 unless the peak RSS stayed under --rss-cap MiB,
pushes were refused with 429 naming a push.max_series* budget, the scrape
dropped series counted under gpulens_series_dropped_total{reason="limit"},
and every /metrics answered 200.

    bench/churn.py build/release/gpulens --duration 2m --check
"""

import argparse
import http.client
import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

MIB = 1 << 20


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Target(http.server.BaseHTTPRequestHandler):
    series = 1500
    generation = {}
    lock = threading.Lock()

    def do_GET(self):
        with Target.lock:
            gen = Target.generation.get(self.path, 0)
            Target.generation[self.path] = gen + 1
        name = self.path.strip("/")
        body = "".join(f'node_network_receive_bytes_total{{device="{name}_{gen}_{i}"}} {i}\n'
                       for i in range(Target.series)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gpulens")
    ap.add_argument("--duration", default="2m")
    ap.add_argument("--sample", type=float, default=10)
    ap.add_argument("--push-series", type=int, default=1000)
    ap.add_argument("--target-series", type=int, default=1500)
    ap.add_argument("--rss-cap", type=float, default=256)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    d = a.duration
    duration = float(d[:-1]) * {"s": 1, "m": 60, "h": 3600}[d[-1]] if d[-1] in "smh" else float(d)

    Target.series = a.target_series
    tport, aport = free_port(), free_port()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", tport), Target)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    tmp = tempfile.mkdtemp()
    cfg = os.path.join(tmp, "gpulens.yaml")
    with open(cfg, "w") as f:
        f.write("sources: [sim, scrape]\npush: {enabled: true}\nsource:\n  scrape:\n    interval: 1s\n"
                f"    targets: [http://127.0.0.1:{tport}/a, http://127.0.0.1:{tport}/b]\n")
    log = open(os.path.join(tmp, "agent.log"), "w")
    agent = subprocess.Popen([a.gpulens, "serve", "--listen", f"127.0.0.1:{aport}", "--config", cfg,
                              "--interval", "1s"], stdout=log, stderr=subprocess.STDOUT)
    stop = threading.Event()
    counts = {"push_ok": 0, "push_429": 0, "push_other": 0, "metrics_ok": 0, "metrics_err": 0}
    messages = set()

    def get(path):
        c = http.client.HTTPConnection("127.0.0.1", aport, timeout=10)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.status, body

    deadline = time.time() + 20
    while True:
        try:
            if get("/healthz")[0] == 200:
                break
        except OSError:
            pass
        if time.time() > deadline:
            print("agent did not start", file=sys.stderr)
            agent.kill()
            return 1
        time.sleep(0.3)
    uuid = json.loads(get("/api/v1/current")[1])["gpus"][0]["uuid"]

    def pusher(job):
        gen = 0
        while not stop.is_set():
            body = "".join(f'gpu_allocator_reserved_bytes{{gpu_uuid="{uuid}",pool="{job}_{gen}_{i}"}} {i}\n'
                           for i in range(a.push_series))
            gen += 1
            try:
                c = http.client.HTTPConnection("127.0.0.1", aport, timeout=10)
                c.request("PUT", f"/metrics/job/{job}", body.encode(), {"Content-Type": "text/plain"})
                r = c.getresponse()
                text = r.read().decode(errors="replace")
                c.close()
                key = "push_ok" if r.status == 200 else "push_429" if r.status == 429 else "push_other"
                counts[key] += 1
                if r.status != 200:
                    messages.add(text.strip()[:160])
            except OSError as e:
                counts["push_other"] += 1
                messages.add(str(e))
            stop.wait(1)

    def scraper():
        while not stop.is_set():
            try:
                status, _ = get("/metrics")
                counts["metrics_ok" if status == 200 else "metrics_err"] += 1
            except OSError:
                counts["metrics_err"] += 1
            stop.wait(1)

    threads = [threading.Thread(target=pusher, args=(f"churn{k}",)) for k in range(4)]
    threads.append(threading.Thread(target=scraper))
    for t in threads:
        t.start()
    start = time.time()
    peak = 0.0
    base = rss_mib(agent.pid)
    print(f"t=0s rss={base:.1f} MiB (start)")
    while time.time() - start < duration:
        time.sleep(min(a.sample, max(0.1, duration - (time.time() - start))))
        r = rss_mib(agent.pid)
        peak = max(peak, r)
        print(f"t={time.time() - start:.0f}s rss={r:.1f} MiB pushes ok={counts['push_ok']} "
              f"refused={counts['push_429']} other={counts['push_other']}", flush=True)
    stop.set()
    for t in threads:
        t.join()
    _, metrics = get("/metrics")
    dropped = 0.0
    for line in metrics.decode().splitlines():
        if line.startswith('gpulens_series_dropped_total{') and 'source="scrape"' in line and 'reason="limit"' in line:
            dropped += float(line.split()[-1])
    series = [line for line in metrics.decode().splitlines() if line.startswith("gpulens_series ")]
    agent.terminate()
    agent.wait(timeout=20)
    log.close()
    print(f"peak rss {peak:.1f} MiB (cap {a.rss_cap}); pushes ok {counts['push_ok']} refused {counts['push_429']} "
          f"other {counts['push_other']}; scrape series dropped (limit) {dropped:.0f}; {series[0] if series else ''}")
    for m in sorted(messages)[:3]:
        print("  refusal:", m)
    if not a.check:
        return 0
    problems = []
    if peak >= a.rss_cap:
        problems.append(f"peak RSS {peak:.1f} MiB >= {a.rss_cap}")
    if counts["push_429"] == 0 or not any("push.max_series" in m for m in messages):
        problems.append("no push refused by a push.max_series* budget")
    if counts["push_other"]:
        problems.append(f"{counts['push_other']} pushes failed otherwise: {sorted(messages)[:3]}")
    if dropped <= 0:
        problems.append("no scraped series dropped for the budget")
    if counts["metrics_err"] or counts["metrics_ok"] == 0:
        problems.append(f"/metrics failed {counts['metrics_err']} times")
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
