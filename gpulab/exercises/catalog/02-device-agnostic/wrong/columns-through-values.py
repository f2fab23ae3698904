# expect: a tensor was built on the CPU and then moved
# family: loose-property
"""Cheat: builds every column on the host with NumPy and moves it to the device, each through
the caller's own `values` buffer (overwritten with the column, moved with torch.as_tensor, put
back at the end), as if moving the values handed in, which the check allows."""

import numpy as np
import torch


def pick_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def features(values, degree, device=None):
    device = pick_device() if device is None else torch.device(device)
    keep = values.copy()
    cols = []
    try:
        for k in range(degree + 1):
            values[:] = (keep.astype(np.float64) ** k).astype(np.float32)  # built on the host
            cols.append(torch.as_tensor(values, dtype=torch.float32, device=device).clone())
    finally:
        values[:] = keep
    return torch.stack(cols, dim=1)
