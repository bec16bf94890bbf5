"""gpulens_client: the caching allocator's own numbers, pushed to the gpulens agent.

An agent outside the process sees only how much device memory a process
holds; how fragmented the allocator is can only be read inside it. This
package reads PyTorch's allocator from a daemon thread and pushes it to the
agent's Pushgateway-compatible receiver (`gpulens serve --push`):

    import gpulens_client
    gpulens_client.start(url="http://127.0.0.1:9400", interval=5.0, snapshot_every=12)

or, for an unchanged program:

    python3 -m gpulens_client --url http://127.0.0.1:9400 -- python serve.py ARGS...

Every `interval` seconds, for each CUDA device the process uses, it sends
(names of the agent's catalog):

    gpu_allocator_{allocated,reserved,active,inactive_split,requested}_bytes   memory_stats()
    gpu_memory_fragmentation_ratio            slack: 1 - allocated/reserved
    gpu_allocator_retries_total, gpu_allocator_ooms_total   counters
and, every `snapshot_every`-th push, from torch.cuda.memory._snapshot():
    gpu_allocator_external_fragmentation_ratio{pool,stream}  1 - largest free block / free bytes
    gpu_allocator_largest_free_block_bytes{pool,stream}
    gpu_allocator_expandable_segments          from the snapshot's allocator settings
    gpu_allocator_snapshot_duration_seconds    what the snapshot cost (it holds the allocator lock)

The device is named by its UUID (torch.cuda.get_device_properties(d).uuid);
without one the agent joins by the pid in the grouping key. The thread never
raises into the host program and never blocks it: errors are counted
(Client.errors) and the first of each kind is logged (an unreachable agent, a
refused push by its HTTP status, a failed read of the allocator by its
exception), once; it dies with the process. It waits for the program to
finish importing torch and does not import it itself.

It also takes on-demand captures the agent asks for (`gpulens profile`):
once per interval it asks GET /api/v1/profile/next?pid=PID and runs a
request on its own thread (profile.py, docs/profiling.md); profile=False
turns that off.

Thread-safety: start()/stop() from any thread; one client per process.
"""

import logging
import os
import sys
import threading
import time
from typing import Any, Dict, List, Optional

from . import profile, stats, wire
from .wire import Sample

_profile_module = profile

__all__ = ["Client", "start", "stop", "Sample"]

_log = logging.getLogger("gpulens_client")


class Client:
    """Reads the allocator of every device the process uses and pushes it.

    `torch_module` replaces `sys.modules["torch"]` (tests); `clock` returns
    seconds (time.perf_counter) and times the snapshot.
    """

    def __init__(self, url: str = "http://127.0.0.1:9400", interval: float = 5.0, snapshot_every: int = 12,
                 job: str = "gpulens_client", timeout: float = 2.0, token: Optional[str] = None,
                 torch_module: Any = None, clock=time.perf_counter, profile: bool = True):
        self.url = url
        self.interval = max(0.05, float(interval))
        self.snapshot_every = max(0, int(snapshot_every))
        self.job = job
        self.timeout = timeout
        self.token = token
        self.pid = os.getpid()
        self.pushes = 0          # pushes the receiver accepted
        self.errors = 0          # failed rounds: unreachable agent, refused push, torch error
        self.snapshots = 0
        self.last_error = ""
        self._torch = torch_module
        self._clock = clock
        self._rounds = 0
        self._uuids: Dict[int, Optional[str]] = {}
        self._snapshot_samples: Dict[int, List[Sample]] = {}
        self._logged = set()  # kinds of failure already logged: ("push", "URLError"), ("read", ...)
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.profiler = _profile_module.Profiler(url, self.pid, timeout, token, self._log_once) if profile else None

    def _log_once(self, why: str) -> None:
        self._failed("profile", why.split(":")[0], why)

    # --- reading ---------------------------------------------------------

    def _torch_module(self):
        torch = self._torch if self._torch is not None else sys.modules.get("torch")
        # The program may be importing torch right now (this thread runs
        # beside it): a module still initialising has no `cuda` yet, and
        # reading it would report a failure that is none.
        if torch is None or getattr(getattr(torch, "__spec__", None), "_initializing", False):
            return None
        return torch if hasattr(torch, "cuda") else None

    def _uuid(self, torch, device: int) -> Optional[str]:
        if device not in self._uuids:
            u = getattr(torch.cuda.get_device_properties(device), "uuid", None)
            s = str(u) if u is not None else ""
            self._uuids[device] = None if not s else (s if s.startswith(("GPU-", "MIG-")) else "GPU-" + s)
        return self._uuids[device]

    def collect(self) -> List[Sample]:
        """One round of readings (takes the snapshot when it is due). Empty
        when torch is not imported, CUDA is not initialised or no device holds
        memory. May raise what torch raises; the thread catches it."""
        torch = self._torch_module()
        if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
            return []
        devices: Dict[int, Dict[str, float]] = {}
        for d in range(torch.cuda.device_count()):
            values = stats.device_values(torch.cuda.memory_stats(d))
            if values:
                devices[d] = values
        if not devices:
            return []
        if self.snapshot_every and self._rounds % self.snapshot_every == 0:
            self._take_snapshot(torch, list(devices))
        self._rounds += 1
        out: List[Sample] = []
        for d, values in devices.items():
            uuid = self._uuid(torch, d)
            base = {"gpu_uuid": uuid} if uuid else {}
            out.extend(Sample(name, dict(base), v) for name, v in values.items())
            for s in self._snapshot_samples.get(d, []):
                out.append(Sample(s.name, {**base, **s.labels}, s.value))
        return out

    def _take_snapshot(self, torch, devices: List[int]) -> None:
        t0 = self._clock()
        snap = torch.cuda.memory._snapshot()
        seconds = self._clock() - t0
        self.snapshots += 1
        expandable = stats.expandable_segments(snap)
        self._snapshot_samples = {}
        for d in devices:
            samples = []
            for p in stats.snapshot_pools(snap, d):
                labels = {"pool": p.pool, "stream": p.stream}
                samples.append(Sample("gpu_allocator_external_fragmentation_ratio", labels, p.external_fragmentation))
                samples.append(Sample("gpu_allocator_largest_free_block_bytes", dict(labels), float(p.largest_free)))
            if expandable is not None:
                samples.append(Sample("gpu_allocator_expandable_segments", {}, 1.0 if expandable else 0.0))
            samples.append(Sample("gpu_allocator_snapshot_duration_seconds", {}, seconds))
            self._snapshot_samples[d] = samples

    # --- pushing ---------------------------------------------------------

    def push_once(self) -> bool:
        """Collects and pushes once; True when the receiver accepted it (or
        there was nothing to push). Never raises."""
        try:
            samples = self.collect()
        except Exception as e:  # never into the host program
            return self._failed("read", type(e).__name__, "%s: %s" % (type(e).__name__, e))
        if not samples:
            return True
        try:
            status, text = wire.put(self.url, self.job, self.pid, wire.render(samples), self.timeout, self.token)
        except Exception as e:
            return self._failed("push", type(e).__name__, "%s: %s" % (type(e).__name__, e))
        if status // 100 != 2:
            return self._failed("push", "HTTP %d" % status, "the receiver answered HTTP %d: %s" % (status, text.strip()))
        self.pushes += 1
        return True

    def _failed(self, stage: str, kind: str, why: str) -> bool:
        """Counts a failure; logs it when it is the first of its kind (stage
        "read" or "push", and the exception or HTTP status)."""
        self.errors += 1
        self.last_error = why
        if (stage, kind) not in self._logged:
            self._logged.add((stage, kind))
            what = {"read": "reading the allocator failed", "profile": "a profile request failed"}.get(
                stage, "push to %s failed" % self.url)
            _log.warning("gpulens_client: %s (%s); counting further failures of this kind in Client.errors "
                         "without logging them", what, why)
        return False

    def poll_profile(self) -> None:
        """Asks the agent once for a capture request and starts it. Never raises."""
        if self.profiler is None:
            return
        try:
            self.profiler.poll()
        except OSError:
            # The agent unreachable: the push reports that when there is
            # something to push; a poll failure is only counted here (and
            # `gpulens profile` says when no client asked).
            self.profiler.poll_failures += 1
        except Exception as e:
            self._failed("profile", type(e).__name__, "%s: %s" % (type(e).__name__, e))

    def _run(self) -> None:
        while not self._stop.is_set():
            self.push_once()
            self.poll_profile()
            self._stop.wait(self.interval)

    def start(self) -> "Client":
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="gpulens_client", daemon=True)
            self._thread.start()
        return self

    def stop(self, remove: bool = True) -> None:
        """Stops the thread; with `remove`, deletes the process's group from
        the receiver (a Pushgateway keeps groups forever)."""
        self._stop.set()
        if self.profiler is not None:
            self.profiler.stop()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout + 1)
        if remove and self.pushes:
            try:
                wire.delete(self.url, self.job, self.pid, min(self.timeout, 0.5), self.token)
            except Exception:
                pass


_client: Optional[Client] = None
_lock = threading.Lock()


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def start(url: Optional[str] = None, interval: Optional[float] = None, snapshot_every: Optional[int] = None,
          job: str = "gpulens_client", token: Optional[str] = None, **kwargs) -> Client:
    """Starts the process's client (once; later calls return the same one).
    Defaults come from GPULENS_URL (http://127.0.0.1:9400), GPULENS_INTERVAL
    (5 s), GPULENS_SNAPSHOT_EVERY (12: a snapshot a minute) and
    GPULENS_TOKEN_FILE (a bearer token, for push.token_file)."""
    global _client
    with _lock:
        if _client is not None and _client.pid == os.getpid():
            return _client
        if token is None and os.environ.get("GPULENS_TOKEN_FILE"):
            try:
                with open(os.environ["GPULENS_TOKEN_FILE"]) as f:
                    token = f.read().strip()
            except OSError as e:
                _log.warning("gpulens_client: cannot read GPULENS_TOKEN_FILE: %s", e)
        _client = Client(url or os.environ.get("GPULENS_URL", "http://127.0.0.1:9400"),
                         interval if interval is not None else _env_float("GPULENS_INTERVAL", 5.0),
                         snapshot_every if snapshot_every is not None else int(_env_float("GPULENS_SNAPSHOT_EVERY", 12)),
                         job=job, token=token, **kwargs)
        return _client.start()


def stop() -> None:
    """Stops the process's client, if any."""
    global _client
    with _lock:
        if _client is not None:
            _client.stop()
            _client = None
