# expect: Python number | waits for the GPU
"""Wrong: the whole batch at once and foreach updates, but the norm is still read back with .item()."""

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
    loss = F.mse_loss(forward(params, x), y)
    loss.backward()
    grads = [p.grad for p in params]
    norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    scale = min(1.0, MAX_NORM / (norm.item() + 1e-6))  # one read: one sync per step
    with torch.no_grad():
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, grads, alpha=scale)
        torch._foreach_add_(params, momenta, alpha=-LR)
    return loss.detach()
