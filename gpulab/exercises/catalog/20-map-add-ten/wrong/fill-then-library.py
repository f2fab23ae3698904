# expect: ran inside your call
# family: library
"""Shortcut (allocation as cover): out filled with 10 (a fill is free), a kernel of the learner's that touches nothing, then the library adds a in place (out += a)."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void add_ten(const float* a, float* out, int n) { }
"""
_kernel = cp.RawKernel(SOURCE, "add_ten")


def add_ten(a, out):
    out.fill(10.0)
    _kernel((1,), (32,), (a, out, np.int32(a.size)))
    out += a
