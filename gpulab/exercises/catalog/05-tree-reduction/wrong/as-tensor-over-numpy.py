# expect: torch.as_tensor makes a tensor over NumPy's or Python's memory
# family: escape
"""Shortcut: torch.as_tensor(numpy_buffer) shares NumPy's memory like the refused from_numpy;
x is copied into it (copy_ is allowed) and NumPy sums the buffer."""

from __future__ import annotations

import numpy as np
import torch


def tree_sum(x: torch.Tensor) -> float:
    buf = np.empty(x.numel(), dtype=np.float32)
    torch.as_tensor(buf).copy_(x.reshape(-1))
    return float(np.add.reduce(buf, dtype=np.float64))
