# why: an empty table on the device filled a column at a time by assignment from a running product
"""Correct: torch.empty on the device, column 0 set to one by a scalar assignment, each next
column the previous one times the values, all between tensors on the device."""

import torch


def pick_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def features(values, degree, device=None):
    device = pick_device() if device is None else torch.device(device)
    x = torch.as_tensor(values, dtype=torch.float32, device=device)
    out = torch.empty(len(values), degree + 1, dtype=torch.float32, device=device)
    out[:, 0] = 1.0
    for k in range(1, degree + 1):
        out[:, k] = out[:, k - 1] * x
    return out
