"""On-demand captures the agent asks for (docs/profiling.md).

The client polls GET /api/v1/profile/next?pid=PID once per interval (with
the push token). A request {id, kind, duration_s, max_bytes} runs on its own
daemon thread; the result goes to POST /api/v1/profile/ID/result, or the
reason it could not be taken to POST /api/v1/profile/ID/error. Nothing here
raises into the host program; a second request while one runs is refused.

    stacks  samples sys._current_frames() at `hz` for the window and returns,
            per thread, the frames with their shares of the samples:
            "self" (the frame was the innermost one) and "total" (it was on
            the stack), plus the hottest whole stacks of the main thread.

A request with "steps": N > 0 ends after N optimizer steps (steps.py counts
them) or after duration_s, whichever comes first. The upload says what the
window was: ?window_s=SECONDS, and &steps=N (the steps counted) when the
request named steps.
"""

import json
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from typing import Any, Callable, Dict, Optional, Tuple

TOP_FRAMES = 40       # frames kept per thread
TOP_STACKS = 10       # whole stacks kept for the main thread
MAX_THREADS = 32
MAX_DEPTH = 64


def _frame_key(f) -> Tuple[str, str, int]:
    co = f.f_code
    return (co.co_name, co.co_filename, f.f_lineno)


def sample_stacks(duration_s: float, hz: float = 100.0, stop: Optional[threading.Event] = None,
                  skip: Tuple[int, ...] = (), until: Optional[Callable[[], bool]] = None) -> Dict[str, Any]:
    """Samples every thread's Python stack (but those in `skip`) for
    `duration_s` seconds, or until `until()` is true (checked every round);
    returns the aggregate (JSON-ready)."""
    period = 1.0 / hz
    main_ident = threading.main_thread().ident
    self_counts: Dict[int, Counter] = {}
    total_counts: Dict[int, Counter] = {}
    stack_counts: Counter = Counter()
    samples: Counter = Counter()
    rounds = 0
    t0 = time.monotonic()
    deadline = t0 + duration_s
    next_t = t0
    while True:
        now = time.monotonic()
        if now >= deadline or (stop is not None and stop.is_set()) or (until is not None and until()):
            break
        rounds += 1
        for ident, frame in sys._current_frames().items():
            if ident in skip:
                continue
            if ident not in samples and len(samples) >= MAX_THREADS:
                continue
            samples[ident] += 1
            keys = []
            f = frame
            while f is not None and len(keys) < MAX_DEPTH:
                keys.append(_frame_key(f))
                f = f.f_back
            if not keys:
                continue
            self_counts.setdefault(ident, Counter())[keys[0]] += 1
            tc = total_counts.setdefault(ident, Counter())
            for k in set(keys):
                tc[k] += 1
            if ident == main_ident:
                stack_counts[tuple(keys[:12])] += 1
        del frame, f
        next_t += period
        delay = next_t - time.monotonic()
        if delay > 0:
            if stop is not None:
                stop.wait(delay)
            else:
                time.sleep(delay)
        else:
            next_t = time.monotonic()
    names = {t.ident: t.name for t in threading.enumerate()}
    threads = []
    for ident, n in samples.most_common():
        frames = []
        tc, sc = total_counts.get(ident, Counter()), self_counts.get(ident, Counter())
        for key, c in tc.most_common(TOP_FRAMES):
            frames.append({"function": key[0], "file": key[1], "line": key[2],
                           "self": round(sc.get(key, 0) / n, 4), "total": round(c / n, 4)})
        threads.append({"name": names.get(ident, "thread-%d" % ident), "main": ident == main_ident,
                        "samples": n, "frames": frames})
    main_n = samples.get(main_ident, 0)
    stacks = [{"share": round(c / main_n, 4),
               "frames": [{"function": k[0], "file": k[1], "line": k[2]} for k in key]}
              for key, c in stack_counts.most_common(TOP_STACKS)] if main_n else []
    return {"kind": "stacks", "hz": hz, "duration_s": round(time.monotonic() - t0, 3), "rounds": rounds,
            "threads": threads, "main_stacks": stacks}


class Profiler:
    """Polls the agent for capture requests and runs them, one at a time."""

    def __init__(self, url: str, pid: int, timeout: float, token: Optional[str], log):
        base = url.rstrip("/")
        self.base = base if "://" in base else "http://" + base
        self.pid = pid
        self.timeout = timeout
        self.token = token
        self.log = log
        self.captures = 0       # results the agent accepted
        self.failures = 0       # captures that failed (the agent was told why)
        self.poll_failures = 0  # polls that did not reach the agent
        self._thread: Optional[threading.Thread] = None
        self._stop = threading.Event()

    def _request(self, method: str, path: str, data: Optional[bytes] = None,
                 content_type: str = "application/json") -> Tuple[int, bytes]:
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return r.status, r.read(65536)
        except urllib.error.HTTPError as e:
            try:
                return e.code, e.read(4096)
            finally:
                e.close()

    def poll(self) -> Optional[Dict[str, Any]]:
        """Asks for a request once; starts it. Returns it (or None). Raises
        what urllib raises when the agent is unreachable (the caller counts it)."""
        status, body = self._request("GET", "/api/v1/profile/next?pid=%d" % self.pid)
        if status == 204 or status == 404:  # nothing asked, or an agent without profiling
            return None
        if status != 200:
            raise OSError("profile poll answered HTTP %d: %s" % (status, body[:200].decode("utf-8", "replace")))
        job = json.loads(body)
        if self._thread is not None and self._thread.is_alive():
            self._error(job["id"], "a capture is already running in this process")
            return job
        self._thread = threading.Thread(target=self._run, args=(job,), name="gpulens_client-profile", daemon=True)
        self._thread.start()
        return job

    def stop(self) -> None:
        self._stop.set()

    def _error(self, cid: str, why: str) -> None:
        self.failures += 1
        try:
            self._request("POST", "/api/v1/profile/%s/error" % urllib.parse.quote(cid, safe=""),
                          why.encode("utf-8", "replace")[:1024], "text/plain; charset=utf-8")
        except Exception:
            pass

    def _run(self, job: Dict[str, Any]) -> None:
        cid = str(job.get("id", ""))
        try:
            kind = job.get("kind")
            duration = float(job.get("duration_s", 10))
            max_bytes = int(job.get("max_bytes", 16 << 20))
            steps = int(job.get("steps", 0) or 0)
            if kind not in ("stacks", "torch"):
                self._error(cid, "unknown kind %r" % kind)
                return
            counter = None
            if steps > 0:
                from . import steps as steps_module
                counter = steps_module.StepCounter().install()
            try:
                info: Dict[str, float] = {}
                if kind == "stacks":
                    reached = threading.Event()
                    if counter is not None:
                        counter.arm(steps, reached.set)
                    result = sample_stacks(duration, stop=self._stop, skip=(threading.get_ident(),),
                                           until=reached.is_set if counter is not None else None)
                    if counter is not None:
                        info["steps"] = steps if reached.is_set() else counter.count
                    data, ctype = json.dumps(result, separators=(",", ":")).encode(), "application/json"
                    info["seconds"] = result["duration_s"]
                else:
                    from . import torch_capture
                    data = torch_capture.capture(duration, self._stop, counter=counter, steps=steps, info=info)
                    ctype = "application/gzip"
            finally:
                if counter is not None:
                    counter.remove()
            if len(data) > max_bytes:
                self._error(cid, "the result (%d bytes) is larger than max_bytes (%d)" % (len(data), max_bytes))
                return
            query = "?window_s=%.3f" % info.get("seconds", 0)
            if "steps" in info:
                query += "&steps=%d" % info["steps"]
            status, body = self._request("POST", "/api/v1/profile/%s/result%s" % (urllib.parse.quote(cid, safe=""),
                                                                                   query), data, ctype)
            if status // 100 == 2:
                self.captures += 1
            else:
                self.failures += 1
                self.log("profile upload answered HTTP %d: %s" % (status, body[:200].decode("utf-8", "replace")))
        except Exception as e:  # never into the host program
            self._error(cid, "%s: %s" % (type(e).__name__, e))
