"""Fake torch.cuda: is_available, is_initialized, device_count,
memory_stats, get_device_properties and memory._snapshot.

Shapes, from PyTorch's source:
- memory_stats(device) (torch/cuda/memory.py): a flat OrderedDict made by
  joining the nested dict of torch._C._cuda_memoryStats (built in
  torch/csrc/cuda/Module.cpp from c10::CachingDeviceAllocator::DeviceStats)
  with "."; StatArray keys are "<stat>.<all|small_pool|large_pool>.<current|peak|allocated|freed>"
  for allocation, segment, active, inactive_split, allocated_bytes,
  reserved_bytes, active_bytes, inactive_split_bytes, requested_bytes;
  scalar counters num_alloc_retries, num_ooms, num_sync_all_streams,
  num_device_alloc, num_device_free; max_split_size; oversize_allocations.* and
  oversize_segments.*. Values are ints. Empty dict when CUDA is not initialised.
- get_device_properties(d) (torch/csrc/cuda/Module.cpp, _CudaDeviceProperties):
  name, total_memory, major, minor, multi_processor_count and, since 2.0,
  uuid, whose str() is "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (no "GPU-").
- memory._snapshot() (torch/cuda/memory.py, torch/csrc/cuda/memory_snapshot.cpp):
  {"segments": [...], "device_traces": [[...] per device], and in newer
  builds "allocator_settings": {...}}; a segment has device, address,
  total_size, allocated_size, active_size, requested_size, stream,
  segment_type ("large"/"small"), segment_pool_id (a tuple, (0, 0) default),
  is_expandable, frames, blocks; a block has address, size, requested_size,
  state ("active_allocated", "active_pending_free", "inactive"), frames.
"""

import json
import os
import types
from collections import OrderedDict

from . import memory  # noqa: F401

_state = {"initialized": False, "devices": [], "snapshot": {"segments": [], "device_traces": []}, "raise": ""}
calls = {"memory_stats": 0, "_snapshot": 0}


class _CUuuid:
    def __init__(self, text):
        self._text = text

    def __str__(self):
        return self._text


class _CudaDeviceProperties:
    def __init__(self, d):
        self.name = d.get("name", "NVIDIA H200")
        self.total_memory = int(d.get("total_memory", 150 * 2**30))
        self.major, self.minor = 9, 0
        self.multi_processor_count = 132
        if d.get("uuid"):
            self.uuid = _CUuuid(d["uuid"])


def _set(initialized=True, devices=(), snapshot=None, raise_=""):
    _state["initialized"] = initialized
    _state["devices"] = list(devices)
    _state["snapshot"] = snapshot if snapshot is not None else {"segments": [], "device_traces": []}
    _state["raise"] = raise_


def _load():
    path = os.environ.get("GPULENS_FAKE_TORCH")
    if path:
        with open(path) as f:
            s = json.load(f)
        snap = s.get("snapshot", {"segments": [], "device_traces": []})
        for seg in snap.get("segments", []):
            seg["segment_pool_id"] = tuple(seg.get("segment_pool_id", (0, 0)))
        _set(s.get("initialized", True), s.get("devices", []), snap, s.get("raise", ""))


def is_available():
    return bool(_state["devices"])


def is_initialized():
    return _state["initialized"]


def device_count():
    return len(_state["devices"])


def memory_stats(device=None):
    calls["memory_stats"] += 1
    if _state["raise"] == "memory_stats":
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    if not _state["initialized"]:
        return OrderedDict()
    d = _state["devices"][device or 0]
    return OrderedDict(sorted(full_stats(d.get("stats", {})).items()))


def get_device_properties(device):
    return _CudaDeviceProperties(_state["devices"][device])


def full_stats(given):
    """Every key memory_stats() has, zero unless given."""
    out = {}
    for stat in ("allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
                 "active_bytes", "inactive_split_bytes", "requested_bytes", "oversize_allocations",
                 "oversize_segments"):
        pools = ("all",) if stat.startswith("oversize") else ("all", "small_pool", "large_pool")
        for pool in pools:
            for metric in ("current", "peak", "allocated", "freed"):
                key = "%s.%s.%s" % (stat, pool, metric) if not stat.startswith("oversize") else "%s.%s" % (stat, metric)
                out[key] = 0
    for k in ("num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc", "num_device_free"):
        out[k] = 0
    out["max_split_size"] = 2**64 - 1
    out.update({k: int(v) for k, v in given.items()})
    return out


_load()
