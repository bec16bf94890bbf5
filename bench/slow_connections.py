#!/usr/bin/env python3
"""Scrapes during 1,000 slow connections: latency and the agent's memory.

Starts `gpulens serve --source sim --interval 100ms` on loopback, measures its
RSS at rest, then for DURATION keeps SLOW slow connections open -- half drip
a request head one byte every DRIP seconds, half send a whole POST head that
announces a 64 KiB body and drip the body one byte every DRIP seconds; each
one the agent drops (408, 503, or closed) is opened again at once, so the
agent faces SLOW of them the whole time -- while scraping /metrics at a steady
RATE per second, alternating a kept-alive connection (as Prometheus scrapes)
and a new connection per scrape (which must win a slot among the slow ones).
Prints the scrape latency p50/p99/max, scrapes that failed, the agent's RSS
before and its peak during the run (VmRSS sampled every 0.5 s), and how the
slow connections ended.

    bench/slow_connections.py build/release/gpulens [--slow 1000] [--duration 60s] [--rate 10]
"""

import argparse
import http.client
import os
import resource
import socket
import subprocess
import sys
import threading
import time

MIB = 1 << 20


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def rss_kib(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("gpulens")
    ap.add_argument("--slow", type=int, default=1000)
    ap.add_argument("--duration", type=float, default=60)
    ap.add_argument("--rate", type=float, default=10, help="scrapes per second")
    ap.add_argument("--drip", type=float, default=2, help="seconds between two bytes of a slow connection")
    args = ap.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, 4 * args.slow + 256))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    port = free_port()
    agent = subprocess.Popen([args.gpulens, "serve", "--listen", f"127.0.0.1:{port}", "--source", "sim",
                              "--interval", "100ms"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                c.request("GET", "/metrics")
                c.getresponse().read()
                c.close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the agent did not start")
                time.sleep(0.2)
        time.sleep(3)
        base = rss_kib(agent.pid)
        stop = threading.Event()
        peak = [base]

        def sampler():
            while not stop.is_set():
                peak[0] = max(peak[0], rss_kib(agent.pid))
                stop.wait(0.5)

        # --- the slow connections ----------------------------------------------
        head = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 4000
        post = b"POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 65536\r\n\r\n"
        ends = {"408": 0, "503": 0, "other status": 0, "closed": 0}
        opened = [0]

        def open_slow(i):
            s = socket.socket()
            s.setblocking(False)
            try:
                s.connect_ex(("127.0.0.1", port))
            except OSError:
                pass
            opened[0] += 1
            return [s, 0, i % 2 == 1]  # socket, bytes sent, body dripper?

        def dripper():
            conns = [open_slow(i) for i in range(args.slow)]
            nxt = time.monotonic()
            while not stop.is_set():
                for i, c in enumerate(conns):
                    s, off, body = c
                    try:
                        data = s.recv(4096)
                        code = data[9:12].decode(errors="replace") if data else ""
                        ends[code if code in ("408", "503") else ("other status" if data else "closed")] += 1
                        s.close()
                        conns[i] = open_slow(i)
                        continue
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError:
                        ends["closed"] += 1
                        s.close()
                        conns[i] = open_slow(i)
                        continue
                    try:
                        if body and off == 0:
                            c[1] = s.send(post) or 0
                        elif body:
                            c[1] += s.send(b"x")
                        else:
                            c[1] += s.send(head[off % len(head):off % len(head) + 1])
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError:
                        pass
                nxt += args.drip
                stop.wait(max(0, nxt - time.monotonic()))
            for s, _, _ in conns:
                s.close()

        threads = [threading.Thread(target=sampler), threading.Thread(target=dripper)]
        for t in threads:
            t.start()
        time.sleep(args.drip * 2)  # every slow connection is open and has sent something

        # --- steady scrapes --------------------------------------------------------
        lat, failed = [], []
        keep = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        t_end = time.monotonic() + args.duration
        nxt = time.monotonic()
        n = 0
        while time.monotonic() < t_end:
            n += 1
            fresh = n % 2 == 0
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10) if fresh else keep
            t0 = time.perf_counter()
            try:
                c.request("GET", "/metrics")
                r = c.getresponse()
                body = r.read()
                if r.status != 200 or b"gpu_power_watts" not in body:
                    failed.append(f"status {r.status}")
                else:
                    lat.append(time.perf_counter() - t0)
            except (OSError, http.client.HTTPException) as e:
                failed.append(("new connection: " if fresh else "kept alive: ") + repr(e))
                if not fresh:
                    keep.close()
                    keep = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            if fresh:
                c.close()
            nxt += 1 / args.rate
            time.sleep(max(0, nxt - time.monotonic()))
        stop.set()
        for t in threads:
            t.join()
        keep.close()
        lat.sort()
        q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000 if lat else float("nan")
        hwm = rss_kib(agent.pid, "VmHWM")
        print(f"slow connections: {args.slow} open at once ({opened[0]} opened in all), one byte every "
              f"{args.drip:g} s, half in the head, half in a 64 KiB body; {args.duration:g} s")
        print(f"scrapes: {len(lat)} answered, {len(failed)} failed; p50 {q(0.5):.1f} ms, p99 {q(0.99):.1f} ms, "
              f"max {q(1.0):.1f} ms")
        print(f"agent RSS: {base / 1024:.1f} MiB before, peak {peak[0] / 1024:.1f} MiB during "
              f"(+{(peak[0] - base) / 1024:.1f} MiB); VmHWM {hwm / 1024:.1f} MiB")
        print("slow connections ended by the agent: " + ", ".join(f"{k} {v}" for k, v in ends.items()))
        for f in failed[:10]:
            print("failed scrape:", f)
        return 1 if failed else 0
    finally:
        agent.terminate()
        agent.wait(10)


if __name__ == "__main__":
    sys.exit(main())
