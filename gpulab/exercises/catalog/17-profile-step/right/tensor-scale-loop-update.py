# why: the clipping factor is a clamped tensor written out by hand, and the update a plain loop over the 8 parameters
"""No sync and no loop over rows; the per-parameter update loop costs a few dozen small kernels, well under the bound."""

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
    out = forward(params, x)
    loss = ((out - y) ** 2).mean()
    loss.backward()
    norm = torch.sqrt(sum((p.grad**2).sum() for p in params))
    scale = (MAX_NORM / (norm + 1e-6)).clamp(max=1.0)  # a tensor: nothing is read back
    with torch.no_grad():
        for p, m in zip(params, momenta, strict=True):
            m.mul_(MOMENTUM).add_(p.grad * scale)
            p.sub_(LR * m)
    return loss.detach()
