# expect: Python number(s) from tensors per step | your step waits for the GPU
# family: escape
"""Shortcut (a read into Python no counter sees; CPU): the mask is read into Python through
torch.save into a BytesIO, and the kept rows are selected by index_select on a list.

Trick: torch.save writes the bool storage's bytes straight from C++ (no aten op, no Tensor
method the read-watch wraps, no DLPack, no NumPy), so the CPU profile counts 0 readbacks and 0
data-sized ops, though the step still picks its rows on the host (on a GPU, torch.save's
.cpu() is the very sync the exercise removes). The labels' loop is fixed (one BCE call), so
the operator count passes too.

Rule got past: profile-step's CPU stand-ins for the sync (aten::_local_scalar_dense,
nonzero/masked_select/unique, PYTHON_READS, as_tensor/DLPack counted as reads).

Before the fix, verdict: pass / pass, "all 4 input sets correct (seed 2328710827)"; wrong/mask-read-through-as-tensor.py fails in the same minute.
Fix: count torch.save / torch.serialization (and storage _write_file, pickling a storage) of a tensor inside the step as a read into Python, as as_tensor and DLPack are.
"""

from __future__ import annotations

import io
import zipfile

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


def _rows(keep):
    buf = io.BytesIO()
    torch.save(keep.contiguous(), buf)
    with zipfile.ZipFile(buf) as z:
        data = z.read(next(n for n in z.namelist() if "/data/" in n))
    return [i for i, b in enumerate(data[: keep.numel()]) if b]


def train_step(params, momenta, x, y, keep):
    for p in params:
        p.grad = None
    idx = torch.tensor(_rows(keep), dtype=torch.long, device=x.device)
    xs, ys = x.index_select(0, idx), y.index_select(0, idx)
    loss = F.binary_cross_entropy_with_logits(forward(params, xs), ys)
    loss.backward()
    grads = [p.grad for p in params]
    with torch.no_grad():
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, grads)
        torch._foreach_add_(params, momenta, alpha=-LR)
    return loss.detach()
