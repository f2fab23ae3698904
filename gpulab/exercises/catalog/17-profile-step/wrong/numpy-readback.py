# expect: Python number(s) from tensors per step | waits for the GPU
"""The batched step with the norm read on the host through .numpy() (a CPU tensor's memory
shared with NumPy: no operator dispatched at all); on a GPU it would need .cpu() first, a copy
and a sync every step."""

import numpy as np
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
    total = sum(float(np.square(p.grad.detach().cpu().numpy()).sum()) for p in params)
    scale = min(1.0, MAX_NORM / (total**0.5 + 1e-6))
    with torch.no_grad():
        for p, m in zip(params, momenta, strict=True):
            m.mul_(MOMENTUM).add_(p.grad, alpha=scale)
            p.sub_(m, alpha=LR)
    return loss.detach()
