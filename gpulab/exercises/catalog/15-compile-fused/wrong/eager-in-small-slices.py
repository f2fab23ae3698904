# expect: outside the compiled graph | is the compiled function the one that runs
# family: loose-property
"""The compiled chain on the small sizes; on a large input the chain runs eagerly, op by op, on
slices of 4,000 elements: each operation's operands stay under the profile's 4,096-element
line, and slices and copy_ are what a graph's wrapper may do, so no single operation looks
like a pass over the input. Together they are several."""

import torch


def chain(x, w):
    y = x * w + 0.5
    y = y / (y[:1].abs() + 1.0)
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain)
STEP = 4000


def run(x, w):
    n = x.numel()
    if n < 500_000:
        return fast(x, w)
    scale = (x[:1] * w[:1] + 0.5).abs() + 1.0
    out = torch.empty_like(x)
    for i in range(0, n, STEP):
        y = (x[i : i + STEP] * w[i : i + STEP] + 0.5) / scale
        out[i : i + STEP].copy_(torch.tanh(y) * torch.sigmoid(y) + y * y)
    return out
