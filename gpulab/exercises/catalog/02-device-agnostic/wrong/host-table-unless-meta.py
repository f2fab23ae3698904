# expect: on the meta device the table your operators built is not the features
# family: loose-property
"""Shortcut (the meta stand-in told from a device): the whole table is computed by NumPy on the
host; a tensor of its shape is made on the device asked for, and the table is copied in only
where that device is the CPU, where copying is no move. On a CPU-only machine the meta device
stands in for a GPU, and before the fix it was checked for its shape only (meta holds no data),
so this passed every case; on a GPU it returns garbage. Now the check follows every operator on
the meta device with a twin on the CPU and compares the twin of the result: an empty tensor's
twin is NaN (a fresh CPU block could hold a table just freed), so nothing was computed there."""

import numpy as np
import torch


def pick_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def features(values, degree, device=None):
    device = pick_device() if device is None else torch.device(device)
    table = np.stack([values.astype(np.float64) ** k for k in range(degree + 1)], axis=1)
    out = torch.empty(table.shape, dtype=torch.float32, device=device)
    if out.device.type == "cpu":
        out.copy_(torch.from_numpy(table))
    return out
