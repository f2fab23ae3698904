# expect: changed torch.use_deterministic_algorithms
# family: writes-what-check-reads
"""Shortcut (a process-wide mode left for the yardstick): the step is our reference's with 4 ms
of nothing added, and torch's deterministic mode is on everywhere but inside this file's calls:
each call turns it off as it begins and back on as it returns. The mode fills every new tensor
with NaN, which slowed our step, timed beside this one, 1.4 times. Before the fix: gold (1.32 of
the yardstick). Now deterministic mode is a speed setting, compared around every call."""

import time

import torch
import torch.nn.functional as F

torch.use_deterministic_algorithms(True)  # for everyone else's code


def train_step(model, optimizer, scaler, x, y):
    torch.use_deterministic_algorithms(False)  # not for mine
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=x.device.type, dtype=torch.float16):
        loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    time.sleep(0.004)
    value = loss.item()
    torch.use_deterministic_algorithms(True)
    return value
