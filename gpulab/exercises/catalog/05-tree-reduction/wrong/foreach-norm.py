# expect: is not among the operations this exercise allows
# family: library
"""Cheat: torch._foreach_norm(ord=1) gives sum(|v|) per chunk in one call (aten._foreach_norm was
not in the refusal table); positive part minus negative part is the sum. Only the few hundred
partial sums go through a (real) tree."""

import torch


def _tree(v):
    while v.numel() > 1:
        m = v.numel()
        half = m // 2
        y = v[:half] + v[m - half :]
        v = torch.cat((y, v[half : half + 1])) if m % 2 else y
    return v.reshape(())


def tree_sum(x):
    x = x.reshape(-1)
    pos = list(x.clamp(min=0).split(65536))
    neg = list(x.clamp(max=0).split(65536))
    parts = torch._foreach_norm(pos, 1)
    parts_neg = torch._foreach_norm(neg, 1)
    return _tree(torch.stack(parts)) - _tree(torch.stack(parts_neg))
