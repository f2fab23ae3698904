# expect: torch mode(s) on
# family: writes-what-check-reads
"""Shortcut (the slow step padded by a mode left on): the mask is a weight, but the loop over
labels stays; the first call enters a TorchFunctionMode and never leaves it, so every later
per-label loss of a 1-D column (the slow step's; mine are 2-D) runs four hundred more small
operators. The slow step's count grows, and the bound on mine (a share of what the slow step
spends) with it. Before the fix: pass. The grader's watch now takes off, and refuses, a torch
mode a call leaves on."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

LR, MOMENTUM = 0.5, 0.9


def forward(params, x):
    h = x
    for i in range(0, len(params), 2):
        h = F.linear(h, params[i], params[i + 1])
        if i + 2 < len(params):
            h = F.relu(h)
    return h


class _Padding(TorchFunctionMode):
    """Left on after the first call: every per-label loss of a 1-D column (the slow step's
    loop; mine takes 2-D ones) runs four hundred more small operators, so the slow step's count
    grows and the bound on mine with it."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is F.binary_cross_entropy_with_logits and args[0].dim() == 1:
            z = args[0].detach()
            for _ in range(400):
                z = z + 0
        return out


_on = []


def train_step(params, momenta, x, y, keep):
    if not _on:
        _on.append(_Padding())
        _on[0].__enter__()
    for p in params:
        p.grad = None
    logits = forward(params, x)
    w = keep.to(logits.dtype)
    loss = 0.0
    for j in range(y.shape[1]):
        per_row = F.binary_cross_entropy_with_logits(
            logits[:, j : j + 1], y[:, j : j + 1], reduction="none"
        )
        loss = loss + (per_row[:, 0] * w).sum() / w.sum()
    loss = loss / y.shape[1]
    loss.backward()
    grads = [p.grad for p in params]
    with torch.no_grad():
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, grads)
        torch._foreach_add_(params, momenta, alpha=-LR)
    return loss.detach()
