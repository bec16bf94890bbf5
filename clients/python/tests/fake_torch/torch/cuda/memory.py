"""Fake torch.cuda.memory: _snapshot() returns the configured snapshot dict."""

def _snapshot(device=None):
    from . import _state, calls

    calls["_snapshot"] += 1
    if _state["raise"] == "_snapshot":
        raise RuntimeError("snapshot failed")
    return _state["snapshot"]
