# expect: asks whether torch's profiler is on
"""Cheat: the slow starter step, except while torch.profiler records: then a batched, sync-free one."""

from __future__ import annotations

import torch
import torch.nn.functional as F

LR, MOMENTUM, MAX_NORM = 0.05, 0.9, 1.0


def forward(params: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """The MLP: Linear layers (weights params[0::2], biases params[1::2]), ReLU between them."""
    h = x
    for i in range(0, len(params), 2):
        h = F.linear(h, params[i], params[i + 1])
        if i + 2 < len(params):
            h = F.relu(h)
    return h


def slow_step(
    params: list[torch.Tensor], momenta: list[torch.Tensor], x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """One step of SGD with momentum on the mean squared error of forward(params, x) against y,
    with the gradients clipped to a global norm of MAX_NORM. Updates params and momenta in
    place; returns the loss (before the update) as a 0-d tensor.

    TODO: this step is slow. Profile it (gpulab ex profile profile-step), find the rows that
    wait for the GPU and the loop that launches thousands of tiny kernels, and fix both
    without changing what it computes.
    """
    for p in params:
        p.grad = None
    loss = 0.0
    for i in range(x.shape[0]):
        loss = loss + ((forward(params, x[i : i + 1]) - y[i : i + 1]) ** 2).mean()
    loss = loss / x.shape[0]
    loss.backward()
    total = 0.0
    for p in params:
        total += p.grad.pow(2).sum().item()
    scale = min(1.0, MAX_NORM / (total**0.5 + 1e-6))
    with torch.no_grad():
        for p, m in zip(params, momenta, strict=True):
            m.mul_(MOMENTUM).add_(p.grad, alpha=scale)
            p.sub_(m, alpha=LR)
    return loss.detach()


def fast_step(params, momenta, x, y):
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


def train_step(params, momenta, x, y):
    if torch.autograd.profiler._is_profiler_enabled:
        return fast_step(params, momenta, x, y)
    return slow_step(params, momenta, x, y)
