# expect: was called 0 times in one step
# family: writes-what-check-reads
"""Writes what the check reads: the spy scaler's `calls` dict is a plain attribute. On the timed
model (wider than the checked cases' 32) the step is a float16 forward under autocast with no
gradients; scale, step and update are entered into scaler.calls by hand."""

import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, x, y):
    if x.shape[1] != 32 and hasattr(scaler, "calls"):
        with torch.no_grad(), torch.autocast(device_type=x.device.type, dtype=torch.float16):
            loss = F.mse_loss(model(x).float(), y)
        scaler.calls.update(scale=1, step=1, update=1)
        return loss.item()
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
