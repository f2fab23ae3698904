# expect: the step's first layer saw
# family: timed-vs-checked
"""Tells a timed call by its inputs: the timing rotates between two fixed batches (sets=2), so a
batch whose data_ptr was seen before is a timed call. For those, the full step runs every second
call; the others do the forward under autocast and count the scaler calls through the
real scaler API on a zero loss, which costs almost nothing (no backward through the model)."""

import torch
import torch.nn.functional as F

_seen = {}


def train_step(model, optimizer, scaler, x, y):
    key = x.data_ptr()
    k = _seen[key] = _seen.get(key, 0) + 1
    if x.shape[1] != 32 and k % 2:
        with torch.autocast(device_type=x.device.type, dtype=torch.float16):
            out = model(x[:1])
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(out.float().sum() * 0).backward()
        scaler.step(optimizer)
        scaler.update()
        return 0.0
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
