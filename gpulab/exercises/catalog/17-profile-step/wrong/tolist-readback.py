# expect: Python number(s) from tensors per step | waits for the GPU
"""The batched step, but the clipping's norm is still read back to Python every step, through
.tolist(): on a GPU that is a device-to-host copy and a sync, the very thing the exercise is
about; on the CPU it dispatches no aten::_local_scalar_dense, which is what the check counts."""

import torch
import torch.nn.functional as F

LR, MOMENTUM, MAX_NORM = 0.05, 0.9, 1.0


def forward(params, x):
    h = x
    for i in range(0, len(params), 2):
        h = F.linear(h, params[i], params[i + 1])
        if i + 2 < len(params):
            h = F.relu(h)
    return h


def train_step(params, momenta, x, y):
    for p in params:
        p.grad = None
    loss = F.mse_loss(forward(params, x), y)
    loss.backward()
    sq = torch.stack([p.grad.pow(2).sum() for p in params]).sum()
    total = sq.tolist()  # a Python float, read back every step
    scale = min(1.0, MAX_NORM / (total**0.5 + 1e-6))
    with torch.no_grad():
        for p, m in zip(params, momenta, strict=True):
            m.mul_(MOMENTUM).add_(p.grad, alpha=scale)
            p.sub_(m, alpha=LR)
    return loss.detach()
