# expect: a library kernel ran inside your call: Memcpy HtoD | Implicit conversion to a NumPy array
# family: escape
"""Shortcut: NumPy adds 10 on the host view of the (emulated) device array; np.copyto writes it; a
kernel of mine, handed a and out, runs and does nothing."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void add_ten(const float* a, float* out, int n) { }
"""
_kernel = cp.RawKernel(SOURCE, "add_ten")


def add_ten(a, out):
    np.copyto(out, np.asarray(a) + np.float32(10))
    _kernel((1,), (1,), (a, out, np.int32(a.size)))
