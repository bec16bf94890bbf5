#!/usr/bin/env python3
"""Scrape latency while the API diagnoses long windows.

Starts `gpulens serve --source sim --history 6h --sim-prefill 6h` (six hours
of simulated history, taken at once on a virtual clock) on loopback, then for
DURATION seconds keeps CLIENTS clients each asking /api/v1/findings?range=6h
over and over (a new request as soon as the last is answered), while one
kept-alive connection scrapes /metrics RATE times a second, as Prometheus
does. Prints the scrape latency p50/p99/max, and how the findings requests
were answered (200, 503 busy) with their latency.

    bench/api_stall.py build/release/gpulens [--clients 20] [--duration 30] [--rate 10]

Give several binaries to run them one after the other on the same scenario.
"""

import argparse
import http.client
import socket
import subprocess
import sys
import threading
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def pct(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def run(binary, args):
    port = free_port()
    agent = subprocess.Popen(
        [binary, "serve", "--source", "sim", "--listen", f"127.0.0.1:{port}", "--interval", "1s",
         "--history", args.history, "--sim-prefill", args.history],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        t_start = time.time()
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/healthz")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            if agent.poll() is not None or time.time() - t_start > 120:
                sys.exit(f"{binary}: agent did not come up")
            time.sleep(0.2)
        stop = threading.Event()
        lock = threading.Lock()
        answers = {}
        api_ms = []

        def api_client():
            conn = None
            while not stop.is_set():
                try:
                    if conn is None:
                        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                    t = time.perf_counter()
                    conn.request("GET", f"/api/v1/findings?range={args.history}")
                    r = conn.getresponse()
                    r.read()
                    ms = (time.perf_counter() - t) * 1000
                    with lock:
                        answers[r.status] = answers.get(r.status, 0) + 1
                        if r.status == 200:
                            api_ms.append(ms)
                    if r.status == 503:
                        time.sleep(float(r.getheader("Retry-After", "1")))
                    if r.getheader("Connection", "").lower() == "close":
                        conn.close()
                        conn = None
                except (OSError, http.client.HTTPException):
                    with lock:
                        answers["error"] = answers.get("error", 0) + 1
                    conn = None

        threads = [threading.Thread(target=api_client, daemon=True) for _ in range(args.clients)]
        for t in threads:
            t.start()
        time.sleep(1)  # the API requests are under way
        scrape_ms = []
        failed = 0
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        end = time.time() + args.duration
        next_at = time.time()
        while time.time() < end:
            try:
                t = time.perf_counter()
                conn.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
                r = conn.getresponse()
                r.read()
                if r.status == 200:
                    scrape_ms.append((time.perf_counter() - t) * 1000)
                else:
                    failed += 1
            except (OSError, http.client.HTTPException):
                failed += 1
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            next_at += 1.0 / args.rate
            time.sleep(max(0.0, next_at - time.time()))
        stop.set()
        for t in threads:
            t.join(timeout=130)
        print(f"{binary}: {args.clients} clients on /api/v1/findings?range={args.history} for {args.duration} s")
        print(f"  /metrics: {len(scrape_ms)} scrapes, {failed} failed; p50 {pct(scrape_ms, 0.5):.1f} ms, "
              f"p99 {pct(scrape_ms, 0.99):.1f} ms, max {max(scrape_ms, default=float('nan')):.1f} ms")
        print(f"  findings: answers {dict(sorted(answers.items(), key=str))}; 200s p50 {pct(api_ms, 0.5):.0f} ms, "
              f"max {max(api_ms, default=float('nan')):.0f} ms")
    finally:
        agent.terminate()
        try:
            agent.wait(timeout=30)
        except subprocess.TimeoutExpired:
            agent.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--duration", type=float, default=30)
    ap.add_argument("--rate", type=float, default=10)
    ap.add_argument("--history", default="6h")
    args = ap.parse_args()
    for b in args.binaries:
        run(b, args)


if __name__ == "__main__":
    main()
