# expect: the loss is
# family: mistake
"""Honest mistake: the mask dropped altogether: the mean runs over the padding rows as well, and
they train the model too."""

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
    loss = F.binary_cross_entropy_with_logits(forward(params, x), y)
    loss.backward()
    grads = [p.grad for p in params]
    with torch.no_grad():
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, grads)
        torch._foreach_add_(params, momenta, alpha=-LR)
    return loss.detach()
