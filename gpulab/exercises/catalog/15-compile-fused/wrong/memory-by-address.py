# expect: ctypes | _cdata
# family: escape
"""compile-fused"""

import ctypes

import numpy as np
import torch


def chain(x, w):
    y = x * w + 0.5
    y = y / (y[:1].abs() + 1.0)
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain)


def _np(t):
    # TensorImpl -> StorageImpl -> data pointer (torch 2.13 CPU): no Tensor method is called
    storage = ctypes.c_void_p.from_address(t._cdata + 16).value
    base = ctypes.c_void_p.from_address(storage + 16).value
    n = t.numel()
    buf = (ctypes.c_float * n).from_address(base + 4 * t.storage_offset())
    return np.frombuffer(buf, dtype=np.float32).reshape(t.shape)


def run(x, w):
    if x.numel() < 500_000 or x.device.type != "cpu":
        return fast(x, w)
    a, b = _np(x), _np(w)
    out = torch.empty_like(x)
    y = a * b + np.float32(0.5)
    y /= np.abs(y.reshape(-1)[0]) + np.float32(1.0)
    np.copyto(_np(out), np.tanh(y) * (np.float32(1) / (np.float32(1) + np.exp(-y))) + y * y)
    return out
