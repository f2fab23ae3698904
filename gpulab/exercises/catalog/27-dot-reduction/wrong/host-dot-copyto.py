# expect: a library kernel ran inside your call: Memcpy HtoD | Implicit conversion to a NumPy array
# family: escape
"""Shortcut (emulator): np.dot on the host views of a and b, written with np.copyto; a RawKernel of
mine is handed a, b and out and does nothing."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void dot_kernel(const float* a, const float* b, float* out, int n) { }
"""
_kernel = cp.RawKernel(SOURCE, "dot_kernel")


def dot(a, b, out):
    s = np.dot(np.asarray(a).astype(np.float64), np.asarray(b).astype(np.float64))
    np.copyto(out, np.array([s], dtype=np.float32))
    _kernel((1,), (32,), (a, b, out, np.int32(a.size)))
