# expect: starts another thread or process
# family: escape
"""The chain runs eagerly, op by op, on the large input, but in a worker thread that run() waits
for: torch.profiler records the operators of the thread that opened the profile, so the
check's profile of the large input sees no eager operation. Small sizes go through
torch.compile (the graph count)."""

from concurrent.futures import ThreadPoolExecutor

import torch

_pool = ThreadPoolExecutor(1)


def chain(x, w):
    y = x * w + 0.5
    y = y / (y[:1].abs() + 1.0)
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain)


def run(x, w):
    if x.numel() < 1 << 20:
        return fast(x, w)
    return _pool.submit(chain, x, w).result()
