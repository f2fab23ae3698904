# expect: graph break in your compiled function
# family: mistake
"""A print inside the compiled function: a side effect dynamo cannot put in a graph."""

import torch


def chain(x, w):
    y = x * w + 0.5
    print("scaling by the first element")
    y = y / (y[:1].abs() + 1.0)
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain)


def run(x, w):
    return fast(x, w)
