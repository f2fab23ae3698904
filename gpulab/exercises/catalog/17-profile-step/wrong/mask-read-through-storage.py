# expect: Python number(s) from tensors per step | your step waits for the GPU
# family: escape
"""Shortcut (the mask read into Python by its storage): the data-sized row selection kept, the
mask's bytes written by `keep.untyped_storage()._write_file` into a BytesIO (no readback
operator, no .tolist() or .numpy() for the CPU count to see), the row index built from them in
Python and handed to index_select; only the label loop is fixed. Before the fix: pass on a CPU
(on a GPU the storage's copy to the host is a sync the profile counts). A tensor's storage,
asked for inside a step, now counts as a read into Python."""

from __future__ import annotations

import io

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
    buf = io.BytesIO()
    keep.untyped_storage()._write_file(buf, False, False, 1)
    rows = [i for i, v in enumerate(buf.getvalue()) if v]
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
