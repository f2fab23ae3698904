# expect: built on the CPU and then moved
# family: escape
"""Shortcut (the table built on the host, moved by another library): NumPy computes the whole
table, CuPy copies it to the GPU (cupy.asarray) and torch.from_dlpack wraps CuPy's memory, so
no torch operator or function ever held a CPU tensor bound for the device. Before the fix, on
a GPU: pass, by reading the check's code (DLPack's import runs no operator for its dispatch
mode, and from_dlpack is no torch function its function mode sees). The check now records
every torch._C._from_dlpack (where every from_dlpack ends) whose tensor lies on the device
asked for, as a move. GPU path only, argued from the code: without a GPU the meta case has no
DLPack, and this file's .to(device) there is named as the move it is."""

import numpy as np
import torch


def pick_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def features(values, degree, device=None):
    device = pick_device() if device is None else torch.device(device)
    table = np.asarray(values, dtype=np.float64)[:, None] ** np.arange(degree + 1)
    table = table.astype(np.float32)
    if device.type == "cuda":
        import cupy

        return torch.from_dlpack(cupy.asarray(table))
    return torch.from_numpy(table).to(device)
