"""The `torch` capture: torch.profiler for a window, the Kineto trace gzip'd.

torch.profiler records the operators of the thread that starts it, so the
profiler is started and stopped on the program's main thread (where
training loops run), through Py_AddPendingCall: the main thread runs the
call at its next bytecode boundary, much as it runs a signal handler; no
signal handler is installed. CPU activities always, CUDA where
torch.cuda.is_available(); record_shapes off. The trace is exported from
the capture thread to a private temporary directory, compressed, and the
directory removed. torch must already be imported by the program (the
client never imports it itself).
"""

import ctypes
import gzip
import os
import shutil
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List, Optional

_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
_keep: List[Any] = []  # callbacks the main thread may still run (a late one must not be freed)


def in_main_thread(fn: Callable[[], Any], timeout: float) -> Any:
    """Runs `fn` on the main thread; its result, or raises what it raised,
    or TimeoutError when the main thread ran no bytecode within `timeout`."""
    done = threading.Event()
    box = {}

    def call(_):
        try:
            box["result"] = fn()
        except BaseException as e:  # handed back to the capture thread, never raised in the main one
            box["error"] = e
        done.set()
        return 0

    cb = _CALLBACK(call)
    _keep.append(cb)
    add = ctypes.pythonapi.Py_AddPendingCall
    add.argtypes = [_CALLBACK, ctypes.c_void_p]
    add.restype = ctypes.c_int
    if add(cb, None) != 0:
        raise RuntimeError("Py_AddPendingCall refused the call (its queue is full)")
    if not done.wait(timeout):
        raise TimeoutError("the main thread ran no Python code for %.0f s (blocked in a call?)" % timeout)
    _keep.remove(cb)
    if "error" in box:
        raise box["error"]
    return box.get("result")


def capture(duration_s: float, stop: threading.Event, main_timeout: float = 10.0,
            counter=None, steps: int = 0, info: Optional[Dict[str, float]] = None) -> bytes:
    """The gzip'd trace of a window of `duration_s` seconds (or until `stop`
    is set); with an installed steps.StepCounter and `steps` > 0, of
    `steps` optimizer steps if they come first: the profiler then stops on
    the main thread right after the last one. `info` receives the window's
    "seconds" and, with steps, the "steps" counted in it."""
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "profiler"):
        raise RuntimeError("torch is not imported in this process: a torch capture needs it (try kind stacks)")
    prof = torch.profiler
    activities = [prof.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(prof.ProfilerActivity.CUDA)
    p = prof.profile(activities=activities, record_shapes=False)
    claim = threading.Lock()  # whoever takes it stops the profiler: the last step, or the time limit
    stopped = threading.Event()
    errors: List[BaseException] = []

    def stop_after_last_step():  # on the main thread, inside its optimizer.step() call
        if claim.acquire(blocking=False):
            try:
                p.__exit__(None, None, None)
            except BaseException as e:  # handed to the capture thread
                errors.append(e)
            finally:
                stopped.set()

    base = [0]

    def start():  # on the main thread: the window and the step count start together
        p.__enter__()
        if counter is not None and steps > 0:
            base[0] = counter.count
            counter.arm(steps, stop_after_last_step)

    in_main_thread(start, main_timeout)
    t0 = time.monotonic()
    try:
        if counter is not None and steps > 0:
            deadline = time.monotonic() + duration_s
            while not stopped.is_set() and not stop.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                stopped.wait(min(left, 0.1))
        else:
            stop.wait(duration_s)
    finally:
        if info is not None:
            info["seconds"] = time.monotonic() - t0
        if counter is not None:
            counter.arm(0, None)
            if info is not None and steps > 0:
                info["steps"] = min(counter.count - base[0], steps) if stopped.is_set() else counter.count - base[0]
        if claim.acquire(blocking=False):
            in_main_thread(lambda: p.__exit__(None, None, None), main_timeout)
        else:
            stopped.wait(main_timeout)
    if errors:
        raise errors[0]
    tmp = tempfile.mkdtemp(prefix="gpulens-profile-")
    try:
        path = os.path.join(tmp, "trace.json")
        p.export_chrome_trace(path)
        with open(path, "rb") as f:
            return gzip.compress(f.read(), compresslevel=6)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
