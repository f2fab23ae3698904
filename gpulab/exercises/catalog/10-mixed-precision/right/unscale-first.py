# why: unscales the gradients explicitly (scaler.unscale_) before scaler.step, as clipping needs
"""scaler.unscale_(optimizer) before the step: what gradient clipping would need; step knows."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, x: torch.Tensor, y: torch.Tensor) -> float:
    optimizer.zero_grad()
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)  # the gradients are now the true ones (clip here if you must)
    scaler.step(optimizer)  # does not unscale twice
    scaler.update()
    return loss.item()
