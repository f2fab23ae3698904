# expect: of what ours saves): a Python loop
# family: mistake
"""Honest half-fix: the mask is a weight now (no sync), but the loss still loops over the labels:
a dozen small kernels per label, forward and backward."""

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
    logits = forward(params, x)
    w = keep.to(logits.dtype)
    loss = 0.0
    for j in range(y.shape[1]):
        per_row = F.binary_cross_entropy_with_logits(logits[:, j], y[:, j], reduction="none")
        loss = loss + (per_row * w).sum() / w.sum()
    loss = loss / y.shape[1]
    loss.backward()
    grads = [p.grad for p in params]
    with torch.no_grad():
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, grads)
        torch._foreach_add_(params, momenta, alpha=-LR)
    return loss.detach()
