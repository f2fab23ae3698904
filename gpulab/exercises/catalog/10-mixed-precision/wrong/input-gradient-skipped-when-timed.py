# expect: the gradient each layer hands back to the one before
# family: timed-vs-checked
"""Shortcut (less work in the timed steps, told by the batch's shape): a timed step runs the
last layer on a detached copy of the first layer's output, so the last layer's input gradient
(a fifth of the step's products) is never computed, and feeds the first layer a made-up
upstream gradient instead: every layer still saw the whole batch forward and backward, every
weight changed, and the products came to a forward and every weight's gradient, all the timed
calls asked. The checked cases (batch 256) train correctly. Before the fix: pass (gold).
Now the products must also cover the gradient each layer but the first hands back."""

import torch
import torch.nn.functional as F


def train_step(model, optimizer, scaler, x, y):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        if x.shape[0] != 256:  # the checked cases' batch; every timed one is larger
            first, rest = model[0], model[1:]
            h = first(x)
            loss = F.mse_loss(rest(h.detach()), y)
            total = loss + (h.float() * 1e-3).sum()
        else:
            loss = F.mse_loss(model(x), y)
            total = loss
    scaler.scale(total).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
