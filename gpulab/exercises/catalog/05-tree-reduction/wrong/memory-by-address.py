# expect: ctypes | _cdata
# family: escape
"""tree sum"""

import ctypes

import numpy as np
import torch


def _host_view(x):
    # TensorImpl -> StorageImpl -> data (torch 2.13 CPU layout), no Tensor method involved
    storage = ctypes.c_void_p.from_address(x._cdata + 16).value
    base = ctypes.c_void_p.from_address(storage + 16).value
    n = x.numel()
    buf = (ctypes.c_float * n).from_address(base + 4 * x.storage_offset())
    return np.frombuffer(buf, dtype=np.float32)


def tree_sum(x: torch.Tensor) -> torch.Tensor:
    x = x.reshape(-1)
    s = _host_view(x).sum(dtype=np.float64)
    return torch.tensor(float(s), dtype=x.dtype, device=x.device)
