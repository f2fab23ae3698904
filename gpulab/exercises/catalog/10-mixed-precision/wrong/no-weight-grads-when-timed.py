# expect: weight did not change in this call
# family: loose-property
"""At the timing's width (the checked cases' model is 32 wide) the weights are frozen for the
step: forward under autocast, a scaled backward that only carries the gradient through the
layers (every layer's backward hook still sees the whole batch) and the biases' gradients,
scaler.step and update on the biases alone. No weight gradient (a third of the step's flops)
and no weight update, ever, in a timed call; the checked cases get the real step."""

import torch
import torch.nn.functional as F


def _step(model, optimizer, scaler, x, y):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


def train_step(model, optimizer, scaler, x, y):
    if model[0].in_features == 32:
        return _step(model, optimizer, scaler, x, y)
    weights = [m.weight for m in model if isinstance(m, torch.nn.Linear)]
    for w in weights:
        w.requires_grad_(False)
    try:
        return _step(model, optimizer, scaler, x, y)
    finally:
        for w in weights:
            w.requires_grad_(True)
