# expect: no compiled graph ran
# family: mistake
"""The graph breaks are gone, but run() calls chain itself: eager, one kernel per operation."""

import torch


def chain(x, w):
    y = x * w + 0.5
    y = y / (y[:1].abs() + 1.0)
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain)


def run(x, w):
    return chain(x, w)
