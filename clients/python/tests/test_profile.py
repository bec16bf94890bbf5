"""The capture side of gpulens_client against a stand-in agent: stacks
sampling, the upload, and each refusal (a second capture, no torch, a
result beyond max_bytes, an unknown kind)."""

import http.server
import json
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from gpulens_client import profile, steps  # noqa: E402


class Agent(http.server.BaseHTTPRequestHandler):
    jobs = []        # handed out by /next, one per poll
    posts = []       # (path, content type, body, authorization)
    posted = threading.Condition()

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.startswith("/api/v1/profile/next?pid=") and Agent.jobs:
            body = json.dumps(Agent.jobs.pop(0)).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_response(204)
            self.end_headers()

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with Agent.posted:
            Agent.posts.append((self.path, self.headers["Content-Type"], body, self.headers.get("Authorization")))
            Agent.posted.notify_all()
        self.send_response(204)
        self.end_headers()


def busy_function(deadline):
    x = 0
    while time.monotonic() < deadline:
        x += 1
    return x


class ProfilerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Agent)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        cls.url = "http://127.0.0.1:%d" % cls.server.server_address[1]

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()

    def setUp(self):
        Agent.jobs, Agent.posts = [], []
        self.logged = []
        self.p = profile.Profiler(self.url, os.getpid(), 2.0, "tok", self.logged.append)

    def wait_posts(self, n):
        with Agent.posted:
            self.assertTrue(Agent.posted.wait_for(lambda: len(Agent.posts) >= n, timeout=20), Agent.posts)
        return Agent.posts

    def test_nothing_asked(self):
        self.assertIsNone(self.p.poll())

    def test_stacks_capture_names_the_busy_function(self):
        Agent.jobs = [{"id": "p1", "kind": "stacks", "duration_s": 0.5, "max_bytes": 1 << 20}]
        worker = threading.Thread(target=busy_function, args=(time.monotonic() + 3,))
        worker.start()
        self.assertEqual(self.p.poll()["id"], "p1")
        path, ctype, body, auth = self.wait_posts(1)[0]
        worker.join()
        self.assertRegex(path, r"^/api/v1/profile/p1/result\?window_s=[0-9.]+$")  # no steps asked
        self.assertEqual(ctype, "application/json")
        self.assertEqual(auth, "Bearer tok")
        result = json.loads(body)
        self.assertGreater(result["rounds"], 5)
        hot = [f for t in result["threads"] for f in t["frames"] if f["function"] == "busy_function"]
        self.assertTrue(hot and hot[0]["self"] > 0.5, result)
        self.assertNotIn("gpulens_client-profile", [t["name"] for t in result["threads"]])  # not itself

    def test_a_second_request_while_one_runs_is_refused(self):
        Agent.jobs = [{"id": "a", "kind": "stacks", "duration_s": 1.0, "max_bytes": 1 << 20},
                      {"id": "b", "kind": "stacks", "duration_s": 1.0, "max_bytes": 1 << 20}]
        self.p.poll()
        self.p.poll()
        posts = self.wait_posts(2)
        self.assertEqual(posts[0][0], "/api/v1/profile/b/error")
        self.assertIn(b"already running", posts[0][2])
        self.assertTrue(posts[1][0].startswith("/api/v1/profile/a/result?window_s="), posts[1][0])

    def test_refusals_name_the_reason(self):
        cases = [({"kind": "stacks", "duration_s": 0.1, "max_bytes": 10}, b"larger than max_bytes (10)"),
                 ({"kind": "perf", "duration_s": 0.1}, b"unknown kind")]
        if "torch" not in sys.modules:
            cases.append(({"kind": "torch", "duration_s": 0.1}, b"torch is not imported"))
        for i, (job, why) in enumerate(cases):
            Agent.jobs = [dict(job, id="e%d" % i)]
            self.p.poll()
            path, _, body, _ = self.wait_posts(i + 1)[i]
            self.assertEqual(path, "/api/v1/profile/e%d/error" % i)
            self.assertIn(why, body)
            self.p._thread.join()

    def test_unreachable_agent_raises_to_the_caller_only(self):
        p = profile.Profiler("http://127.0.0.1:1", os.getpid(), 0.5, None, self.logged.append)
        with self.assertRaises(OSError):
            p.poll()


class FakeOptim:
    """torch.optim's shape as far as StepCounter looks: Optimizer and its
    subclasses, each with its own step()."""

    def __init__(self):
        class Optimizer:
            def step(self):
                raise NotImplementedError

        class SGD(Optimizer):
            def step(self):
                return "sgd"

        class Momentum(SGD):  # calls its parent's step: one step, not two
            def step(self):
                return super().step() + "+m"

        self.Optimizer, self.SGD, self.Momentum = Optimizer, SGD, Momentum


class FakeTorch:
    def __init__(self):
        self.optim = FakeOptim()


class StepCounterTest(unittest.TestCase):
    def test_wraps_every_optimizer_class_and_unwraps(self):
        torch = FakeTorch()
        sgd_step = torch.optim.SGD.__dict__["step"]
        c = steps.StepCounter(torch).install()
        self.assertEqual(torch.optim.SGD().step(), "sgd")  # the step still runs and returns
        self.assertEqual(torch.optim.Momentum().step(), "sgd+m")
        self.assertEqual(c.count, 2)  # Momentum's call of SGD.step counted once
        c.remove()
        self.assertIs(torch.optim.SGD.__dict__["step"], sgd_step)
        torch.optim.SGD().step()
        self.assertEqual(c.count, 2)  # nothing counts after remove()

    def test_arm_runs_its_callback_once_at_the_target(self):
        torch = FakeTorch()
        c = steps.StepCounter(torch).install()
        sgd = torch.optim.SGD()
        sgd.step()
        hits = []
        c.arm(2, lambda: hits.append(c.count))
        sgd.step()
        self.assertEqual(hits, [])
        sgd.step()
        sgd.step()
        self.assertEqual(hits, [3])  # on the 2nd step after arm(), on the stepping thread, once
        c.remove()

    def test_without_torch_optim_says_so(self):
        with self.assertRaises(RuntimeError) as e:
            steps.StepCounter(object()).install()
        self.assertIn("give a duration instead", str(e.exception))


if __name__ == "__main__":
    unittest.main()
