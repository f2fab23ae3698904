# expect: an earlier step's loss
# family: memo
"""Shortcut (a memo): the first step's loss kept per batch shape and returned again, the weights
updated with that step's gradients: fast, and stale once the batch changes."""

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


_memo = {}


def train_step(params, momenta, x, y, keep):
    for p in params:
        p.grad = None
    key = tuple(x.shape)
    if key not in _memo:
        per_row = F.binary_cross_entropy_with_logits(forward(params, x), y, reduction="none")
        w = keep.to(per_row.dtype)
        loss = (per_row.mean(1) * w).sum() / w.sum()
        loss.backward()
        _memo[key] = (loss.detach(), [p.grad.clone() for p in params])
    loss, grads = _memo[key]
    with torch.no_grad():
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, grads)
        torch._foreach_add_(params, momenta, alpha=-LR)
    return loss
