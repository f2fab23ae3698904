"""`chain` as one graph: the peak stays a tensor on the device, nothing is printed."""

import torch


def chain(x, w):
    y = x * w + 0.5
    peak = y.abs().amax()  # a 0-d tensor: no trip to Python, no graph break
    y = y / peak
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain)


def run(x, w):
    return fast(x, w)
