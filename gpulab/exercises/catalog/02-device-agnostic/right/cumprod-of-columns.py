# why: the powers as a running product along a table of [1, x, x, ...] built on the device (cumprod, an assignment between device tensors), no exponents at all
"""Correct: column k is the product of k copies of x, taken by torch.cumprod over a table whose
first column is ones and the others x, all made on the device."""

import torch


def pick_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def features(values, degree, device=None):
    device = pick_device() if device is None else torch.device(device)
    x = torch.as_tensor(values, dtype=torch.float32, device=device)
    cols = torch.ones(x.shape[0], degree + 1, dtype=torch.float32, device=device)
    cols[:, 1:] = x[:, None]
    return torch.cumprod(cols, dim=1)
