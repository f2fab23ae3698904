# expect: graph break in your compiled function
# family: mistake
"""The scale read back as a Python float: dynamo stops the graph at .item()."""

import torch


def chain(x, w):
    y = x * w + 0.5
    scale = abs(y[0].item()) + 1.0
    y = y / scale
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain)


def run(x, w):
    return fast(x, w)
