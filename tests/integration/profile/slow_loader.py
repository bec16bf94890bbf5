# A training loop starved by a slow DataLoader: each batch takes 50 ms to
# make, the step itself almost nothing.
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

import gpulens_client


class Slow(Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        time.sleep(0.05)
        return torch.ones(8)


gpulens_client.start(interval=0.2)
w = torch.zeros(8)
deadline = time.monotonic() + float(sys.argv[1])
for batch in DataLoader(Slow(), batch_size=1, num_workers=0):
    w += batch.sum(0) * 1e-3
    if time.monotonic() > deadline:
        break
