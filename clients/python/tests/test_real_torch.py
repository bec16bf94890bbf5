"""gpulens_client with the real PyTorch this machine has (Debian's
python3-torch is a CPU build: CUDA is unavailable, so what runs here is the
import, the calls the client makes on a torch without CUDA, and the runner;
the CUDA readings are covered by the stand-in in test_client.py).

Each check runs in a fresh interpreter so the stand-in cannot shadow torch.
Skipped (exit 77 under CTest) when torch is not installed."""

import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(code, env=None):
    e = dict(os.environ, PYTHONPATH=ROOT)
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=120)


def have_torch():
    return run("import torch").returncode == 0


@unittest.skipUnless(have_torch(), "PyTorch is not installed (Debian: python3-torch)")
class RealTorch(unittest.TestCase):
    def test_client_runs_against_real_torch_without_cuda(self):
        r = run("""
import torch, gpulens_client
from gpulens_client import stats
assert not torch.cuda.is_available()
c = gpulens_client.Client("http://127.0.0.1:1", torch_module=torch)
assert c.collect() == [], "nothing to read without CUDA"
assert c.push_once() is True and c.errors == 0, c.last_error
assert stats.device_values(torch.cuda.memory_stats(0)) == {}
assert hasattr(torch.cuda.memory, "_snapshot")
print(torch.__version__)
""")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_runner_starts_the_client_in_an_unchanged_program(self):
        r = subprocess.run([sys.executable, "-m", "gpulens_client", "--url", "http://127.0.0.1:1", "--interval",
                            "0.1", "--", sys.executable, "-c",
                            "import sys, time, torch, gpulens_client; time.sleep(0.3); "
                            "c = gpulens_client._client; assert c is not None and c._thread.is_alive(); "
                            "print('started', c.url, c.interval); sys.exit(3)"],
                           env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 3, r.stderr)  # the program's own status
        self.assertIn("started http://127.0.0.1:1 0.1", r.stdout)

    def test_runner_reports_nothing_while_torch_imports(self):
        # The client's thread runs while the program imports torch (seconds
        # with Debian's build): a module still initialising is not a failure.
        r = subprocess.run([sys.executable, "-m", "gpulens_client", "--url", "http://127.0.0.1:1", "--interval",
                            "0.01", "--", sys.executable, "-c",
                            "import time, torch, gpulens_client; time.sleep(0.2); "
                            "c = gpulens_client._client; print('errors', c.errors, c.last_error)"],
                           env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("errors 0", r.stdout)
        self.assertNotIn("partially initialized", r.stderr)
        self.assertNotIn("gpulens_client:", r.stderr)

    def test_windows_in_optimizer_steps_end_after_the_steps(self):
        # A real CPU training loop on the main thread; captures asked for 3
        # (torch) and 5 (stacks) steps with a 60 s limit end after them: the
        # upload says how many steps it counted, and the trace holds that
        # many optimizer steps (one more may have begun before the profiler
        # stopped at the next bytecode boundary).
        r = run("""
import gzip, json, os, sys, threading, http.server, time
sys.path.insert(0, %r)
import torch
from test_profile import Agent
from gpulens_client import profile
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Agent)
threading.Thread(target=server.serve_forever, daemon=True).start()
p = profile.Profiler("http://127.0.0.1:%%d" %% server.server_address[1], os.getpid(), 5.0, None, print)
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 64), torch.randint(0, 4, (32,))
original_step = type(opt).__dict__["step"]
def train_until(n_posts):
    deadline = time.monotonic() + 60
    while len(Agent.posts) < n_posts and time.monotonic() < deadline:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
Agent.jobs = [{"id": "t", "kind": "torch", "duration_s": 60, "max_bytes": 1 << 26, "steps": 3}]
p.poll()
train_until(1)
# The result is in; the capture's thread may still be reading the answer.
# Asked for the next capture before it ends, the client rightly refuses it
# as a second concurrent one (seen under load): wait for the first to end.
p._thread.join(30)
Agent.jobs = [{"id": "s", "kind": "stacks", "duration_s": 60, "max_bytes": 1 << 26, "steps": 5}]
p.poll()
train_until(2)
assert type(opt).__dict__["step"] is original_step, "the counter's wrapper stayed after the captures"
(tpath, _, tbody, _), (spath, _, sbody, _) = Agent.posts
print(tpath)
print(spath)
events = json.loads(gzip.decompress(tbody))
events = events["traceEvents"] if isinstance(events, dict) else events
print("optimizer steps in the trace", sum(1 for e in events if str(e.get("name", "")).startswith("Optimizer.step#")))
print("stacks window", json.loads(sbody)["duration_s"])
""" % HERE)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertRegex(lines[0], r"^/api/v1/profile/t/result\?window_s=[0-9.]+&steps=3$")
        self.assertRegex(lines[1], r"^/api/v1/profile/s/result\?window_s=[0-9.]+&steps=5$")
        n = int(lines[2].split()[-1])
        self.assertIn(n, (3, 4), r.stdout)
        self.assertLess(float(lines[3].split()[-1]), 60, r.stdout)  # ended by the steps, not the limit
        self.assertLess(float(lines[0].split("window_s=")[1].split("&")[0]), 60, r.stdout)

    def test_runner_needs_a_command(self):
        r = subprocess.run([sys.executable, "-m", "gpulens_client", "--url", "x"], env=dict(os.environ, PYTHONPATH=ROOT),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("give the program after --", r.stderr)


if __name__ == "__main__":
    if not have_torch():
        print("SKIP: PyTorch is not installed (Debian: python3-torch)")
        sys.exit(77)
    unittest.main()
