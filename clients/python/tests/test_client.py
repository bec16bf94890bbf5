"""gpulens_client against the PyTorch stand-in (fake_torch/): what it reads,
what it pushes, and that it never raises into the host program."""

import http.server
import logging
import os
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))           # gpulens_client
sys.path.insert(0, os.path.join(HERE, "fake_torch"))  # the stand-in, before any real torch

import torch  # noqa: E402  (the stand-in)
from torch.cuda import build  # noqa: E402

import gpulens_client  # noqa: E402
from gpulens_client import stats, wire  # noqa: E402

MiB = 2**20
UUID = "5c2e1b7a-3f4d-4e5a-9b8c-0123456789ab"


def device(uuid=UUID, reserved=1000 * MiB, allocated=400 * MiB, retries=3, ooms=1):
    return {"uuid": uuid, "stats": {"reserved_bytes.all.current": reserved, "allocated_bytes.all.current": allocated,
                                    "active_bytes.all.current": allocated + 10 * MiB,
                                    "inactive_split_bytes.all.current": 200 * MiB,
                                    "requested_bytes.all.current": allocated - MiB,
                                    "num_alloc_retries": retries, "num_ooms": ooms}}


class Receiver(http.server.BaseHTTPRequestHandler):
    got = []
    status = 200

    def do_PUT(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        Receiver.got.append((self.path, self.headers.get("Content-Type"), self.headers.get("Authorization"), body))
        self.send_response(Receiver.status)
        self.end_headers()
        self.wfile.write(b"line 1: refused\n" if Receiver.status != 200 else b"")

    do_DELETE = do_PUT

    def log_message(self, *args):
        pass


class Stats(unittest.TestCase):
    def test_device_values_from_memory_stats(self):
        v = stats.device_values(torch.cuda.full_stats(device()["stats"]))
        self.assertEqual(v["gpu_allocator_reserved_bytes"], 1000 * MiB)
        self.assertEqual(v["gpu_allocator_allocated_bytes"], 400 * MiB)
        self.assertEqual(v["gpu_allocator_active_bytes"], 410 * MiB)
        self.assertEqual(v["gpu_allocator_inactive_split_bytes"], 200 * MiB)
        self.assertEqual(v["gpu_allocator_requested_bytes"], 399 * MiB)
        self.assertAlmostEqual(v["gpu_memory_fragmentation_ratio"], 0.6)
        self.assertEqual(v["gpu_allocator_retries_total"], 3)
        self.assertEqual(v["gpu_allocator_ooms_total"], 1)

    def test_a_device_without_reserved_memory_gives_nothing(self):
        self.assertEqual(stats.device_values(torch.cuda.full_stats({})), {})
        self.assertEqual(stats.device_values({}), {})

    def test_old_builds_without_requested_bytes_leave_it_out(self):
        s = torch.cuda.full_stats(device()["stats"])
        del s["requested_bytes.all.current"]
        self.assertNotIn("gpu_allocator_requested_bytes", stats.device_values(s))

    def test_external_fragmentation_per_pool_and_stream(self):
        snap = {"segments": [
            # large pool, stream 0: free 4 + 2 + 2 MiB in two segments, largest 4 -> 1 - 4/8
            build.segment(0, [(4 * MiB, "inactive"), (8 * MiB, "active_allocated"), (2 * MiB, "inactive")]),
            build.segment(0, [(2 * MiB, "inactive"), (6 * MiB, "active_pending_free")]),
            # another stream: one free block -> 0
            build.segment(0, [(6 * MiB, "inactive"), (2 * MiB, "active_allocated")], stream=7),
            # small pool
            build.segment(0, [(512, "inactive"), (1024, "active_allocated"), (1536, "inactive")], segment_type="small"),
            # a private pool (CUDA graph)
            build.segment(0, [(2 * MiB, "inactive")], pool_id=(1, 2)),
            # another device: not counted
            build.segment(1, [(64 * MiB, "inactive")]),
        ]}
        pools = {(p.pool, p.stream): p for p in stats.snapshot_pools(snap, 0)}
        self.assertEqual(set(pools), {("large", "0"), ("large", "7"), ("small", "0"), ("large_private_1_2", "0")})
        self.assertEqual(pools["large", "0"].free_bytes, 8 * MiB)
        self.assertEqual(pools["large", "0"].largest_free, 4 * MiB)
        self.assertAlmostEqual(pools["large", "0"].external_fragmentation, 0.5)
        self.assertEqual(pools["large", "7"].external_fragmentation, 0.0)
        self.assertAlmostEqual(pools["small", "0"].external_fragmentation, 1 - 1536 / 2048)
        self.assertEqual(stats.snapshot_pools(snap, 1)[0].free_bytes, 64 * MiB)

    def test_no_free_block_is_not_fragmented(self):
        snap = {"segments": [build.segment(0, [(2 * MiB, "active_allocated")])]}
        self.assertEqual(stats.snapshot_pools(snap, 0)[0].external_fragmentation, 0.0)

    def test_expandable_segments_from_the_allocator_settings(self):
        self.assertIs(stats.expandable_segments({"allocator_settings": {"expandable_segments": True}}), True)
        self.assertIs(stats.expandable_segments({"allocator_settings": {"expandable_segments": False}}), False)
        self.assertIsNone(stats.expandable_segments({"segments": []}))  # older builds do not say


class Wire(unittest.TestCase):
    def test_text_format(self):
        body = wire.render([wire.Sample("gpu_allocator_retries_total", {"gpu_uuid": "GPU-1"}, 3.0),
                            wire.Sample("gpu_memory_fragmentation_ratio", {"gpu_uuid": "GPU-1"}, 0.25),
                            wire.Sample("gpu_memory_fragmentation_ratio", {"gpu_uuid": 'a"b\\'}, 1e-9)])
        self.assertEqual(body, '# TYPE gpu_allocator_retries_total counter\n'
                               'gpu_allocator_retries_total{gpu_uuid="GPU-1"} 3\n'
                               '# TYPE gpu_memory_fragmentation_ratio gauge\n'
                               'gpu_memory_fragmentation_ratio{gpu_uuid="GPU-1"} 0.25\n'
                               'gpu_memory_fragmentation_ratio{gpu_uuid="a\\"b\\\\"} 1e-09\n')

    def test_group_url(self):
        self.assertEqual(wire.group_url("127.0.0.1:9400/", "my job", 42),
                         "http://127.0.0.1:9400/metrics/job/my%20job/pid/42")


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        self.t += 0.25  # every reading 250 ms after the last: a snapshot "takes" 250 ms
        return self.t


class Runner(unittest.TestCase):
    def test_a_wrong_url_is_reported(self):
        # The runner in a real program (the stand-in as its torch, slow to
        # import as PyTorch is): the import is no failure, and an agent that
        # is not there is said on stderr, once, however often it fails.
        import json
        import subprocess
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            state = os.path.join(tmp, "torch.json")
            with open(state, "w") as f:
                json.dump({"devices": [device()]}, f)
            env = dict(os.environ, GPULENS_FAKE_TORCH=state, GPULENS_FAKE_TORCH_IMPORT_SECONDS="0.3",
                       PYTHONPATH=os.pathsep.join([os.path.dirname(HERE), os.path.join(HERE, "fake_torch")]))
            r = subprocess.run([sys.executable, "-m", "gpulens_client", "--url", "http://127.0.0.1:1", "--interval",
                                "0.05", "--", sys.executable, "-c",
                                "import time, torch, gpulens_client\n"
                                "c = gpulens_client._client\n"
                                "deadline = time.monotonic() + 30\n"
                                "while c.errors < 3 and time.monotonic() < deadline: time.sleep(0.05)\n"
                                "print('errors', min(c.errors, 3))"],
                               env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("errors 3", r.stdout)
        self.assertEqual(r.stderr.count("push to http://127.0.0.1:1 failed"), 1, r.stderr)
        self.assertNotIn("partially initialized", r.stderr)


class ClientTest(unittest.TestCase):
    def setUp(self):
        torch.cuda.calls.update(memory_stats=0, _snapshot=0)
        snap = {"segments": [build.segment(0, [(4 * MiB, "inactive"), (8 * MiB, "active_allocated"),
                                               (4 * MiB, "inactive"), (8 * MiB, "inactive")])],
                "device_traces": [[]], "allocator_settings": {"expandable_segments": True}}
        torch.cuda._set(True, [device(), {"uuid": "", "stats": {}}], snap)

    def by_name(self, samples):
        return {(s.name, tuple(sorted(s.labels.items()))): s.value for s in samples}

    def test_collect_reads_each_used_device_and_snapshots_every_nth(self):
        c = gpulens_client.Client(snapshot_every=3, torch_module=torch, clock=FakeClock())
        first = self.by_name(c.collect())
        uuid = (("gpu_uuid", "GPU-" + UUID),)
        self.assertEqual(first["gpu_allocator_reserved_bytes", uuid], 1000 * MiB)
        self.assertAlmostEqual(first["gpu_memory_fragmentation_ratio", uuid], 0.6)
        frag_key = ("gpu_allocator_external_fragmentation_ratio", (("gpu_uuid", "GPU-" + UUID), ("pool", "large"),
                                                                   ("stream", "0")))
        self.assertAlmostEqual(first[frag_key], 0.5)  # free 4 + 4 + 8, largest 8
        self.assertEqual(first["gpu_allocator_largest_free_block_bytes", frag_key[1]], 8 * MiB)
        self.assertEqual(first["gpu_allocator_expandable_segments", uuid], 1)
        self.assertAlmostEqual(first["gpu_allocator_snapshot_duration_seconds", uuid], 0.25)
        # Device 1 holds no memory: nothing about it.
        self.assertTrue(all(s.labels.get("gpu_uuid") == "GPU-" + UUID for s in c.collect()))
        c.collect()
        self.assertEqual(torch.cuda.calls["_snapshot"], 1)  # rounds 0..2: one snapshot
        # Between snapshots the last snapshot values are pushed again (a PUT replaces the group).
        self.assertEqual(self.by_name(c.collect())[frag_key], first[frag_key])
        self.assertEqual(torch.cuda.calls["_snapshot"], 2)  # round 3

    def test_snapshot_every_zero_never_snapshots(self):
        c = gpulens_client.Client(snapshot_every=0, torch_module=torch)
        for _ in range(3):
            c.collect()
        self.assertEqual(torch.cuda.calls["_snapshot"], 0)

    def test_without_a_uuid_the_pid_joins(self):
        torch.cuda._set(True, [device(uuid="")])
        samples = gpulens_client.Client(torch_module=torch, snapshot_every=0).collect()
        self.assertTrue(samples)
        self.assertTrue(all("gpu_uuid" not in s.labels for s in samples))

    def test_nothing_before_cuda_is_initialised(self):
        torch.cuda._set(False, [device()])
        self.assertEqual(gpulens_client.Client(torch_module=torch).collect(), [])

    def test_waits_for_the_program_to_import_torch(self):
        saved = sys.modules.pop("torch")
        try:
            c = gpulens_client.Client()
            self.assertEqual(c.collect(), [])
            self.assertTrue(c.push_once())
        finally:
            sys.modules["torch"] = saved

    def test_waits_while_torch_is_still_importing(self):
        # What the thread sees while the program runs `import torch`: the
        # module is in sys.modules, its spec says it is initialising, and
        # `cuda` is not there yet (Debian's torch took seconds here).
        import importlib.machinery
        import types
        half = types.ModuleType("torch")
        half.__spec__ = importlib.machinery.ModuleSpec("torch", None)
        half.__spec__._initializing = True
        saved = sys.modules["torch"]
        sys.modules["torch"] = half
        try:
            c = gpulens_client.Client("http://127.0.0.1:1")
            self.assertEqual(c.collect(), [])
            self.assertTrue(c.push_once())
            self.assertEqual(c.errors, 0, c.last_error)
            half.__spec__._initializing = False  # done, but without a cuda attribute: still nothing to read
            self.assertTrue(c.push_once())
            self.assertEqual(c.errors, 0, c.last_error)
        finally:
            sys.modules["torch"] = saved

    def test_logs_the_first_failure_of_each_kind_once(self):
        Receiver.got, Receiver.status = [], 400
        srv = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        try:
            c = gpulens_client.Client("http://127.0.0.1:1", torch_module=torch, timeout=0.5, snapshot_every=0)
            with self.assertLogs("gpulens_client", logging.WARNING) as logs:
                for _ in range(2):
                    self.assertFalse(c.push_once())  # nothing listens: the agent is unreachable
                c.url = "http://127.0.0.1:%d" % srv.server_port
                for _ in range(2):
                    self.assertFalse(c.push_once())  # refused: HTTP 400
                Receiver.status = 500
                self.assertFalse(c.push_once())  # another status, another kind
                torch.cuda._set(True, [device()], raise_="memory_stats")
                for _ in range(2):
                    self.assertFalse(c.push_once())  # reading the allocator fails
            self.assertEqual(c.errors, 7)
            text = [r.getMessage() for r in logs.records]
            self.assertEqual(len(text), 4, text)
            self.assertIn("push to http://127.0.0.1:1 failed (URLError", text[0])
            self.assertIn("HTTP 400: line 1: refused", text[1])
            self.assertIn("HTTP 500", text[2])
            self.assertIn("reading the allocator failed", text[3])
            self.assertIn("illegal memory access", text[3])
        finally:
            Receiver.status = 200
            srv.shutdown()
            srv.server_close()

    def test_pushes_the_group_of_its_pid(self):
        Receiver.got, Receiver.status = [], 200
        srv = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        try:
            c = gpulens_client.Client("127.0.0.1:%d" % srv.server_port, torch_module=torch, token="s3cret")
            self.assertTrue(c.push_once())
            path, ctype, auth, body = Receiver.got[0]
            self.assertEqual(path, "/metrics/job/gpulens_client/pid/%d" % os.getpid())
            self.assertEqual(ctype, "text/plain; version=0.0.4; charset=utf-8")
            self.assertEqual(auth, "Bearer s3cret")
            self.assertIn('gpu_allocator_reserved_bytes{gpu_uuid="GPU-%s"} 1048576000\n' % UUID, body)
            self.assertIn("# TYPE gpu_allocator_ooms_total counter\n", body)
            Receiver.status = 400
            with self.assertLogs("gpulens_client", logging.WARNING) as logs:
                self.assertFalse(c.push_once())
                self.assertFalse(c.push_once())
            self.assertEqual(len(logs.records), 1)  # logged once
            self.assertEqual(c.errors, 2)
            self.assertIn("HTTP 400: line 1: refused", c.last_error)
            Receiver.status = 200
            c.stop()
            self.assertEqual(Receiver.got[-1][0], "/metrics/job/gpulens_client/pid/%d" % os.getpid())
        finally:
            srv.shutdown()
            srv.server_close()

    def test_never_raises_into_the_program(self):
        dead = gpulens_client.Client("http://127.0.0.1:1", torch_module=torch, timeout=0.5)
        with self.assertLogs("gpulens_client", logging.WARNING):
            self.assertFalse(dead.push_once())
        self.assertEqual(dead.errors, 1)
        torch.cuda._set(True, [device()], raise_="memory_stats")
        broken = gpulens_client.Client("http://127.0.0.1:1", torch_module=torch)
        with self.assertLogs("gpulens_client", logging.WARNING):
            self.assertFalse(broken.push_once())
        self.assertIn("illegal memory access", broken.last_error)

    def test_the_thread_is_a_daemon_and_stops(self):
        c = gpulens_client.Client("http://127.0.0.1:1", interval=0.05, torch_module=torch, timeout=0.2)
        logging.getLogger("gpulens_client").disabled = True
        try:
            c.start()
            self.assertTrue(c._thread.daemon)
            c.stop()
            self.assertFalse(c._thread.is_alive())
        finally:
            logging.getLogger("gpulens_client").disabled = False


if __name__ == "__main__":
    unittest.main()
