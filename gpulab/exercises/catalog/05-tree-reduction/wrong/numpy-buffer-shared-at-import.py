# expect: while your file loads makes a tensor and NumPy
# family: escape
"""Shortcut (NumPy's memory shared at import): torch.from_numpy(buffer) at import, before any
call is watched; each call copies x into that tensor (copy_ is allowed) and NumPy sums the
buffer, which is the same memory. Before the fix: pass, gold, no tree (red team, on the CPU)."""

import numpy as np
import torch

_np = np.zeros(1 << 25, dtype=np.float32)
_t = torch.from_numpy(_np)


def tree_sum(x):
    x = x.reshape(-1)
    n = x.numel()
    _t[:n].copy_(x)
    return float(np.sum(_np[:n], dtype=np.float64))
