"""Counting optimizer steps, for capture windows given in steps.

While a capture with `steps` runs, every call of an optimizer's step()
counts one: the step() method of every torch.optim.Optimizer class defined
at that moment is wrapped (an optimizer whose step() calls its parent's
counts once), and unwrapped when the capture ends, so a program pays nothing
outside a capture. The wrapper sits outside torch's own profiling wrapper
(the "Optimizer.step#SGD.step" range), so a window ends between two steps.
When the count reaches the target, `on_target` runs right there, on the
thread that called step() (the training loop's): a torch capture stops its
profiler exactly after the last step. torch must already be imported by the
program (the client never imports it).
"""

import functools
import sys
import threading
from typing import Callable, List, Optional


class StepCounter:
    """Counts optimizer steps between install() and remove().

    `count` may be read from any thread (an int, updated under the GIL);
    arm() sets the target and what to run when it is reached (once)."""

    def __init__(self, torch=None):
        self.count = 0
        self._torch = torch if torch is not None else sys.modules.get("torch")
        self._undo: List[Callable[[], None]] = []
        self._inside = threading.local()
        self._active = False
        self._target = 0
        self._on_target: Optional[Callable[[], None]] = None

    def install(self) -> "StepCounter":
        optim = getattr(self._torch, "optim", None) if self._torch is not None else None
        if optim is None or not hasattr(optim, "Optimizer"):
            raise RuntimeError("a window in steps counts torch.optim optimizer steps, and torch.optim is not "
                               "imported in this process (give a duration instead)")
        todo, seen = [optim.Optimizer], set()
        while todo:
            cls = todo.pop()
            if cls in seen:
                continue
            seen.add(cls)
            todo.extend(cls.__subclasses__())
            if "step" in cls.__dict__:
                self._wrap(cls)
        self._active = True
        return self

    def arm(self, steps: int, on_target: Callable[[], None]) -> None:
        """Runs `on_target` (once) when `steps` more steps have been counted."""
        self._on_target = on_target
        self._target = self.count + steps

    def _counted(self) -> None:
        self.count += 1
        if self._on_target is not None and self.count >= self._target:
            fn, self._on_target = self._on_target, None
            try:
                fn()
            except Exception:  # never into the host program
                pass

    def _wrap(self, cls) -> None:
        original = cls.__dict__["step"]
        counter = self

        @functools.wraps(original)  # keeps torch's own `hooked` mark, so it does not wrap again
        def step(*args, **kwargs):
            if not counter._active or getattr(counter._inside, "active", False):
                return original(*args, **kwargs)  # removed, or a subclass's step() calling its parent's
            counter._inside.active = True
            try:
                result = original(*args, **kwargs)
            finally:
                counter._inside.active = False
            counter._counted()
            return result

        setattr(cls, "step", step)

        def undo():
            if cls.__dict__.get("step") is step:  # unless something wrapped it since (then it passes through)
                setattr(cls, "step", original)

        self._undo.append(undo)

    def remove(self) -> None:
        self._active = False
        self._on_target = None
        while self._undo:
            try:
                self._undo.pop()()
            except Exception:
                pass
