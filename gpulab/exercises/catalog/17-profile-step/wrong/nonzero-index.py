# expect: output size depends on the data | waits for the GPU
# family: mistake
"""Honest mistake: the mask turned into indices (nonzero, then index_select) to avoid boolean
indexing. nonzero is the same wait: its output size is the number of True values."""

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
    rows = keep.nonzero().squeeze(1)
    xs, ys = x.index_select(0, rows), y.index_select(0, rows)
    loss = F.binary_cross_entropy_with_logits(forward(params, xs), ys)
    loss.backward()
    grads = [p.grad for p in params]
    with torch.no_grad():
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, grads)
        torch._foreach_add_(params, momenta, alpha=-LR)
    return loss.detach()
