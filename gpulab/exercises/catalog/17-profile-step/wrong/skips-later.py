# expect: skip work on later calls
# family: timed-vs-checked
"""Shortcut (timed told from checked): the whole step for the first calls, then only the
forward: a check that looked at the first steps alone would pass it."""

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


_calls = 0


def train_step(params, momenta, x, y, keep):
    for p in params:
        p.grad = None
    global _calls
    _calls += 1
    per_row = F.binary_cross_entropy_with_logits(forward(params, x), y, reduction="none").mean(1)
    w = keep.to(per_row.dtype)
    loss = (per_row * w).sum() / w.sum()
    if _calls > 12:  # the correctness sets are done by now: skip the expensive part
        return loss.detach()
    loss.backward()
    grads = [p.grad for p in params]
    with torch.no_grad():
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, grads)
        torch._foreach_add_(params, momenta, alpha=-LR)
    return loss.detach()
