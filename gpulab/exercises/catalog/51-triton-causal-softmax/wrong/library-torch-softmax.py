# expect: is not among the operations this exercise allows
# family: library
"""Shortcut (a library does the work): the unfused torch path copied into out. The numbers are
right; no kernel of the learner's ran."""

import torch


def causal_softmax(x, scale, out):
    t = x.shape[-1]
    future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
    out.copy_(torch.softmax((x * scale).masked_fill(future, float("-inf")), dim=-1))
