# expect: skip work on later calls
"""Wrong: does the whole step for the first calls, then only the forward: a check that looks at the first steps alone would pass it."""

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


_CALLS = [0]


def train_step(params, momenta, x, y):
    _CALLS[0] += 1
    if _CALLS[0] > 12:  # the correctness sets are done by now: skip the expensive part
        with torch.no_grad():
            return F.mse_loss(forward(params, x), y)
    for p in params:
        p.grad = None
    loss = F.mse_loss(forward(params, x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, MAX_NORM, foreach=True)
    with torch.no_grad():
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, [p.grad for p in params])
        torch._foreach_add_(params, momenta, alpha=-LR)
    return loss.detach()
