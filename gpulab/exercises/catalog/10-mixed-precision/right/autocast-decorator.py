# why: the forward and loss under the torch.autocast decorator form, gradients set to None by hand at the end
"""Unusual but correct: the forward and loss in a function decorated with torch.autocast (the
decorator form), gradients set to None by hand at the end of the step."""

import torch
import torch.nn.functional as F


def _loss(model, x, y):
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        return F.mse_loss(model(x), y)


def train_step(model, optimizer, scaler, x, y):
    loss = _loss(model, x, y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    value = loss.item()
    for p in model.parameters():
        p.grad = None
    return value
