# expect: size changes with the mask
# family: escape
"""Shortcut (the data-sized selection kept, by a door no name list held): the rows are ordered
real-first with a stable argsort (fixed size), then taken as one padded sequence and packed with
torch.nn.utils.rnn.pack_padded_sequence at length keep.sum(): the packed data is the real rows,
their number read from the lengths tensor's memory in C++ (no aten::_local_scalar_dense, no
nonzero). On a GPU the lengths must come to the host first (.cpu(), a blocking copy). Before the
fix: pass on a CPU; now the shapes each profiled step made are compared across steps."""

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
    pack = torch.nn.utils.rnn.pack_padded_sequence
    xs = pack(x.index_select(0, order).unsqueeze(1), count).data
    ys = pack(y.index_select(0, order).unsqueeze(1), count).data
    loss = F.binary_cross_entropy_with_logits(forward(params, xs), ys)
    loss.backward()
    grads = [p.grad for p in params]
    with torch.no_grad():
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, grads)
        torch._foreach_add_(params, momenta, alpha=-LR)
    return loss.detach()
