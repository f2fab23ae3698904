"""The step the profile asks for: every row kept and weighted by its mask, the labels' losses in
one call, the update with foreach."""

from __future__ import annotations

import torch
import torch.nn.functional as F

LR, MOMENTUM = 0.5, 0.9


def forward(params: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
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
    for p in params:
        p.grad = None
    # Every row goes through the model: x[keep] would make a tensor whose size only the data
    # knows, and on a GPU the host waits to learn it. A padding row's loss is multiplied by 0.
    per_label = F.binary_cross_entropy_with_logits(forward(params, x), y, reduction="none")
    weight = keep.to(per_label.dtype)
    # the mean over labels, then over the real rows: the slow step's number, in a few kernels
    loss = (per_label.mean(dim=1) * weight).sum() / weight.sum()
    loss.backward()
    grads = [p.grad for p in params]
    with torch.no_grad():  # one multi-tensor kernel per line for all parameters at once
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, grads)
        torch._foreach_add_(params, momenta, alpha=-LR)
    return loss.detach()
