# expect: values made on the host
# family: escape
"""Shortcut (the move no mode sees): every column is computed by NumPy on the host, the table
turned into a Python list and handed to torch.tensor(..., device=device). torch builds a tensor
from a list in C++ with its dispatch modes excluded, and the watch only looked for a CPU
*tensor* moved, so the host-made table passed as made on the device. Before the fix: pass on
every case, the meta one included. Now host-made data of more than 16 elements in a call (the
exponents and the values handed in aside) is a move."""

import numpy as np
import torch


def pick_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def features(values, degree, device=None):
    device = pick_device() if device is None else torch.device(device)
    host = np.stack([values.astype(np.float64) ** k for k in range(degree + 1)], axis=1)
    return torch.tensor(host.tolist(), dtype=torch.float32, device=device)
