# expect: changed torch.nn.modules.module._global_forward_pre_hooks
# family: writes-what-check-reads
"""Shortcut (a process-wide setting left for the yardstick): the step is slow (our reference's
work and 4 ms of nothing), and at import it registers a global module forward pre-hook
(`register_module_forward_pre_hook`) that sleeps 6 ms on every Sequential's forward, whoever's.
Each call takes the hook off as it begins and puts it back as it returns, so only the rounds of
our solution, timed beside it, ran under it. Before the fix: gold (1.21 of the yardstick, for a
step 2.5 times its time). Now torch's global module and optimizer hook registries, the default
saved-tensor hooks and anomaly mode are speed settings, compared around every call."""

import time

import torch
import torch.nn.functional as F
from torch.nn.modules import module as _module

_handle = [None]


def _slow(mod, args):
    if isinstance(mod, torch.nn.Sequential):
        time.sleep(0.006)


def _on():
    _handle[0] = _module.register_module_forward_pre_hook(_slow)


def _off():
    if _handle[0] is not None:
        _handle[0].remove()
        _handle[0] = None


_on()


def train_step(model, optimizer, scaler, x, y):
    _off()
    try:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=x.device.type, dtype=torch.float16):
            loss = F.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        time.sleep(0.004)
        return loss.item()
    finally:
        _on()
