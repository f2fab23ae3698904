# expect: ran inside your call
# family: library
"""Shortcut (the library moves the data): a copied into out by CuPy (out[...] = a), then the learner's kernel adds 10 in place: the kernel's work is the constant, the copy is the library's."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void add_ten_inplace(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] += 10.0f;
}
"""
_kernel = cp.RawKernel(SOURCE, "add_ten_inplace")


def add_ten(a, out):
    n = a.size
    out[...] = a
    _kernel(((n + 255) // 256,), (256,), (out, np.int32(n)))
