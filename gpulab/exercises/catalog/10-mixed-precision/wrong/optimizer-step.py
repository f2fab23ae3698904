# expect: scaler.step(optimizer)
# family: mistake
"""Wrong: steps the optimizer directly, with gradients still multiplied by the scale."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, x: torch.Tensor, y: torch.Tensor) -> float:
    optimizer.zero_grad(set_to_none=True)  # no stale gradients from an earlier backward
    # Matmuls run in float16 on tensor cores; autocast keeps reductions such as the loss in
    # float32. The parameters stay float32: autocast casts copies on the fly.
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = F.mse_loss(model(x), y)
    # Small float16 gradients underflow to zero; scaling the loss scales every gradient up.
    scaler.scale(loss).backward()
    optimizer.step()
    scaler.update()  # grows or shrinks the scale for the next step
    return loss.item()
