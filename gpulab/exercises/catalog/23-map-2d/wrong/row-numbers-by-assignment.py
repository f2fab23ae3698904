# expect: filled arrays with a scalar
# family: library
"""Shortcut (the row term written by allocation, by another spelling): wrong/row-numbers-by-
fills.py with each row's number assigned (`out[r] = r`) instead of `out[r].fill(r)`. On a GPU
CuPy runs the assignment as the same fill, which the trace counts; the emulator's fake recorded
fill() but not a scalar assigned through `__setitem__`, so the file passed there. The fake now
records a scalar assigned as a fill and a list assigned as a copy from the host."""

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
        out[r] = r
    n = a.size
    _k(((n + 255) // 256,), (256,), (a, out, np.int32(n)))
