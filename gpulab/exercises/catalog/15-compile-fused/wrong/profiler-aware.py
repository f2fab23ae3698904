# expect: asks whether torch's profiler is on
# family: timed-vs-checked
"""Compiled while the profiler watches, eager otherwise: the file asks torch whether a profiler
is on, which a solution never needs."""

import torch


def chain(x, w):
    y = x * w + 0.5
    y = y / (y[:1].abs() + 1.0)
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain)


def run(x, w):
    fast(x[:1], w[:1])
    if torch.autograd.profiler._is_profiler_enabled:
        return fast(x, w)
    return chain(x, w)
