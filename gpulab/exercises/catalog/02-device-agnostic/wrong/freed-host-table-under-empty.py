# expect: on the meta device the table your operators built is not the features
# family: loose-property
"""Shortcut (the meta stand-in's twin fed from freed memory): the table is computed by NumPy and
a torch copy of it is made and freed just before an empty tensor of its shape is made on the
device asked for. Where the check follows the meta device with CPU twins, the twin of that
empty tensor was handed the freed block by the CPU allocator and held 492 of the 500 values
right; a GPU's memory would hold nothing of the host's. Twins of empty tensors are now NaN."""

import numpy as np
import torch


def pick_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def features(values, degree, device=None):
    device = pick_device() if device is None else torch.device(device)
    table = np.stack([values.astype(np.float64) ** k for k in range(degree + 1)], axis=1)
    host = torch.from_numpy(table.astype(np.float32))
    if device.type == "cpu":
        return host
    bait = host.clone()
    del bait
    return torch.empty(table.shape, dtype=torch.float32, device=device)
