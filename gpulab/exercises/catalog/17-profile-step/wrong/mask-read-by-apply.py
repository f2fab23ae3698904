# expect: Python number(s) from tensors per step | waits for the GPU
# family: escape
"""The mask read into Python without a name the profile counts: Tensor.apply_ hands each value of
a CPU tensor to a Python function, and neither an operator (aten::_local_scalar_dense) nor a
method the check watches (.tolist(), .item(), .numpy()) shows it. The kept rows then come from
index_select with those indices: the slow step's x[keep]. On a GPU the mask comes over by a
non-blocking copy into pinned memory and the host waits for it by spinning on an event's query,
no synchronize call: the wait is there, hidden from the profile."""

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


def _kept_rows(keep):
    rows, seen = [], [0]

    def note(v):
        if v:
            rows.append(seen[0])
        seen[0] += 1
        return v

    if keep.is_cuda:
        # A copy that does not wait, and a wait that is no synchronize: a spin on an event's
        # query (cudaEventQuery is no sync call the profile counts)
        host = torch.empty(keep.shape, dtype=torch.uint8, pin_memory=True)
        host.copy_(keep, non_blocking=True)
        done = torch.cuda.Event()
        done.record()
        while not done.query():
            pass
        host.apply_(note)
        index = torch.tensor(rows, dtype=torch.long).pin_memory()
        return index.to(keep.device, non_blocking=True)
    keep.to(torch.uint8).apply_(note)
    return torch.tensor(rows, dtype=torch.long)


def train_step(params, momenta, x, y, keep):
    for p in params:
        p.grad = None
    rows = _kept_rows(keep)
    xs, ys = x.index_select(0, rows), y.index_select(0, rows)
    loss = F.binary_cross_entropy_with_logits(forward(params, xs), ys)
    loss.backward()
    grads = [p.grad for p in params]
    with torch.no_grad():
        torch._foreach_mul_(momenta, MOMENTUM)
        torch._foreach_add_(momenta, grads)
        torch._foreach_add_(params, momenta, alpha=-LR)
    return loss.detach()
