"""Exercise: profile a slow training step, then fix what the profile shows."""

from __future__ import annotations

import torch
import torch.nn.functional as F

LR, MOMENTUM = 0.5, 0.9


def forward(params: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """The MLP: Linear layers (weights params[0::2], biases params[1::2]), ReLU between them."""
    h = x
    for i in range(0, len(params), 2):
        h = F.linear(h, params[i], params[i + 1])
        if i + 2 < len(params):
            h = F.relu(h)
    return h


def train_step(
    params: list[torch.Tensor],
    momenta: list[torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    keep: torch.Tensor,
) -> torch.Tensor:
    """One step of SGD with momentum on a multi-label classifier: forward(params, x) gives one
    logit per label, y holds 0 or 1 per label, and the loss is the binary cross-entropy averaged
    over the labels and over the real rows of the batch (keep is True for those; the others are
    padding). Updates params and momenta in place; returns the loss (before the update) as a 0-d
    tensor.

    TODO: this step is slow. Profile it (gpulab ex profile profile-step), find what waits for
    the GPU and the loop that launches hundreds of tiny kernels, and fix both without changing
    what it computes.
    """
    for p in params:
        p.grad = None
    xs, ys = x[keep], y[keep]  # only the real rows
    logits = forward(params, xs)
    loss = 0.0
    for j in range(ys.shape[1]):  # label by label
        loss = loss + F.binary_cross_entropy_with_logits(logits[:, j], ys[:, j])
    loss = loss / ys.shape[1]
    loss.backward()
    with torch.no_grad():
        for p, m in zip(params, momenta, strict=True):
            m.mul_(MOMENTUM).add_(p.grad)
            p.sub_(m, alpha=LR)
    return loss.detach()
