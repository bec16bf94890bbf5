#!/usr/bin/env python3
"""What on-demand captures cost the host program, and how long
`gpulens profile` takes to print its analysis, in one run (docs/PERFORMANCE.md).

A CPU training loop (Debian's torch; three 512x512 linear layers, batch 64,
SGD, torch.set_num_threads(1)) runs in this process; per round, WINDOW
seconds of steps in each case, one after another:

  a. no client
  b. the client idle (gpulens_client.start(), default 5 s interval: a poll
     of the agent per interval, nothing to push without CUDA)
  c. during a stacks capture: `gpulens profile --pid SELF --duration WINDOW`
  d. during a torch capture:  `gpulens profile --pid SELF --kind torch --duration WINDOW`
  e. the same torch capture by hand: torch.profiler.profile(CPU activities,
     record_shapes off) around WINDOW seconds of the loop, then the export
     to JSON and gzip, as the client does (the client idle, as in d)

For c and d the steps counted are those while the client's capture thread
runs (the profiler window, the export, the gzip and the upload); the
command's own wall time is the time from `gpulens profile` to its printed
analysis. Prints per case the median wall time of a step (median over
rounds) and its ratio to the neighbouring baselines (median over rounds, and
each round's), and the same for the process's CPU time per step
(time.process_time over the case / its steps: the client's threads, the
sampler, the profiler and the export included), which a loaded machine
disturbs far less than wall time. Last, per case, the CPU of the process's
threads other than the loop's (the client's poller, the sampler, the capture
thread) as a share of the loop thread's CPU, and its rise over the baseline:
the client's cost measured directly, which the machine's noise barely moves.

    bench/profile_overhead.py build/release/gpulens [ROUNDS] [WINDOW_S]
"""

import gzip
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))

import torch  # noqa: E402

import gpulens_client  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Loop:
    def __init__(self):
        torch.manual_seed(0)
        torch.set_num_threads(1)
        self.model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                         torch.nn.ReLU(), torch.nn.Linear(512, 10))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.x, self.y = torch.randn(64, 512), torch.randint(0, 10, (64,))

    def step(self):
        t0 = time.perf_counter()
        self.opt.zero_grad()
        torch.nn.functional.cross_entropy(self.model(self.x), self.y).backward()
        self.opt.step()
        return time.perf_counter() - t0

    def for_seconds(self, seconds):
        end = time.monotonic() + seconds
        return self.while_true(lambda: time.monotonic() < end, seconds + 1)

    def while_true(self, cond, limit_s):
        out, end = [], time.monotonic() + limit_s
        cpu, main = time.process_time(), time.thread_time()
        while cond() and time.monotonic() < end:
            out.append(self.step())
        self.cpu = (time.process_time() - cpu) / max(len(out), 1)  # the process's CPU per step
        # The CPU of every thread but this one (the client's poller, the
        # sampler, the capture thread, exited ones included), as a share of
        # this thread's: what the client takes beside the loop, measured
        # directly and far less disturbed by the machine than step times.
        main = time.thread_time() - main
        self.others = (time.process_time() - cpu - main) / main if main > 0 else 0.0
        return out


def capture(loop, gpulens, url, kind, window, client):
    """Runs `gpulens profile` on this process; the steps while the client's
    capture thread runs, the command's wall time, and when the thread ran."""
    cmd = [gpulens, "profile", "--url", url, "--pid", str(os.getpid()), "--kind", kind,
           "--duration", "%gs" % window]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = {}
    threading.Thread(target=lambda: out.update(zip(("stdout", "stderr"), proc.communicate())), daemon=True).start()
    p = client.profiler
    started = [None]

    def waiting():  # until the client's capture thread starts
        t = p._thread
        if t is not None and t.is_alive() and p.captures + p.failures == base:
            started[0] = time.monotonic()
            return False
        return proc.poll() is None

    base = p.captures + p.failures
    loop.while_true(waiting, 60)
    if started[0] is None:
        raise SystemExit("the capture did not start: %s" % out)
    steps = loop.while_true(lambda: p._thread.is_alive(), window + 60)
    cpu, others = loop.cpu, loop.others
    ended = time.monotonic()
    loop.while_true(lambda: proc.poll() is None, 60)  # the agent, the analysis, the printing
    wall = time.monotonic() - t0
    time.sleep(0.2)
    if proc.returncode != 0:
        raise SystemExit("gpulens profile failed: %s" % out.get("stderr"))
    loop.cpu, loop.others = cpu, others
    return steps, wall, started[0] - t0, ended - started[0]


def by_hand(loop, window):
    prof = torch.profiler
    p = prof.profile(activities=[prof.ProfilerActivity.CPU], record_shapes=False)
    p.__enter__()
    steps = loop.for_seconds(window)
    cpu, others = loop.cpu, loop.others
    t0 = time.monotonic()
    p.__exit__(None, None, None)
    tmp = tempfile.mkdtemp()
    try:
        path = os.path.join(tmp, "t.json")
        p.export_chrome_trace(path)
        with open(path, "rb") as f:
            gzip.compress(f.read(), compresslevel=6)
    finally:
        shutil.rmtree(tmp)
    loop.cpu, loop.others = cpu, others
    return steps, time.monotonic() - t0


def main():
    gpulens = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    window = float(sys.argv[3]) if len(sys.argv) > 3 else 10.0
    base_s = window / 2
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    agent = subprocess.Popen([gpulens, "serve", "--listen", "127.0.0.1:%d" % port, "--source", "sim",
                              "--scenario", "healthy-training", "--push"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Per round, each case between two baselines (the machine's load drifts):
    #   a0 | b1 | c | b2 | d | b3 | e | a4     (a: no client, b: client idle)
    # case b against the mean of a0 and a4, c against b1 and b2, d against
    # b2 and b3, e against b3 (and b2).
    ratios = {k: [] for k in "bcde"}
    cpu_ratios = {k: [] for k in "bcde"}
    cpus = {k: [] for k in "abcde"}
    others = {k: [] for k in "abcde"}
    medians = {k: [] for k in "abcde"}
    counts = {k: 0 for k in "abcde"}
    walls = {"stacks": [], "torch": []}
    exports = []
    try:
        time.sleep(1.5)
        loop = Loop()
        loop.for_seconds(3)  # warm-up
        for r in range(rounds):
            seg, cpu, oth = {}, {}, {}
            seg["a0"] = loop.for_seconds(base_s)
            cpu["a0"] = loop.cpu
            oth["a0"] = loop.others
            client = gpulens_client.start(url=url)
            seg["b1"] = loop.for_seconds(base_s)
            cpu["b1"] = loop.cpu
            oth["b1"] = loop.others
            seg["c"], wall, pickup, ran = capture(loop, gpulens, url, "stacks", window, client)
            cpu["c"] = loop.cpu
            oth["c"] = loop.others
            walls["stacks"].append((wall, pickup, ran))
            seg["b2"] = loop.for_seconds(base_s)
            cpu["b2"] = loop.cpu
            oth["b2"] = loop.others
            seg["d"], wall, pickup, ran = capture(loop, gpulens, url, "torch", window, client)
            cpu["d"] = loop.cpu
            oth["d"] = loop.others
            walls["torch"].append((wall, pickup, ran))
            seg["b3"] = loop.for_seconds(base_s)
            cpu["b3"] = loop.cpu
            oth["b3"] = loop.others
            seg["e"], export = by_hand(loop, window)
            cpu["e"] = loop.cpu
            oth["e"] = loop.others
            exports.append(export)
            gpulens_client.stop()
            seg["a4"] = loop.for_seconds(base_s)
            cpu["a4"] = loop.cpu
            oth["a4"] = loop.others
            m = {k: statistics.median(v) for k, v in seg.items()}
            ratios["b"].append(m["b1"] / ((m["a0"] + m["a4"]) / 2))
            ratios["c"].append(m["c"] / ((m["b1"] + m["b2"]) / 2))
            ratios["d"].append(m["d"] / ((m["b2"] + m["b3"]) / 2))
            ratios["e"].append(m["e"] / ((m["b2"] + m["b3"]) / 2))
            cpu_ratios["b"].append(cpu["b1"] / ((cpu["a0"] + cpu["a4"]) / 2))
            cpu_ratios["c"].append(cpu["c"] / ((cpu["b1"] + cpu["b2"]) / 2))
            cpu_ratios["d"].append(cpu["d"] / ((cpu["b2"] + cpu["b3"]) / 2))
            cpu_ratios["e"].append(cpu["e"] / ((cpu["b2"] + cpu["b3"]) / 2))
            for k, keys in {"a": ("a0", "a4"), "b": ("b1", "b2", "b3"), "c": ("c",), "d": ("d",), "e": ("e",)}.items():
                cpus[k].append(statistics.mean(cpu[key] for key in keys))
                others[k].append(statistics.mean(oth[key] for key in keys))
            for k, keys in {"a": ("a0", "a4"), "b": ("b1", "b2", "b3"), "c": ("c",), "d": ("d",), "e": ("e",)}.items():
                medians[k].append(statistics.median(x for key in keys for x in seg[key]))
                counts[k] += sum(len(seg[key]) for key in keys)
            print("round %d done" % (r + 1), file=sys.stderr)
    finally:
        agent.terminate()
        agent.wait()

    names = {"a": "no client", "b": "client idle", "c": "stacks capture", "d": "torch capture (client)",
             "e": "torch.profiler by hand"}
    against = {"b": "a", "c": "b", "d": "b", "e": "b"}
    print("torch %s, %d rounds, %g s windows, %g s baselines around each; step = forward+backward+SGD of a "
          "3-layer MLP (512 wide, batch 64), 1 intra-op thread" % (torch.__version__, rounds, window, base_s))
    print("%-24s %6s %9s %13s %-24s %9s %13s %s" % ("case", "steps", "wall ms", "vs neighbours", "(per round)",
                                                   "CPU ms", "vs neighbours", "(per round)"))
    for k in "abcde":
        med = statistics.median(medians[k])
        rel = per = crel = cper = ""
        if k in ratios:
            rel = "%+6.1f%% vs %s" % (100 * (statistics.median(ratios[k]) - 1), against[k])
            per = " ".join("%+.1f%%" % (100 * (x - 1)) for x in ratios[k])
            crel = "%+6.1f%% vs %s" % (100 * (statistics.median(cpu_ratios[k]) - 1), against[k])
            cper = " ".join("%+.1f%%" % (100 * (x - 1)) for x in cpu_ratios[k])
        print("%-24s %6d %9.2f %13s %-24s %9.2f %13s %s" % (names[k], counts[k], med * 1e3, rel, "(" + per + ")",
                                                           statistics.median(cpus[k]) * 1e3, crel, "(" + cper + ")"))
    # The client's own CPU beside the loop: the other threads' CPU as a share
    # of the loop thread's, and its rise over the case it is compared with
    # (percentage points of the loop's CPU; median over rounds).
    print("%-24s %s" % ("case", "other threads' CPU / the loop thread's (per round)   rise vs neighbour"))
    for k in "abcde":
        rise = ""
        if k in against:
            rise = "%+.2f points vs %s" % (100 * statistics.median(
                o - n for o, n in zip(others[k], others[against[k]])), against[k])
        print("%-24s %6.2f%%  (%s)  %s" % (names[k], 100 * statistics.median(others[k]),
                                        " ".join("%.2f%%" % (100 * x) for x in others[k]), rise))
    for kind in ("stacks", "torch"):
        w = sorted(walls[kind])
        mid = w[len(w) // 2]
        print("gpulens profile --kind %s --duration %gs: %.2f s to the printed analysis (pickup %.2f s, "
              "capture thread %.2f s, agent+analysis %.2f s; median round)" %
              (kind, window, mid[0], mid[1], mid[2], mid[0] - mid[1] - mid[2]))
    print("by hand: profiler stop + export + gzip %.2f s (blocks the loop; median round)" % statistics.median(exports))


if __name__ == "__main__":
    main()
