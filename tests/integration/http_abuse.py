#!/usr/bin/env python3
"""Black-box abuse of the agent's listener, the reproducers of the bounded-HTTP
issue: each case runs against a live `gpulens serve`, measures the agent's
resident memory (VmRSS, and VmHWM for the peak) from /proc, and checks that a
scrape still gets through. Prints one line per case; exits 1 on the first
failure.

  http_abuse.py PORT PID [SLOW_CONNECTIONS]   (default 600)
"""
import socket
import sys
import time

PORT = int(sys.argv[1])
PID = int(sys.argv[2])
SLOW = int(sys.argv[3]) if len(sys.argv) > 3 else 600
MIB = 1 << 20


def status_kib(field):
    with open(f"/proc/{PID}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise SystemExit(f"no {field} for pid {PID}: has the agent died?")


def rss_mib():
    return status_kib("VmRSS") / 1024


def peak_mib():
    return status_kib("VmHWM") / 1024


def connect():
    s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    return s


def read_all(s, limit=1 << 16, timeout=10):
    s.settimeout(timeout)
    out = b""
    try:
        while len(out) < limit:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except (socket.timeout, ConnectionResetError):
        pass
    return out


def scrape(timeout=5):
    """A whole scrape on a fresh connection; returns (status line, seconds)."""
    t0 = time.monotonic()
    s = connect()
    s.settimeout(timeout)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    data = read_all(s, limit=64 * MIB, timeout=timeout)
    s.close()
    return data.split(b"\r\n", 1)[0].decode(errors="replace"), time.monotonic() - t0


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check_scrape(case):
    line, secs = scrape()
    if "200 OK" not in line:
        fail(f"{case}: a scrape got {line!r}")
    return secs


def case_pipelined():
    # 2,000 pipelined scrapes on one connection, answers never read.
    base = rss_mib()
    s = connect()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    req = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * 2000
    s.setblocking(False)
    sent = 0
    deadline = time.monotonic() + 5
    while sent < len(req) and time.monotonic() < deadline:
        try:
            sent += s.send(req[sent:])
        except BlockingIOError:
            time.sleep(0.05)
    time.sleep(1)
    grown = rss_mib() - base
    check_scrape("pipelined")
    s.close()
    print(f"pipelined: 2000 unread GET /metrics, {sent} request bytes taken, RSS {grown:+.1f} MiB")
    if grown > 32:
        fail(f"pipelined: RSS grew {grown:.1f} MiB")


def case_partial_bodies():
    # 300 connections announce a 1 MiB body and send all of it but one byte.
    base = rss_mib()
    conns, refused = [], 0
    chunk = b"x" * (MIB - 1)
    for _ in range(300):
        s = connect()
        s.setblocking(False)
        s.send(b"POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1048576\r\n\r\n")
        conns.append([s, 0])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(off < len(chunk) for _, off in conns):
        progress = False
        for c in conns:
            s, off = c
            if off >= len(chunk) or s is None:
                continue
            try:
                n = s.send(chunk[off:off + 262144])
                c[1] += n
                progress = progress or n > 0
            except (BlockingIOError, InterruptedError):
                pass
            except (BrokenPipeError, ConnectionResetError):
                c[1] = len(chunk)
                refused += 1
        if not progress:
            time.sleep(0.05)
    time.sleep(0.5)
    grown = rss_mib() - base
    check_scrape("partial bodies")
    for s, _ in conns:
        s.close()
    print(f"partial bodies: 300 x 1 MiB announced, unfinished; {refused} refused; RSS {grown:+.1f} MiB")
    if grown > 96:
        fail(f"partial bodies: RSS grew {grown:.1f} MiB")


def case_slow_headers(n=600, seconds=14):
    # n connections send one header byte every 2 s; scrapes keep working and
    # the drippers are dropped once their head deadline (10 s) passes.
    base = rss_mib()
    conns = []
    for _ in range(n):
        s = connect()
        s.setblocking(False)
        conns.append(s)
    head = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100
    worst = 0.0
    dropped = 0
    t0 = time.monotonic()
    i = 0
    while time.monotonic() - t0 < seconds:
        for s in conns:
            if s is None:
                continue
            try:
                s.send(head[i % len(head):i % len(head) + 1])
            except OSError:
                pass
        i += 1
        worst = max(worst, check_scrape("slow headers"))
        time.sleep(2)
    for s in conns:
        try:
            s.setblocking(True)
            s.settimeout(0.01)
            b = s.recv(4096)
            if not b or b.startswith(b"HTTP/1.1 408") or b.startswith(b"HTTP/1.1 503"):
                dropped += 1
        except (socket.timeout, BlockingIOError):
            pass
        except OSError:
            dropped += 1
        s.close()
    grown = rss_mib() - base
    print(f"slow headers: {n} connections dripping 1 byte / 2 s for {seconds} s; slowest scrape {worst * 1000:.0f} ms; "
          f"{dropped} dropped; RSS {grown:+.1f} MiB")
    if grown > 16:
        fail(f"slow headers: RSS grew {grown:.1f} MiB")
    if dropped < n * 0.9:
        fail(f"slow headers: only {dropped} of {n} dripping connections were dropped")


def case_big_head():
    base = rss_mib()
    s = connect()
    s.sendall(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * MIB + b"\r\n\r\n")
    line = read_all(s).split(b"\r\n", 1)[0]
    s.close()
    if b"431" not in line:
        fail(f"1 MB header line answered {line!r}")
    s = connect()
    s.sendall(b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\n\r\n")
    line = read_all(s).split(b"\r\n", 1)[0]
    s.close()
    if b"414" not in line:
        fail(f"100 KB URL answered {line!r}")
    grown = rss_mib() - base
    print(f"big head: 1 MB header line -> 431, 100 KB URL -> 414; RSS {grown:+.1f} MiB")
    if grown > 16:
        fail(f"big head: RSS grew {grown:.1f} MiB")


def case_statuses():
    # The other bounds, each 200 times (so a leak would show): too many header
    # lines (431), a body over the route's limit announced on a GET and on a
    # POST (413, before a byte of it is read), a malformed request line (400).
    cases = [
        (b"GET /metrics HTTP/1.1\r\n" + b"X-A: b\r\n" * 150 + b"\r\n", b"431"),
        (b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1048576\r\n\r\n", b"413"),
        (b"POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 104857600\r\n\r\n", b"413"),
        (b"\x16\x03\x01 not http\r\n\r\n", b"400"),
    ]
    base = rss_mib()
    for req, want in cases:
        for _ in range(200):
            s = connect()
            s.sendall(req)
            line = read_all(s, limit=256, timeout=5).split(b"\r\n", 1)[0]
            s.close()
            if want not in line:
                fail(f"{req[:40]!r}... answered {line!r}, not {want.decode()}")
    grown = rss_mib() - base
    check_scrape("statuses")
    print(f"statuses: 150 header lines -> 431, 1 MiB body on GET -> 413, 100 MiB body on POST -> 413, "
          f"garbage -> 400, 200 times each; RSS {grown:+.1f} MiB")
    if grown > 16:
        fail(f"statuses: RSS grew {grown:.1f} MiB")


def case_connection_flood():
    # 600 idle connections: the 513th and later are not closed without a
    # status line, and a scrape still gets through.
    base = rss_mib()
    conns = [connect() for _ in range(600)]
    time.sleep(0.5)
    grown = rss_mib() - base
    secs = check_scrape("connection flood")
    silent = 0
    for s in conns:
        s.settimeout(0.01)
        try:
            b = s.recv(4096)
            if b == b"":
                silent += 1
        except (socket.timeout, BlockingIOError):
            pass
        except OSError:
            silent += 1
        s.close()
    print(f"connection flood: 600 idle connections, scrape in {secs * 1000:.0f} ms, {silent} closed silently "
          f"(idle ones evicted); RSS {grown:+.1f} MiB")
    if grown > 16:
        fail(f"connection flood: RSS grew {grown:.1f} MiB")


check_scrape("before")
start_peak = peak_mib()
case_big_head()
case_statuses()
case_pipelined()
case_partial_bodies()
case_connection_flood()
case_slow_headers(SLOW)
check_scrape("after")
print(f"agent RSS {rss_mib():.1f} MiB now, peak {peak_mib():.1f} MiB (peak before the cases {start_peak:.1f} MiB)")
if peak_mib() > 256:
    fail(f"agent peak RSS {peak_mib():.1f} MiB above the 256 MiB deployment limit")
