# expect: the loss scale went from
# family: loose-property
"""Shortcut (the scaler skipped by its own door): every call the check counts is made,
scaler.scale, scaler.step and scaler.update, but update is handed a new scale of 1.0, so from
the second step on the backward runs on the unscaled loss and small float16 gradients
underflow as they would with no scaler. Before the fix: pass on every case (the loss of this
small model trains either way). Now the scale a step leaves must be one the scaler's own
update makes from the one it found: kept, halved or doubled."""

import torch


def train_step(model, optimizer, scaler, x, y):
    for p in model.parameters():
        p.grad = None
    with torch.autocast(x.device.type, torch.float16):
        err = model(x).float() - y
    loss = (err * err).mean()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update(new_scale=1.0)  # every later backward unscaled
    return float(loss.detach())
