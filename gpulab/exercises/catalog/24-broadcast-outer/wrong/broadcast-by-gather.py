# expect: a library kernel ran inside your call
# family: library
"""Shortcut (the broadcast left to the library): `col[flat // cols]` and `row[flat % cols]`, two
gathers by NumPy's fancy indexing with a host index array, build col[r] and row[c] for every
element, and the learner's kernel only adds two flat arrays: the 2-D indexing this exercise
teaches is never written. On a GPU CuPy copies the index over and gathers with its own kernel,
which the trace names; the emulator's fake recorded a plain index but not an index array, so
the file passed there. The fake now records an index array as CuPy's gather (and a host one as
a copy from the host first)."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void add_flat(const float* a, const float* b, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}""",
    "add_flat",
)


def outer_add(col, row, out):
    rows, cols = out.shape
    n = rows * cols
    flat = np.arange(n)
    a = col[flat // cols]  # col[r] for every element
    b = row[flat % cols]  # row[c] for every element
    _k(((n + 255) // 256,), (256,), (a, b, out, np.int64(n)))
