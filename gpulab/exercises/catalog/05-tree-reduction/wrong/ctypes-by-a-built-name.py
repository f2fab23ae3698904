# expect: ctypes.cdata
# family: escape
"""Cheat: ctypes and the tensor's C struct reached by names built at run time (the source scan
reads identifiers only): at import the offsets from a probe tensor's TensorImpl to its storage and
from there to its data pointer are found with from_address; each call follows them for x, wraps
the floats in a ctypes array and sums them with NumPy (gold, no tree, no operator dispatched).
Python's audit events see ctypes' reads by address however the module was reached."""

import importlib

import numpy as np
import torch

_ct = importlib.import_module("c" + "types")
_CD = "_c" + "data"
_FA = "from_" + "address"
_probe = torch.arange(64, dtype=torch.float32)
_want = _probe.data_ptr()
_impl = getattr(_probe, _CD)
_chain = None
for a in (16, 8, 24):
    p = getattr(_ct.c_uint64, _FA)(_impl + a).value
    if p < 1 << 20 or p % 8:
        continue
    for b in (16, 24, 8):
        if getattr(_ct.c_uint64, _FA)(p + b).value == _want:
            _chain = (a, b)
            break
    if _chain:
        break


def tree_sum(x):
    a, b = _chain
    impl = getattr(x, _CD)
    storage = getattr(_ct.c_uint64, _FA)(impl + a).value
    base = getattr(_ct.c_uint64, _FA)(storage + b).value
    buf = getattr(_ct.c_float * x.numel(), _FA)(base + x.storage_offset() * 4)
    return float(getattr(np, "from" + "buffer")(buf, dtype=np.float32).sum(dtype=np.float64))
