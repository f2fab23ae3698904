# expect: a matrix product ran in torch.float32 | fewer than
# family: property-proxy
"""Shortcut (property checked on a proxy): the float16 matrix products are made on the META
device, where they cost nothing; the real step runs in float32.

Trick: the check counts float16 flops from every aten.mm/addmm/... its TorchDispatchMode sees,
whatever device the operands are on. A meta-device product has shapes and a dtype but no data,
so `torch.mm(empty(B, i, f16, meta), empty(i, o, f16, meta))` adds 2*B*i*o "float16 flops" in
microseconds. The real work is done in float32 by the same Linear modules (called as modules, so
the row hooks count the whole batch forward and backward), their forward swapped on the
instance for a 1x1 conv1d (aten.convolution is no "product", so no float32 product is seen).
Scaler: scale/step/update once each; every weight changes; loss returned unscaled.

Rule got past: mixed-precision's "every matrix product in float16, at least a forward and every
weight's gradient over the whole batch" (_Products, _half_wrong): device not read, and
convolution not counted as a matrix product.

Before the fix, verdict: pass / gold, "all 2 input sets correct (seed 247449357)"; of_yardstick 0.92 (seed 2640991371). The reference graded gold in the same minute.
Fix: count only products whose operands are on the check's device (skip meta/fake tensors), and count aten.convolution (and its backward) in float32 as a non-float16 product.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _as_conv(m):
    def forward(x):
        return F.conv1d(x.unsqueeze(-1), m.weight.unsqueeze(-1), m.bias).squeeze(-1)

    return forward


def train_step(model, optimizer, scaler, x, y):
    optimizer.zero_grad(set_to_none=True)
    lins = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    for m in lins:
        if "forward" not in m.__dict__:
            m.forward = _as_conv(m)
    loss = F.mse_loss(model(x), y)
    rows = x.shape[0]
    for m in lins:  # forward, weight grad, input grad: on meta, free
        o, i = m.weight.shape
        a = torch.empty(rows, i, dtype=torch.float16, device="meta")
        w = torch.empty(i, o, dtype=torch.float16, device="meta")
        g = torch.empty(rows, o, dtype=torch.float16, device="meta")
        torch.mm(a, w)
        torch.mm(g.t(), a)
        torch.mm(g, w.t())
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
