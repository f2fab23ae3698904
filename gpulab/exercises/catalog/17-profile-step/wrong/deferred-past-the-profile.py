# expect: acts as an array or a number
# family: lazy
"""Shortcut (the slow step deferred past the profile): the profiled and timed calls (told by
their count: the fourth run's calls after its two warm ones, which go through the grader's
watch) only queue their batch and return a tensor subclass; its first read, after the
profile and the timing, runs the starter's slow step for every queued batch, so the losses
and the weights come out right and the profile saw nothing. Before the fix: pass (the check
called the step bare in the profile, past the watch). The profiled and timed calls go
through the watch now (timed_calls: no synchronize after them), which refuses a result that
computes when it is read."""

from __future__ import annotations

import torch
import torch.nn.functional as F

LR, MOMENTUM = 0.5, 0.9
_runs: list = []  # each params list seen, in order
_calls: dict[int, int] = {}
_queue: list = []


def forward(params, x):
    h = x
    for i in range(0, len(params), 2):
        h = F.linear(h, params[i], params[i + 1])
        if i + 2 < len(params):
            h = F.relu(h)
    return h


def _slow(params, momenta, x, y, keep):
    for p in params:
        p.grad = None
    xs, ys = x[keep], y[keep]
    logits = forward(params, xs)
    loss = 0.0
    for j in range(ys.shape[1]):
        loss = loss + F.binary_cross_entropy_with_logits(logits[:, j], ys[:, j])
    loss = loss / ys.shape[1]
    loss.backward()
    with torch.no_grad():
        for p, m in zip(params, momenta, strict=True):
            m.mul_(MOMENTUM).add_(p.grad)
            p.sub_(m, alpha=LR)
    return loss.detach()


def _drain():
    while _queue:
        job, args = _queue.pop(0)
        job["loss"] = _slow(*args)


class Later(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        _drain()
        real = [a._job["loss"] if isinstance(a, Later) else a for a in args]
        return func(*real, **(kwargs or {}))


def train_step(params, momenta, x, y, keep):
    key = id(params)
    if key not in _calls:
        _runs.append(params)  # held: a freed list's id is taken again by the next one
        _calls[key] = 0
    _calls[key] += 1
    if len(_runs) < 4 or _calls[key] <= 2:
        return _slow(params, momenta, x, y, keep)
    job = {}
    _queue.append((job, (params, momenta, x, y, keep)))
    out = torch.zeros(()).as_subclass(Later)
    out._job = job
    return out
