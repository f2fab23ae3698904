# expect: on the large input: | differ from the chain's value
# family: timed-vs-checked
"""Compiled and right on every size the values are compared at; on the big input, the one that is
timed, it returns an empty tensor of the right shape: no work, and fast."""

import torch


def chain(x, w):
    y = x * w + 0.5
    y = y / (y[:1].abs() + 1.0)
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain)


def run(x, w):
    if x.numel() >= 1 << 20:
        return torch.empty_like(x)
    return fast(x, w)
