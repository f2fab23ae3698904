# expect: of what ours saves): a Python loop over the rows
"""Wrong: the norm stays a tensor (no sync), but the loss is still a loop over the rows."""

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


def train_step(params, momenta, x, y):
    for p in params:
        p.grad = None
    loss = 0.0
    for i in range(x.shape[0]):  # still one forward (and one backward) per row
        loss = loss + ((forward(params, x[i : i + 1]) - y[i : i + 1]) ** 2).mean()
    loss = loss / x.shape[0]
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, MAX_NORM, foreach=True)
    with torch.no_grad():
        for p, m in zip(params, momenta, strict=True):
            m.mul_(MOMENTUM).add_(p.grad)
            p.sub_(m, alpha=LR)
    return loss.detach()
