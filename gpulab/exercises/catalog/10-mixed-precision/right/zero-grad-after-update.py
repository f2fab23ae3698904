# why: zeroes the gradients at the end of the step, after the update (lesson 13's loop), not first
"""The loop of lesson 13: forward under autocast, scaled backward, step, update, then zero_grad."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)  # ready for the next step's backward
    return loss.item()
