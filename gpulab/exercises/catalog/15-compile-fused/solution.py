"""`chain` as one graph: the scale stays a tensor on the device, nothing is printed."""

import torch


def chain(x, w):
    y = x * w + 0.5
    scale = y[:1].abs() + 1.0  # a 1-element tensor: no trip to Python, no graph break
    y = y / scale
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain)


def run(x, w):
    return fast(x, w)
