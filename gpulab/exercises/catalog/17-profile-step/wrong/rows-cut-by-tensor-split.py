# expect: sizes read from a tensor's values | your step waits for the GPU
# family: escape
"""Shortcut (the data-sized selection kept, its size read by ATen on the host): the rows are
ordered real-first with a stable argsort (fixed size), then cut with
torch.tensor_split(rows, count) where count is keep.sum() as a 1-element tensor: tensor_split
reads the cut points from the tensor's memory in C++ (no aten::_local_scalar_dense, no
nonzero), so the loss runs on the real rows only, a tensor whose size only the data knows. On a
GPU the count must come to the host first (.cpu(), a blocking copy the sync count sees).
Before the fix: pass on a CPU."""

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


def train_step(params, momenta, x, y, keep):
    for p in params:
        p.grad = None
    order = torch.argsort((~keep).to(torch.int8), stable=True)
    count = keep.sum().reshape(1).cpu()
    xs, _ = torch.tensor_split(x.index_select(0, order), count)
    ys, _ = torch.tensor_split(y.index_select(0, order), count)
    loss = F.binary_cross_entropy_with_logits(forward(params, xs), ys)
    loss.backward()
    grads = [p.grad for p in params]
    with torch.no_grad():
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, grads)
        torch._foreach_add_(params, momenta, alpha=-LR)
    return loss.detach()
