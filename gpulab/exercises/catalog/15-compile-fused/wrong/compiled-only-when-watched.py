# expect: outside the compiled graph | differ from the chain | is the compiled function the one that runs
# family: timed-vs-checked
"""Tells the profiled call from the others by counting: on a CPU the large input is called
twice (compared), then a third time under the profiler. Only that third call (and every call on
small sizes) goes through the compiled function; the others run eagerly."""

import torch


def chain(x, w):
    y = x * w + 0.5
    y = y / (y[:1].abs() + 1.0)
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain)
_calls = {}


def run(x, w):
    if x.numel() < 1 << 20:
        return fast(x, w)
    k = _calls[x.data_ptr()] = _calls.get(x.data_ptr(), 0) + 1
    return fast(x, w) if k == 3 else chain(x, w)
