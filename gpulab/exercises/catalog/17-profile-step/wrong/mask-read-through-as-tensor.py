# expect: Python number(s) from tensors per step | your step waits for the GPU
# family: escape
"""Shortcut: keep the data-sized row selection, but read the mask into NumPy through
torch.as_tensor(numpy_buf).copy_(keep) (no readback or nonzero operator for the CPU count to
see) and select rows with index_select; only the label loop is fixed."""

from __future__ import annotations

import numpy as np
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
    kb = np.empty(keep.shape, dtype=np.bool_)
    torch.as_tensor(kb).copy_(keep)  # on a GPU: a blocking copy to the host, i.e. the sync
    idx = torch.as_tensor(np.flatnonzero(kb)).to(x.device)
    xs, ys = x.index_select(0, idx), y.index_select(0, idx)
    loss = F.binary_cross_entropy_with_logits(forward(params, xs), ys)
    loss.backward()
    grads = [p.grad for p in params]
    with torch.no_grad():
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, grads)
        torch._foreach_add_(params, momenta, alpha=-LR)
    return loss.detach()
