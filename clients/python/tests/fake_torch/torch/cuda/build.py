"""Builds allocator snapshots of PyTorch's shape for the tests and the benchmark."""


def segment(device, blocks, stream=0, segment_type="large", pool_id=(0, 0), address=0x7F0000000000):
    """A segment from [(size, state), ...] in address order."""
    out = []
    offset = 0
    for size, state in blocks:
        out.append({"address": address + offset, "size": size, "requested_size": size if state != "inactive" else 0,
                    "state": state, "frames": []})
        offset += size
    total = sum(s for s, _ in blocks)
    allocated = sum(s for s, st in blocks if st == "active_allocated")
    active = sum(s for s, st in blocks if st != "inactive")
    return {"device": device, "address": address, "total_size": total, "allocated_size": allocated,
            "active_size": active, "requested_size": active, "stream": stream, "segment_type": segment_type,
            "segment_pool_id": pool_id, "is_expandable": False, "frames": [], "blocks": out}


def fragmented(device, blocks, block_size=2 * 2**20):
    """A large-pool snapshot of `blocks` blocks alternating allocated and
    free, in 20 MiB-ish segments of 10 blocks: free memory in slivers."""
    segs = []
    for s in range(0, blocks, 10):
        n = min(10, blocks - s)
        segs.append(segment(device, [(block_size, "active_allocated" if i % 2 == 0 else "inactive") for i in range(n)],
                            address=0x7F0000000000 + s * block_size))
    return {"segments": segs, "device_traces": [[]], "allocator_settings": {"expandable_segments": False}}
