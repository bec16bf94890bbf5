"""What the client reads from PyTorch's caching allocator, as plain values.

Pure functions over the dicts PyTorch returns, so they are tested without a GPU:

    values = device_values(torch.cuda.memory_stats(0))          # {metric: value}
    pools = snapshot_pools(torch.cuda.memory._snapshot(), 0)    # [Pool, ...]
    on = expandable_segments(snapshot)                           # True, False or None

Metric names are the agent's catalog names (gpulens catalog); every value is
in bytes, a ratio in 0..1, or a count. A value PyTorch does not give is left
out, never sent as 0.
"""

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

# memory_stats() key -> metric (torch/cuda/memory.py flattens the C++
# DeviceStats with "." separators; ".all.current" is the live value over both pools).
_GAUGES = {
    "allocated_bytes.all.current": "gpu_allocator_allocated_bytes",
    "reserved_bytes.all.current": "gpu_allocator_reserved_bytes",
    "active_bytes.all.current": "gpu_allocator_active_bytes",
    "inactive_split_bytes.all.current": "gpu_allocator_inactive_split_bytes",
    "requested_bytes.all.current": "gpu_allocator_requested_bytes",  # PyTorch >= 2.0 (PR #88575)
}
_COUNTERS = {
    "num_alloc_retries": "gpu_allocator_retries_total",
    "num_ooms": "gpu_allocator_ooms_total",
}
COUNTER_METRICS = frozenset(_COUNTERS.values())


def device_values(stats: Dict[str, Any]) -> Dict[str, float]:
    """The allocator values of one device from torch.cuda.memory_stats(device).

    gpu_memory_fragmentation_ratio is the slack 1 - allocated/reserved (the
    article's measure; it also counts whole free segments). Empty when the
    device holds no reserved memory (the process does not use it).
    """
    out: Dict[str, float] = {}
    reserved = stats.get("reserved_bytes.all.current")
    if not isinstance(reserved, (int, float)) or reserved <= 0:
        return out
    for key, metric in list(_GAUGES.items()) + list(_COUNTERS.items()):
        v = stats.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[metric] = float(v)
    allocated = stats.get("allocated_bytes.all.current")
    if isinstance(allocated, (int, float)):
        out["gpu_memory_fragmentation_ratio"] = min(1.0, max(0.0, 1.0 - float(allocated) / float(reserved)))
    return out


@dataclass
class Pool:
    """Free space of one (pool, stream) of one device in an allocator snapshot."""

    pool: str          # "large", "small"; "large_private_1_2" for a private MemPool / CUDA graph pool
    stream: str        # the stream the segments belong to
    free_bytes: int    # inactive blocks inside reserved segments
    largest_free: int  # the largest of them

    @property
    def external_fragmentation(self) -> float:
        """1 - largest free block / free bytes: 0 when free space is one block."""
        return 0.0 if self.free_bytes <= 0 else 1.0 - self.largest_free / self.free_bytes


def snapshot_pools(snapshot: Dict[str, Any], device: int) -> List[Pool]:
    """Per (pool, stream) free space of `device` in torch.cuda.memory._snapshot().

    Blocks are reusable only within their pool (small/large, private pool) and
    stream, so fragmentation is computed per pool and stream. A block is free
    when its state is "inactive" ("active_pending_free" still waits for a
    stream and cannot be reused yet).
    """
    pools: Dict[tuple, Pool] = {}
    for seg in snapshot.get("segments", []) or []:
        if seg.get("device") != device:
            continue
        kind = str(seg.get("segment_type", "large"))
        pool_id = seg.get("segment_pool_id", (0, 0))
        try:
            pid0, pid1 = int(pool_id[0]), int(pool_id[1])
        except (TypeError, ValueError, IndexError):
            pid0, pid1 = 0, 0
        name = kind if (pid0, pid1) == (0, 0) else "%s_private_%d_%d" % (kind, pid0, pid1)
        stream = str(seg.get("stream", 0))
        p = pools.setdefault((name, stream), Pool(name, stream, 0, 0))
        for block in seg.get("blocks", []) or []:
            if block.get("state") != "inactive":
                continue
            size = int(block.get("size", 0))
            p.free_bytes += size
            p.largest_free = max(p.largest_free, size)
    return [pools[k] for k in sorted(pools)]


def expandable_segments(snapshot: Dict[str, Any]) -> Optional[bool]:
    """Whether the allocator runs with expandable segments, as the allocator
    itself reports it (snapshot["allocator_settings"], newer PyTorch builds),
    not the environment (PYTORCH_ALLOC_CONF can be silently ignored). None
    when the build does not say."""
    settings = snapshot.get("allocator_settings")
    if isinstance(settings, dict) and "expandable_segments" in settings:
        return bool(settings["expandable_segments"])
    return None
