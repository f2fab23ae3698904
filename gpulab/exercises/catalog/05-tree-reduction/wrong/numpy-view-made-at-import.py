# expect: while your file loads makes a tensor and NumPy
# family: escape
"""Shortcut (NumPy's memory shared at import, the other way): a torch buffer made at import and
a NumPy view of it (Tensor.numpy(), no copy); each call copies x into the buffer and NumPy sums
the view."""

import numpy as np
import torch

_t = torch.zeros(1 << 25)
_np = _t.numpy()


def tree_sum(x):
    x = x.reshape(-1)
    n = x.numel()
    if x.device.type != "cpu":
        x = x.cpu()
    _t[:n].copy_(x)
    return float(np.sum(_np[:n], dtype=np.float64))
