# why: torch.compile fuses the loss and the update into generated kernels (the backward comes from AOTAutograd)
"""torch.compile around the forward+loss and around the clipping+update; the first calls compile."""

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


@torch.compile(dynamic=False)
def _loss(params, x, y):
    return ((forward(params, x) - y) ** 2).mean()


@torch.compile(dynamic=False)
def _update(params, momenta, grads):
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    scale = torch.clamp(MAX_NORM / (norm + 1e-6), max=1.0)
    with torch.no_grad():
        for p, m, g in zip(params, momenta, grads, strict=True):
            m.mul_(MOMENTUM).add_(g * scale)
            p.sub_(LR * m)


def train_step(params, momenta, x, y):
    for p in params:
        p.grad = None
    loss = _loss(params, x, y)
    loss.backward()
    _update(params, momenta, [p.grad for p in params])
    return loss.detach()
