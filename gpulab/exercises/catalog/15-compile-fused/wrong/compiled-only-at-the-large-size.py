# expect: outside the compiled graph | no compiled graph ran
# family: loose-property
"""Shortcut (a red team's, 2026-11-30; passed before the rule), the property skipped: a static graph (dynamic=False) only for inputs of a million elements or
more, eager below: one compile in seven sizes, no dynamic shape ever made, and the rule
'compiles at most twice' reads it as a graph that compiled once."""

import torch


def chain(x, w):
    y = x * w + 0.5
    y = y / (y[:1].abs() + 1.0)
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain, dynamic=False)


def run(x, w):
    return fast(x, w) if x.numel() >= 1 << 20 else chain(x, w)
