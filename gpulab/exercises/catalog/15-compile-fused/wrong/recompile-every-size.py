# expect: recompiled for every new shape
# family: mistake
"""dynamic=False: every new length is a new static graph, compiled again on its first call."""

import torch


def chain(x, w):
    y = x * w + 0.5
    y = y / (y[:1].abs() + 1.0)
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain, dynamic=False)


def run(x, w):
    return fast(x, w)
