# expect: Python number(s) from tensors per step | waits for the GPU
# family: mistake
"""Honest mistake: every row kept and weighted, but the count of real rows read into Python
with int(): a scalar read, a sync per step on a GPU."""

from __future__ import annotations

import torch
import torch.nn.functional as F

LR, MOMENTUM = 0.5, 0.9


def forward(params, x):
    h = x
    for i in range(0, len(params), 2):
        h = F.linear(h, params[i], params[i + 1])
        if i + 2 < len(params):
            h = F.relu(h)
    return h


def train_step(params, momenta, x, y, keep):
    for p in params:
        p.grad = None
    per_row = F.binary_cross_entropy_with_logits(forward(params, x), y, reduction="none").mean(1)
    kept = int(keep.sum())
    loss = (per_row * keep.to(per_row.dtype)).sum() / kept
    loss.backward()
    grads = [p.grad for p in params]
    with torch.no_grad():
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, grads)
        torch._foreach_add_(params, momenta, alpha=-LR)
    return loss.detach()
