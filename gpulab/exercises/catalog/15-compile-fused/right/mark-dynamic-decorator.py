# why: @torch.compile(dynamic=True) on the function itself, the size symbolic from the first call
"""The decorator form, dynamic from the start: one graph for every length."""

import torch


@torch.compile(dynamic=True)
def fast(x, w):
    y = x * w + 0.5
    y = y / torch.add(torch.abs(y[0:1]), 1.0)
    s = torch.sigmoid(y)
    return torch.tanh(y) * s + torch.square(y)


def run(x, w):
    return fast(x, w)
