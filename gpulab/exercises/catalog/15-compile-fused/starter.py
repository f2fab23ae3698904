"""Make `chain` compile into one graph, once, and run faster than eager."""

import torch


def chain(x, w):
    y = x * w + 0.5
    scale = abs(y[0].item()) + 1.0  # TODO: a Python float breaks the graph; keep it a tensor
    print("scale", scale)  # TODO: printing inside a compiled function breaks the graph too
    y = y / scale
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain)


def run(x, w):
    return fast(x, w)
