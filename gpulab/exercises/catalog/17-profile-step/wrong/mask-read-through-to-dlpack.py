# expect: Python number(s) from tensors per step | your step waits for the GPU
# family: escape
# cpu-only: on a GPU NumPy refuses a CUDA tensor's DLPack capsule (BufferError): the shortcut cannot run
"""Shortcut (the mask read into NumPy by DLPack's C export): the data-sized row selection kept,
the mask handed to NumPy through an object whose __dlpack__ returns
`torch.utils.dlpack.to_dlpack(keep)` (torch._C._to_dlpack: no Tensor method, no operator, so
no read counted on a CPU), the row index built by np.flatnonzero and handed to index_select;
only the label loop is fixed. Before the fix: pass on a CPU (on a GPU NumPy refuses device
memory). DLPack's C exports now count as a read into Python wherever the exits are watched."""

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

    class _Out:
        def __dlpack__(self, **kwargs):
            return torch.utils.dlpack.to_dlpack(keep)

        def __dlpack_device__(self):
            return (1, 0)

    rows = np.flatnonzero(np.from_dlpack(_Out())).tolist()
    idx = torch.tensor(rows, dtype=torch.long, device=x.device)
    xs, ys = x.index_select(0, idx), y.index_select(0, idx)
    loss = F.binary_cross_entropy_with_logits(forward(params, xs), ys)
    loss.backward()
    grads = [p.grad for p in params]
    with torch.no_grad():
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, grads)
        torch._foreach_add_(params, momenta, alpha=-LR)
    return loss.detach()
