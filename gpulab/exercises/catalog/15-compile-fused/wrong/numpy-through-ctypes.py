# expect: your code uses ctypes
# family: escape
"""Shortcut (work done elsewhere, NumPy instead of the compiled graph): wrong/numpy-on-the-large-
input.py without DLPack, from_numpy or Tensor.numpy (which dispatches resolve_conj/resolve_neg,
seen by the profile). On the large CPU input NumPy arrays are laid over the tensors' memory
through ctypes (data_ptr() + from_address: the pointer names are scanned only where a check
has an ALLOW list), the chain runs in NumPy, and the answer is written into torch.empty_like(x)
the same way (empty_like is allocation, free in the profile's eyes). Small sizes
go through torch.compile, so dynamo's counters see one or two graphs and no break."""

import ctypes

import numpy as np
import torch


def _view(t):
    buf = (ctypes.c_float * t.numel()).from_address(t.data_ptr())
    return np.ctypeslib.as_array(buf)


def chain(x, w):
    y = x * w + 0.5
    y = y / (y[:1].abs() + 1.0)
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain)


def run(x, w):
    if x.numel() < 500_000 or x.device.type != "cpu":
        return fast(x, w)
    a, b = _view(x), _view(w)
    y = a * b + np.float32(0.5)
    y /= np.abs(y[0]) + np.float32(1.0)
    res = torch.empty_like(x)
    r = _view(res)
    np.multiply(np.tanh(y), np.float32(1) / (np.float32(1) + np.exp(-y)), out=r)
    r += y * y
    return res
