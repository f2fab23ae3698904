# expect: asks whether torch's profiler is on
# family: timed-vs-checked
"""Shortcut (timed told from checked): the slow starter step, except while torch.profiler
records: then the fixed one."""

from __future__ import annotations

import torch
import torch.nn.functional as F

LR, MOMENTUM = 0.5, 0.9


def forward(params, x):
    h = x
    for i in range(0, len(params), 2):
        h = F.linear(h, params[i], params[i + 1])
        if i + 2 < len(params):
            h = F.relu(h)
    return h


def slow_step(params, momenta, x, y, keep):
    xs, ys = x[keep], y[keep]
    logits = forward(params, xs)
    loss = 0.0
    for j in range(ys.shape[1]):
        loss = loss + F.binary_cross_entropy_with_logits(logits[:, j], ys[:, j])
    return loss / ys.shape[1]


def fast_step(params, momenta, x, y, keep):
    per_row = F.binary_cross_entropy_with_logits(forward(params, x), y, reduction="none").mean(1)
    w = keep.to(per_row.dtype)
    return (per_row * w).sum() / w.sum()


def train_step(params, momenta, x, y, keep):
    for p in params:
        p.grad = None
    step = fast_step if torch.autograd.profiler._is_profiler_enabled else slow_step
    loss = step(params, momenta, x, y, keep)
    loss.backward()
    with torch.no_grad():
        for p, m in zip(params, momenta, strict=True):
            m.mul_(MOMENTUM).add_(p.grad)
            p.sub_(m, alpha=LR)
    return loss.detach()
