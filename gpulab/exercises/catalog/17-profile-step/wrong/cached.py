# expect: an earlier step's loss
"""Wrong: caches the first step's result per batch shape and replays it: fast, and stale once the batch changes."""

from __future__ import annotations

import torch
import torch.nn.functional as F

LR, MOMENTUM, MAX_NORM = 0.05, 0.9, 1.0


def forward(params: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    h = x
    for i in range(0, len(params), 2):
        h = F.linear(h, params[i], params[i + 1])
        if i + 2 < len(params):
            h = F.relu(h)
    return h


_CACHE: dict = {}


def train_step(params, momenta, x, y):
    key = tuple(x.shape)
    if key in _CACHE:  # seen this shape: replay the update and the loss
        loss, deltas = _CACHE[key]
        with torch.no_grad():
            torch._foreach_add_(params, deltas)
        return loss
    before = [p.detach().clone() for p in params]
    for p in params:
        p.grad = None
    loss = F.mse_loss(forward(params, x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, MAX_NORM, foreach=True)
    with torch.no_grad():
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, [p.grad for p in params])
        torch._foreach_add_(params, momenta, alpha=-LR)
    _CACHE[key] = (loss.detach(), torch._foreach_sub([p.detach() for p in params], before))
    return loss.detach()
