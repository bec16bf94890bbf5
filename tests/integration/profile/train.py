# A small CPU training loop (forward, backward, SGD step), for windows
# counted in optimizer steps.
import sys
import time

import torch

import gpulens_client

gpulens_client.start(interval=0.2)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
deadline = time.monotonic() + float(sys.argv[1])
while time.monotonic() < deadline:
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
