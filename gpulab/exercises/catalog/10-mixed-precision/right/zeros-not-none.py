# why: zeroes the gradients in place (model.zero_grad(set_to_none=False)) instead of freeing them
"""Gradients set to zero tensors rather than None, through the model rather than the optimizer."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, x: torch.Tensor, y: torch.Tensor) -> float:
    model.zero_grad(set_to_none=False)
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        out = model(x)
    loss = F.mse_loss(out.float(), y)  # the loss outside autocast, on a float32 copy
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return float(loss.detach())
