# expect: outside the compiled graph | is the compiled function the one that runs
# family: loose-property
"""The compiled function runs, on one element, so dynamo's counters see a graph; the chain that
makes the answer runs eagerly, one operation at a time."""

import torch


def chain(x, w):
    y = x * w + 0.5
    y = y / (y[:1].abs() + 1.0)
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain)


def run(x, w):
    fast(x[:1], w[:1])
    return chain(x, w)
