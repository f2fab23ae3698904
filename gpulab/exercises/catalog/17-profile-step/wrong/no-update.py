# expect: the weights did not change
"""Wrong: skips the work that costs: the loss is computed, but no backward and no update."""

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
    with torch.no_grad():  # "the forward is what matters"
        return F.mse_loss(forward(params, x), y)
