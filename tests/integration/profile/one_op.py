# A loop dominated by one function (a hot Python op on CPU torch).
import sys
import time

import torch

import gpulens_client


def dominant_matmul(a):
    return torch.mm(a, a)


def light_bookkeeping(i):
    return i % 7


gpulens_client.start(interval=0.2)
a = torch.randn(256, 256)
deadline = time.monotonic() + float(sys.argv[1])
i = 0
while time.monotonic() < deadline:
    dominant_matmul(a)
    light_bookkeeping(i)
    i += 1
