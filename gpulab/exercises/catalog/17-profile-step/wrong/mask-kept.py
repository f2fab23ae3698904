# expect: output size depends on the data | waits for the GPU
# family: mistake
"""Honest half-fix: the loop over labels is gone, but the padding rows are still dropped with
boolean masks. x[keep] is a tensor whose size only the data knows: on a GPU the host waits for it."""

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
    xs, ys = x[keep], y[keep]
    loss = F.binary_cross_entropy_with_logits(forward(params, xs), ys)
    loss.backward()
    grads = [p.grad for p in params]
    with torch.no_grad():
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, grads)
        torch._foreach_add_(params, momenta, alpha=-LR)
    return loss.detach()
