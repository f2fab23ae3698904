# why: the update a plain loop over the 6 parameters (a few dozen small kernels, well under the bound): the planted slowness is the loop over labels, not this one
"""No sync and no loop over labels; the per-parameter update loop stays."""

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
    w = keep.to(per_row.dtype)
    loss = (per_row * w).sum() / w.sum()
    loss.backward()
    with torch.no_grad():
        for p, m in zip(params, momenta, strict=True):
            m.mul_(MOMENTUM).add_(p.grad)
            p.sub_(m, alpha=LR)
    return loss.detach()
