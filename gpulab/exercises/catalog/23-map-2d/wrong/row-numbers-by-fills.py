# expect: filled arrays with a scalar
# family: library
"""Shortcut (the row term written by allocation): each row of out is filled with its row number
(`out[r].fill(r)`, one CuPy fill a row), then a flat 1-D kernel of the learner's adds `a`. The
kernel never finds a row: the fills, which the trace counted as allocation, wrote the part of
the answer this exercise is about. Before the fix: pass (on the emulator, and on a GPU's checked
calls: a nonzero fill is CuPy's copy from a Python number, allowed as allocation). The trace now
allows a few fills a call, not one a row ("filled arrays with a scalar")."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void add_in(const float* a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] += a[i];
}""",
    "add_in",
)


def add_row_index(a, out):
    rows = a.shape[0]
    for r in range(rows):
        out[r].fill(r)
    n = a.size
    _k(((n + 255) // 256,), (256,), (a, out, np.int32(n)))
