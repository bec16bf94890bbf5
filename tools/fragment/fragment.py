"""A PyTorch workload that fragments the caching allocator on purpose, with
gpulens_client pushing to the agent (run by tools/device-check.sh on a GPU
with a CUDA build of torch).

Interleaved allocations of varying sizes in the large pool, every other one
freed: the free memory is left in slivers between live blocks, within the
same segments, so the allocator cannot merge it; then a few large
allocations that do not fit any sliver force new segments or retries.

    python3 tools/fragment/fragment.py URL GPU SECONDS
"""

import random
import sys
import time

import torch

import gpulens_client

url, gpu, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
torch.cuda.set_device(gpu)  # CUDA_DEVICE_ORDER=PCI_BUS_ID: the same index as NVML's
client = gpulens_client.start(url=url, interval=1.0, snapshot_every=1)
rng = random.Random(7)
MiB = 2**20
live = []
for i in range(4000):  # 20-60 MiB blocks: large pool, split inside their segments
    live.append(torch.empty(rng.randint(20, 60) * MiB, dtype=torch.uint8, device="cuda"))
    if torch.cuda.memory_reserved() > 0.5 * torch.cuda.get_device_properties(gpu).total_memory:
        break
del live[::2]  # slivers between live blocks
try:
    big = [torch.empty(512 * MiB, dtype=torch.uint8, device="cuda") for _ in range(4)]
except torch.cuda.OutOfMemoryError:
    big = []
stats = torch.cuda.memory_stats(gpu)
print("reserved", stats["reserved_bytes.all.current"], "allocated", stats["allocated_bytes.all.current"],
      "retries", stats["num_alloc_retries"], "pid", __import__("os").getpid(), flush=True)
time.sleep(seconds)
print("pushes", client.pushes, "errors", client.errors, client.last_error, flush=True)
