# expect: the step's first layer saw
# family: loose-property
"""The timed calls' check reads only the scaler's call counts and the Linear layers' output
dtype; it never looks at what the step trained on. At the timing's width (the checked cases'
model is 32 wide) the step runs on the first quarter of the batch: forward, scaled backward,
scaler.step and update all happen, on a quarter of the work the figure is credited with."""

import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, x, y):
    if x.shape[1] != 32:  # not a checked case's model: the timed one
        x, y = x[: x.shape[0] // 4], y[: y.shape[0] // 4]
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
