# expect: ran inside your call
# family: library
"""Shortcut (a half-and-half decoy): the learner's kernel adds 10 to the even elements, and CuPy's add does the odd ones through strided views (out[1::2])."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void add_ten(const float* a, float* out, int n) {
    int i = 2 * (blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n) out[i] = a[i] + 10.0f;
}
"""
_kernel = cp.RawKernel(SOURCE, "add_ten")


def add_ten(a, out):
    n = a.size
    half = (n + 1) // 2
    _kernel(((half + 255) // 256,), (256,), (a, out, np.int32(n)))
    cp.add(a[1::2], 10, out=out[1::2])
