# expect: the weights did not change
# family: loose-property
"""Shortcut (skipping the work that costs): the loss computed the fast way, no backward and no
update."""

from __future__ import annotations

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
    w = keep.to(per_row.dtype)
    return ((per_row * w).sum() / w.sum()).detach()
