"""Exercise: a mixed-precision training step with torch.autocast and a GradScaler."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, x: torch.Tensor, y: torch.Tensor) -> float:
    """One step of training `model` on (x, y) with the mean squared error loss. Return the
    loss as a Python float (unscaled, as computed before the step).

    TODO: turn this float32 step into a mixed-precision one:
    - run the forward pass and the loss under torch.autocast(device_type=x.device.type,
      dtype=torch.float16);
    - call backward on scaler.scale(loss), then scaler.step(optimizer) and scaler.update()
      instead of optimizer.step().
    """
    optimizer.zero_grad(set_to_none=True)
    loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()
