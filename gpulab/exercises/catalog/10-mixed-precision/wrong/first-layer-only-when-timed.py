# expect: of the step saw | the step's first layer saw
# family: loose-property
"""The timed calls' check counts the rows only the first Linear layer saw, forward and backward,
and only the dtype of the others. At the timing's width (the checked model is 32 wide) the step
runs the first layer on the whole batch, the others on one row, and backpropagates through the
first layer alone: every count is right, on about a quarter of the work the figure is credited
with. The checked cases get the real step."""

import torch
import torch.nn.functional as F


def _honest(model, optimizer, scaler, x, y):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


def train_step(model, optimizer, scaler, x, y):
    if x.shape[1] == 32:  # a checked case's model
        return _honest(model, optimizer, scaler, x, y)
    optimizer.zero_grad(set_to_none=True)
    layers = list(model)
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        h = layers[0](x)  # the whole batch through the layer whose rows are counted
        rest = h[:1].detach()
        for layer in layers[1:]:
            rest = layer(rest)  # one row through the others: only their dtype is read
        loss = F.mse_loss(h.float(), y)
    scaler.scale(loss).backward()  # through the first layer only
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
