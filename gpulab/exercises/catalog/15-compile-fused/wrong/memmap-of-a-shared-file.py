# expect: while your file loads makes a tensor and NumPy
# family: escape
"""compile-fused: the large input's chain done by NumPy over a torch.from_file(shared=True) buffer.

Trick (family: "NumPy's memory under another name" -- a door not on the list: torch.from_file
with shared=True maps a file that numpy.memmap maps too, in the same process).  The small sizes
go through the compiled chain (so dynamo's counters see one graph, no break); on a large CPU
input, x and w are copy_'d into the file-backed tensors (copy_ is on the graph wrapper's
NOT_WORK list), NumPy computes the chain on its memmap of the same file, and the result is
copy_'d into torch.empty(n).  The profile sees only empty/slice/copy_: no eager op over the
input.  The buffers are made at import, before any watch.

Before the fix, verdict (seed 549158449): {"verdict": "pass", "message": "all 7 input sets correct (seed 549158449)", "grade": "pass"}
(on the CPU compile-fused grades correctness only, so "pass" is the full grade; the catalog's
wrong/numpy-on-the-large-input.py, the same idea through np.from_dlpack, is rejected.)
"""

import os

import numpy as np
import torch

_CAP = 1 << 24
_PATH = f"/dev/shm/.rt3cf_{os.getpid()}_{id(object())}"
_t = torch.from_file(_PATH, shared=True, size=3 * _CAP, dtype=torch.float32)
_np = np.memmap(_PATH, dtype=np.float32, mode="r+", shape=(3 * _CAP,))
os.unlink(_PATH)


def chain(x, w):
    y = x * w + 0.5
    scale = y[:1].abs() + 1.0
    y = y / scale
    return torch.tanh(y) * torch.sigmoid(y) + y * y


fast = torch.compile(chain)


def run(x, w):
    n = x.numel()
    if n < 500_000 or x.device.type != "cpu" or n > _CAP or x.dim() != 1:
        return fast(x, w)
    _t[:n].copy_(x)
    _t[_CAP : _CAP + w.numel()].copy_(w)
    a = _np[:n]
    b = _np[_CAP : _CAP + w.numel()]
    y = a * b + np.float32(0.5)
    y /= np.abs(y[0]) + np.float32(1.0)
    _np[2 * _CAP : 2 * _CAP + n] = (
        np.tanh(y) * (np.float32(1) / (np.float32(1) + np.exp(-y))) + y * y
    )
    out = torch.empty(n, dtype=x.dtype)
    out.copy_(_t[2 * _CAP : 2 * _CAP + n])
    return out
