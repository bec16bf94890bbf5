#!/usr/bin/env python3
"""Soak: the agent under every kind of client at once, for a long time.

Starts `gpulens serve --source sim --interval 100ms --push --remote-write URL`
on loopback and, for DURATION, at the same time:

  * scrapes /metrics every second over a kept-alive connection (as Prometheus
    does) and every 2 s with gzip on a new connection, timing each;
  * pushes allocator series: a Pushgateway text PUT every second for this
    script's own process, and process churn -- every 10 s a short-lived child
    process starts (a `sleep`), is pushed for every 2 s while it lives (text
    for even ones, OTLP JSON for odd ones), and exits after 30 s; every
    other group is DELETEd when its process exits, the rest are dropped by
    the agent's pid check;
  * label churn: a group PUT every second whose CHURN_SERIES series
    (--churn-series, 200) all take new `pool` label values at every push,
    so the agent must give the history of replaced series back and refuse
    what is beyond the series budget with 429 (the RSS cap of --check holds
    it to that);
  * polls the API the web page polls: every 5 s its overview (/api/v1/current,
    /api/v1/findings, 5 minutes of history of four series), every 30 s a GPU
    page (30 minutes of its layer series);
  * remote_write to a stand-in receiver (a small HTTP server in a child
    process that answers 204) that is stopped for 5 s every RESTART seconds;

and every SAMPLE seconds appends one row to CSV: the agent's RSS and peak RSS
(VmRSS, VmHWM), its CPU (utime + stime, % of one core over the interval),
open fds, the scrape latency p50/p99/max over the interval, the series it
serves, remote_write samples sent and retries, and counts of requests and
errors. At the end it writes an SVG of RSS, CPU, fds and scrape latency over
time (--svg) and prints a summary. With --check it exits 1 unless every
scrape, push and poll was answered without error, the agent's open fds are
back to their baseline once the load stops, its peak RSS is under --rss-cap
MiB, and remote_write delivered samples after the receiver's restarts.

    bench/soak.py build/release/gpulens --duration 60m --csv soak.csv --svg docs/soak.svg
    bench/soak.py build/release/gpulens --duration 1m --sample 10s --check    # the CI version
    bench/soak.py --plot soak.csv docs/soak.svg "title"                       # redraw a CSV
"""

import argparse
import gzip
import http.client
import http.server
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

MIB = 1 << 20
CLK = os.sysconf("SC_CLK_TCK")


def seconds(text):
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    for u in ("ms", "s", "m", "h"):
        if text.endswith(u) and text[: -len(u)].replace(".", "", 1).isdigit():
            return float(text[: -len(u)]) * units[u]
    return float(text)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# --- the stand-in remote_write receiver (this script with --receiver) ----------

def receiver(port):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            self.rfile.read(n)
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    http.server.ThreadingHTTPServer.allow_reuse_address = True
    http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


# --- the agent, read from /proc -----------------------------------------------

class Proc:
    def __init__(self, pid):
        self.pid = pid

    def status_kib(self, field):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return 0

    def cpu_ticks(self):
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    def fds(self):
        return len(os.listdir(f"/proc/{self.pid}/fd"))


class Stats:
    """Counters and scrape latencies the load threads add to, under one lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.lat = []
        self.count = {}
        self.errors = []

    def ok(self, what, latency=None):
        with self.lock:
            self.count[what] = self.count.get(what, 0) + 1
            if latency is not None:
                self.lat.append(latency)

    def error(self, what, detail):
        with self.lock:
            self.count[what + "_errors"] = self.count.get(what + "_errors", 0) + 1
            if len(self.errors) < 20:
                self.errors.append(f"{time.strftime('%H:%M:%S')} {what}: {detail}")

    def take_latencies(self):
        with self.lock:
            lat, self.lat = self.lat, []
        return sorted(lat)


def pct(sorted_values, q):
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


class Load:
    def __init__(self, port, stats, stop):
        self.port = port
        self.stats = stats
        self.stop = stop
        self.uuids = []
        self.children = []  # (Popen, protocol, deletes)
        self.history_s = 3600
        self.churn_series = 0

    def range(self, want_s):
        """A history range the page would ask for: want_s, or the whole history if shorter."""
        return f"{int(min(want_s, self.history_s - 1))}s"

    def request(self, conn, method, path, body=None, headers=None):
        conn.request(method, path, body, headers or {})
        r = conn.getresponse()
        data = r.read()
        return r.status, data

    def fresh(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)

    def every(self, period, fn):
        """Runs fn every period seconds (from the start, not after each run) until stop."""
        nxt = time.monotonic()
        while not self.stop.is_set():
            fn()
            nxt += period
            self.stop.wait(max(0, nxt - time.monotonic()))

    # Prometheus-style scrapes on one kept-alive connection, timed.
    def scraper(self):
        conn = [self.fresh()]

        def one():
            t0 = time.perf_counter()
            try:
                status, data = self.request(conn[0], "GET", "/metrics")
                if status != 200 or b"gpu_power_watts" not in data:
                    self.stats.error("scrape", f"status {status}, {len(data)} bytes")
                else:
                    self.stats.ok("scrape", time.perf_counter() - t0)
            except (OSError, http.client.HTTPException) as e:
                self.stats.error("scrape", repr(e))
                conn[0].close()
                conn[0] = self.fresh()

        self.every(1.0, one)
        conn[0].close()

    # gzip scrapes, each on a new connection.
    def gzip_scraper(self):
        def one():
            c = self.fresh()
            t0 = time.perf_counter()
            try:
                status, data = self.request(c, "GET", "/metrics", headers={"Accept-Encoding": "gzip"})
                if status != 200 or b"gpu_power_watts" not in gzip.decompress(data):
                    self.stats.error("scrape", f"gzip: status {status}")
                else:
                    self.stats.ok("scrape", time.perf_counter() - t0)
            except (OSError, http.client.HTTPException, EOFError) as e:
                self.stats.error("scrape", "gzip: " + repr(e))
            c.close()

        self.every(2.0, one)

    def text_body(self, gpu, pid, n=4):
        lines = ["# TYPE gpu_allocator_external_fragmentation_ratio gauge\n"]
        for i in range(n):
            lines.append(f'gpu_allocator_external_fragmentation_ratio{{gpu_uuid="{self.uuids[gpu]}",pool="large",'
                         f'stream="{i}"}} {random.random():.3f}\n')
        lines.append("# TYPE gpu_allocator_reserved_bytes gauge\n")
        lines.append(f'gpu_allocator_reserved_bytes{{gpu_uuid="{self.uuids[gpu]}"}} {random.randint(1, 1 << 34)}\n')
        return "".join(lines).encode()

    def otlp_body(self, gpu, pid):
        attrs = [{"key": "gpu.uuid", "value": {"stringValue": self.uuids[gpu]}},
                 {"key": "process.pid", "value": {"intValue": str(pid)}}]
        metrics = [{"name": "gpu_allocator_retries_total",
                    "sum": {"aggregationTemporality": 2, "isMonotonic": True,
                            "dataPoints": [{"asInt": str(int(time.time()) % 100000)}]}},
                   {"name": "gpu_allocator_reserved_bytes",
                    "gauge": {"dataPoints": [{"asDouble": float(random.randint(1, 1 << 34))}]}}]
        return json.dumps({"resourceMetrics": [{"resource": {"attributes": attrs},
                                                "scopeMetrics": [{"metrics": metrics}]}]}).encode()

    def push(self, conn, pid, gpu, otlp):
        try:
            if otlp:
                status, data = self.request(conn[0], "POST", "/v1/metrics", self.otlp_body(gpu, pid),
                                            {"Content-Type": "application/json"})
            else:
                status, data = self.request(conn[0], "PUT", f"/metrics/job/soak/pid/{pid}", self.text_body(gpu, pid),
                                            {"Content-Type": "text/plain; version=0.0.4"})
            if status not in (200, 202):
                self.stats.error("push", f"pid {pid}: status {status}: {data[:200]!r}")
            else:
                self.stats.ok("push")
        except (OSError, http.client.HTTPException) as e:
            self.stats.error("push", repr(e))
            conn[0].close()
            conn[0] = self.fresh()

    # This script's own group, every second.
    def pusher(self):
        conn = [self.fresh()]
        self.every(1.0, lambda: self.push(conn, os.getpid(), 0, False))
        conn[0].close()

    # Processes that come and go: one every 10 s, living 30 s, pushed every 2 s.
    def churn(self):
        conn = [self.fresh()]
        state = {"tick": 0}

        def one():
            state["tick"] += 1
            if state["tick"] % 5 == 1:
                p = subprocess.Popen(["sleep", "30"])
                k = len(self.children)
                self.children.append([p, k % 2 == 1, k % 4 < 2])  # otlp?, delete when gone?
            for c in list(self.children):
                p, otlp, delete = c
                gpu = p.pid % len(self.uuids)
                if p.poll() is None:
                    self.push(conn, p.pid, gpu, otlp)
                    continue
                self.children.remove(c)
                if delete and not otlp:
                    try:
                        status, _ = self.request(conn[0], "DELETE", f"/metrics/job/soak/pid/{p.pid}")
                        if status not in (200, 202):
                            self.stats.error("push", f"DELETE pid {p.pid}: status {status}")
                        else:
                            self.stats.ok("push")
                    except (OSError, http.client.HTTPException) as e:
                        self.stats.error("push", repr(e))
                        conn[0].close()
                        conn[0] = self.fresh()
                self.stats.ok("processes")

        self.every(2.0, one)
        conn[0].close()
        for p, _, _ in self.children:
            p.kill()
            p.wait()

    # Label churn: one group PUT every second whose series take new `pool`
    # values at every push, so every push replaces churn_series series by new
    # ones; the agent must give the replaced series' history back.
    def label_churn(self):
        conn = [self.fresh()]
        state = {"push": 0}

        def one():
            state["push"] += 1
            n = state["push"]
            lines = ["# TYPE gpu_allocator_external_fragmentation_ratio gauge\n"]
            for i in range(self.churn_series):
                lines.append(f'gpu_allocator_external_fragmentation_ratio{{gpu_uuid="{self.uuids[i % len(self.uuids)]}",'
                             f'pool="churn{n}_{i}"}} {random.random():.3f}\n')
            try:
                status, data = self.request(conn[0], "PUT", f"/metrics/job/soak_churn/pid/{os.getpid()}",
                                            "".join(lines).encode(), {"Content-Type": "text/plain; version=0.0.4"})
                if status == 429 and b"push.max_series" in data:
                    self.stats.ok("churn_refused")  # the budget at work: expected once it is full
                elif status not in (200, 202):
                    self.stats.error("push", f"label churn: status {status}: {data[:200]!r}")
                else:
                    self.stats.ok("push")
                    self.stats.ok("churned_series")
            except (OSError, http.client.HTTPException) as e:
                self.stats.error("push", "label churn: " + repr(e))
                conn[0].close()
                conn[0] = self.fresh()

        if self.churn_series > 0:
            self.every(1.0, one)
        conn[0].close()

    # What the web page fetches: its overview every 5 s, a GPU page every 30 s.
    def web(self):
        conn = [self.fresh()]
        overview = ["/api/v1/current", "/api/v1/findings",
                    "/api/v1/history?series=gpu_sm_active_ratio,gpu_mem_bandwidth_util_ratio,"
                    "gpu_pcie_rx_bandwidth_util_ratio,gpu_temperature_celsius&range=" + self.range(300)]
        gpu_page = ["/api/v1/current?gpu={g}", "/api/v1/findings",
                    "/api/v1/history?series=gpu_utilization_ratio,gpu_sm_active_ratio,gpu_sm_occupancy_ratio,"
                    "gpu_tensor_core_util_ratio,gpu_mem_bandwidth_util_ratio,gpu_memory_util_ratio,"
                    "gpu_temperature_celsius,gpu_power_watts&gpu={g}&range=" + self.range(1800)]
        state = {"tick": 0}

        def one():
            paths = overview
            if state["tick"] % 6 == 0:
                g = random.randrange(len(self.uuids))
                paths = overview + [p.format(g=g) for p in gpu_page]
            state["tick"] += 1
            for path in paths:
                try:
                    status, data = self.request(conn[0], "GET", path, headers={"Host": f"127.0.0.1:{self.port}"})
                    if status != 200:
                        self.stats.error("poll", f"{path}: status {status}")
                    else:
                        json.loads(data)
                        self.stats.ok("poll")
                except (OSError, http.client.HTTPException, ValueError) as e:
                    self.stats.error("poll", f"{path}: {e!r}")
                    conn[0].close()
                    conn[0] = self.fresh()

        self.every(5.0, one)
        conn[0].close()


def agent_metrics(port):
    """Selected self-metrics from one scrape: {name: summed value}."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    out = {}
    for line in text.splitlines():
        if not line.startswith("gpulens_"):
            continue
        key = line.rsplit(" ", 1)[0]
        name = key.split("{", 1)[0]
        try:
            v = float(line.rsplit(" ", 1)[1])
        except ValueError:
            continue
        out[name] = out.get(name, 0) + v
        if "result=" in key:
            out[name + ":" + key.split('result="', 1)[1].split('"', 1)[0]] = v
    out["series_served"] = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    return out


# --- the plot -------------------------------------------------------------------

def svg(rows, path, title):
    panels = [("RSS (MiB)", [("rss_mib", "#1f77b4", "RSS"), ("peak_rss_mib", "#aec7e8", "peak")]),
              ("CPU (% of one core)", [("cpu_pct", "#d62728", "agent")]),
              ("open fds", [("fds", "#2ca02c", "agent")]),
              ("scrape latency (ms)", [("p50_ms", "#9467bd", "p50"), ("p99_ms", "#ff7f0e", "p99")])]
    w, ph, left, top = 720, 150, 60, 40
    h = top + len(panels) * (ph + 40) + 10
    xs = [r["minute"] for r in rows]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="13">{title}</text>']
    for i, (label, lines) in enumerate(panels):
        y0 = top + i * (ph + 40)
        vals = [r[k] for k, _, _ in lines for r in rows if r[k] == r[k]]
        hi = max(vals) if vals else 1
        hi = hi * 1.15 if hi > 0 else 1
        pw = w - left - 20
        out.append(f'<rect x="{left}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')
        out.append(f'<text x="{left}" y="{y0 - 5}">{label}</text>')
        for frac in (0, 0.5, 1):
            y = y0 + ph - frac * ph
            out.append(f'<text x="{left - 5}" y="{y + 4:.0f}" text-anchor="end">{hi * frac:.3g}</text>')
            out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        for j, (k, color, name) in enumerate(lines):
            pts = [(left + (r["minute"] - x0) / (x1 - x0) * pw, y0 + ph - r[k] / hi * ph) for r in rows if r[k] == r[k]]
            out.append('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>'
                       % (color, " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)))
            out.append(f'<text x="{left + pw - 10 - 60 * j}" y="{y0 + 14}" fill="{color}" text-anchor="end">{name}</text>')
        out.append(f'<text x="{left + pw}" y="{y0 + ph + 14}" text-anchor="end">{x1:.0f} min</text>')
        out.append(f'<text x="{left}" y="{y0 + ph + 14}">{x0:.0f}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


# --- main -----------------------------------------------------------------------

COLUMNS = ["minute", "rss_mib", "peak_rss_mib", "cpu_pct", "fds", "scrapes", "p50_ms", "p99_ms", "max_ms",
           "series_served", "remote_write_samples", "remote_write_dropped", "remote_write_retries", "pushes", "polls", "processes",
           "errors", "soak_cpu_pct"]


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--receiver":
        receiver(int(sys.argv[2]))
        return 0
    if len(sys.argv) >= 4 and sys.argv[1] == "--plot":  # --plot CSV SVG [TITLE]: redraw from a CSV
        with open(sys.argv[2]) as f:
            head = f.readline().strip().split(",")
            rows = [{k: float(v) for k, v in zip(head, line.strip().split(","))} for line in f if line.strip()]
        svg(rows, sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else sys.argv[2])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gpulens")
    ap.add_argument("--duration", default="60m")
    ap.add_argument("--sample", default="60s", help="seconds between CSV rows")
    ap.add_argument("--restart", default="60s", help="the receiver is stopped for 5 s this often")
    ap.add_argument("--history", default="1h", help="the agent's --history")
    ap.add_argument("--csv", default="soak.csv")
    ap.add_argument("--svg")
    ap.add_argument("--check", action="store_true", help="exit 1 unless the bounds hold (see above)")
    ap.add_argument("--churn-series", type=int, default=200,
                    help="series of the label-churn group, all new at every push (0: no churn phase)")
    ap.add_argument("--rss-cap", type=float, default=256, help="MiB the agent's peak RSS must stay under (--check)")
    args = ap.parse_args()
    duration, sample, restart = seconds(args.duration), seconds(args.sample), seconds(args.restart)
    # Stopped early (SIGTERM, SIGINT): stop the agent and the receiver too.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: sys.exit(143))

    work = tempfile.mkdtemp(prefix="gpulens-soak-")
    port, rport = free_port(), free_port()
    me = os.path.abspath(__file__)
    log = open(os.path.join(work, "agent.log"), "w")
    agent = subprocess.Popen([args.gpulens, "serve", "--listen", f"127.0.0.1:{port}", "--source", "sim",
                              "--interval", "100ms", "--history", args.history, "--push",
                              "--remote-write", f"http://127.0.0.1:{rport}/api/v1/write"],
                             stdout=log, stderr=subprocess.STDOUT)
    recv = [subprocess.Popen([sys.executable, me, "--receiver", str(rport)])]
    stop = threading.Event()
    threads = []
    failures = []
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                c.request("GET", "/api/v1/current")
                cur = json.loads(c.getresponse().read())
                c.close()
                break
            except (OSError, ValueError, http.client.HTTPException):
                if time.monotonic() > deadline or agent.poll() is not None:
                    raise SystemExit(f"the agent did not start; its log: {open(log.name).read()[-2000:]}")
                time.sleep(0.2)
        proc = Proc(agent.pid)
        time.sleep(2)  # the first remote_write connection, the render cache
        base_fds = proc.fds()
        stats = Stats()
        load = Load(port, stats, stop)
        load.uuids = [g["uuid"] for g in cur["gpus"]]
        load.history_s = seconds(args.history)
        load.churn_series = args.churn_series
        for fn in (load.scraper, load.gzip_scraper, load.pusher, load.churn, load.label_churn, load.web):
            t = threading.Thread(target=fn, daemon=True)
            t.start()
            threads.append(t)

        rows = []
        csv = open(args.csv, "w")
        csv.write(",".join(COLUMNS) + "\n")
        t_start = time.monotonic()
        ticks0, self0 = proc.cpu_ticks(), os.times()
        last_t, last_ticks = t_start, ticks0
        next_restart = t_start + restart
        next_row = t_start + sample
        restarts = 0
        print(f"soak: agent pid {agent.pid} on 127.0.0.1:{port}, receiver on {rport}, {duration:.0f} s, "
              f"a row every {sample:.0f} s to {args.csv}; baseline {base_fds} fds", flush=True)
        while time.monotonic() - t_start < duration:
            now = time.monotonic()
            if agent.poll() is not None:
                failures.append(f"the agent exited with {agent.returncode}")
                break
            if now >= next_restart:
                recv[0].terminate()
                recv[0].wait()
                time.sleep(5)
                recv[0] = subprocess.Popen([sys.executable, me, "--receiver", str(rport)])
                restarts += 1
                next_restart += restart
            if now >= next_row:
                lat = stats.take_latencies()
                ticks = proc.cpu_ticks()
                m = agent_metrics(port)
                self_now = os.times()
                with stats.lock:
                    count = dict(stats.count)
                row = {"minute": (now - t_start) / 60, "rss_mib": proc.status_kib("VmRSS") / 1024,
                       "peak_rss_mib": proc.status_kib("VmHWM") / 1024,
                       "cpu_pct": (ticks - last_ticks) / CLK / (now - last_t) * 100, "fds": proc.fds(),
                       "scrapes": len(lat), "p50_ms": pct(lat, 0.5) * 1000, "p99_ms": pct(lat, 0.99) * 1000,
                       "max_ms": (lat[-1] if lat else float("nan")) * 1000,
                       "series_served": m["series_served"],
                       "remote_write_samples": m.get("gpulens_remote_write_samples_total:sent", 0),
                       "remote_write_dropped": m.get("gpulens_remote_write_samples_total:dropped", 0),
                       "remote_write_retries": m.get("gpulens_remote_write_retries_total", 0),
                       "pushes": count.get("push", 0), "polls": count.get("poll", 0),
                       "processes": count.get("processes", 0),
                       "errors": sum(v for k, v in count.items() if k.endswith("_errors")),
                       "soak_cpu_pct": (self_now.user + self_now.system + self_now.children_user +
                                        self_now.children_system - self0.user - self0.system -
                                        self0.children_user - self0.children_system) / (now - t_start) * 100}
                rows.append(row)
                csv.write(",".join(f"{row[k]:.2f}" if isinstance(row[k], float) else str(row[k])
                                   for k in COLUMNS) + "\n")
                csv.flush()
                if args.svg and len(rows) >= 2:
                    svg(rows, args.svg, f"gpulens serve --source sim --interval 100ms --push --remote-write, "
                                        f"{row['minute']:.0f} min")
                last_t, last_ticks = now, ticks
                next_row += sample
            time.sleep(min(0.5, max(0.05, min(next_row, next_restart) - time.monotonic())))
        stop.set()
        for t in threads:
            t.join(30)
        total_s = time.monotonic() - t_start
        cpu_total = (proc.cpu_ticks() - ticks0) / CLK
        time.sleep(3)  # connections closed by the load threads are gone by now
        end_fds = proc.fds()
        with stats.lock:
            count = dict(stats.count)
        m = agent_metrics(port)
        peak = proc.status_kib("VmHWM") / 1024
        print(f"soak: {total_s / 60:.1f} min, {count.get('scrape', 0)} scrapes, {count.get('push', 0)} pushes, "
              f"{count.get('poll', 0)} polls, {count.get('processes', 0)} processes came and went, "
              f"{count.get('churned_series', 0) * args.churn_series} label-churn series taken "
              f"({count.get('churn_refused', 0)} churn pushes refused for the budget), "
              f"{restarts} receiver restarts")
        print(f"soak: agent CPU {cpu_total / total_s * 100:.1f} % of one core on average; RSS first row "
              f"{rows[0]['rss_mib'] if rows else 0:.1f} MiB, last {rows[-1]['rss_mib'] if rows else 0:.1f} MiB, "
              f"peak {peak:.1f} MiB; fds {base_fds} at the start, {end_fds} after the load; "
              f"remote_write samples sent {m.get('gpulens_remote_write_samples_total:sent', 0):.0f}, "
              f"dropped {m.get('gpulens_remote_write_samples_total:dropped', 0):.0f}, "
              f"failed {m.get('gpulens_remote_write_samples_total:failed', 0):.0f}, "
              f"retries {m.get('gpulens_remote_write_retries_total', 0):.0f}")
        for e in stats.errors:
            print("soak: error:", e)
        if args.check:
            for what in ("scrape", "push", "poll"):
                if count.get(what + "_errors", 0):
                    failures.append(f"{count[what + '_errors']} {what} errors")
                if not count.get(what, 0):
                    failures.append(f"no {what} answered")
            if end_fds > base_fds + 2:
                failures.append(f"open fds {end_fds} after the load, {base_fds} before it")
            if peak > args.rss_cap:
                failures.append(f"peak RSS {peak:.1f} MiB above the cap of {args.rss_cap:.0f} MiB")
            if not m.get("gpulens_remote_write_samples_total:sent", 0):
                failures.append("remote_write delivered nothing")
            if not count.get("processes", 0):
                failures.append("no pushed process came and went")
            if args.churn_series > 0 and not count.get("churned_series", 0):
                failures.append("no label-churn push was taken")
    finally:
        stop.set()
        agent.terminate()
        try:
            agent.wait(10)
        except subprocess.TimeoutExpired:
            agent.kill()
            failures.append("the agent did not stop within 10 s of SIGTERM")
        recv[0].terminate()
        recv[0].wait()
        log.close()
    if agent.returncode not in (0, -15):
        failures.append(f"the agent exited with {agent.returncode}")
    with open(log.name) as f:
        bad = [line.strip() for line in f if " error " in line or '"level":"error"' in line]
    if args.check and bad:
        failures.append("the agent logged errors: " + " | ".join(bad[:5]))
    for f in failures:
        print("FAIL:", f)
    if failures:
        print(f"soak: the agent's log is {log.name}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
