# expect: your code uses ctypes
# family: escape
"""Shortcut (a read into Python by a door nobody counts): keeps the slow step's data-sized row
selection, which the exercise is about removing (on a GPU the host must learn how many rows are
real). The mask is read on the host through ctypes over keep.data_ptr() (from_address: the
pointer names are scanned only in checks with an ALLOW list), np.flatnonzero picks the rows, and
the indices are written into a torch.empty through ctypes too (no torch.as_tensor over NumPy
memory, no .numpy(), no nonzero operator, no _local_scalar_dense); index_select takes the rows.
Only the loop over labels is fixed, as in wrong/mask-read-through-as-tensor.py."""

from __future__ import annotations

import ctypes

import numpy as np
import torch
import torch.nn.functional as F

LR, MOMENTUM = 0.5, 0.9


def _host(t, ctype, n):
    return np.ctypeslib.as_array((ctype * n).from_address(t.data_ptr()))


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
    mask = _host(keep, ctypes.c_bool, keep.numel())
    rows = np.flatnonzero(mask)
    idx = torch.empty(len(rows), dtype=torch.int64, device=x.device)
    if len(rows):
        _host(idx, ctypes.c_int64, len(rows))[:] = rows
    xs, ys = x.index_select(0, idx), y.index_select(0, idx)
    loss = F.binary_cross_entropy_with_logits(forward(params, xs), ys)
    loss.backward()
    grads = [p.grad for p in params]
    with torch.no_grad():
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, grads)
        torch._foreach_add_(params, momenta, alpha=-LR)
    return loss.detach()
