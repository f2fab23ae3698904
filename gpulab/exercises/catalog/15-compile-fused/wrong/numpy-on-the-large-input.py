# expect: DLPack
# family: escape
# cpu-only: on a GPU the inputs are CUDA tensors and this file runs the compiled chain, correct
"""The compiled chain on the small sizes (one or two graphs, no break); on a large CPU input the
chain runs in NumPy on np.from_dlpack(x): NumPy's passes dispatch no aten operator, so a profile
of the large call sees nothing outside the compiled graph."""

import numpy as np
import torch


def chain(x, w):
    y = x * w + 0.5
    y = y / (y[:1].abs() + 1.0)
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain)


def run(x, w):
    if x.numel() < 500_000 or x.device.type != "cpu":
        return fast(x, w)
    a, b = np.from_dlpack(x), np.from_dlpack(w)
    y = a * b + np.float32(0.5)
    y /= np.abs(y[0]) + np.float32(1.0)
    out = np.tanh(y) * (np.float32(1) / (np.float32(1) + np.exp(-y))) + y * y
    return torch.from_numpy(out)
