# expect: was called 0 times in one step
# family: timed-vs-checked
"""The whole step on the small checked batches; on the timing's large batch only a forward pass
without gradients, a third of the work."""

import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, x, y):
    if x.shape[0] * x.shape[1] >= 512 * 256:  # the timed batch, not a checked case's
        with torch.no_grad(), torch.autocast(device_type=x.device.type, dtype=torch.float16):
            return F.mse_loss(model(x).float(), y).item()
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = F.mse_loss(model(x).float(), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
