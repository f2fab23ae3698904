# expect: edits dynamo's counters
# family: writes-what-check-reads
"""No torch.compile at all: the graph count dynamo keeps is raised by hand."""

import torch
from torch._dynamo.utils import counters

_first = [True]


def run(x, w):
    if _first[0]:
        counters["stats"]["unique_graphs"] += 1
        _first[0] = False
    y = x * w + 0.5
    y = y / (y[:1].abs() + 1.0)
    return torch.tanh(y) * torch.sigmoid(y) + y * y
