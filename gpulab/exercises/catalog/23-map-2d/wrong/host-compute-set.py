# expect: Memcpy DtoH
# family: escape
"""Shortcut (work done elsewhere): NumPy does the map on a host copy of a, the answer is
copied into out, beside a kernel of the learner's that touches one element. Both copies are
inside the call, where the trace sees them: the library may allocate there, not move data."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void add_row_index(const float* a, float* out, int rows, int cols) {
    if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = a[0];
}
"""
_kernel = cp.RawKernel(SOURCE, "add_row_index")


def add_row_index(a, out):
    rows, cols = a.shape
    host = cp.asnumpy(a)
    host += np.arange(rows, dtype=np.float32)[:, None]
    out[...] = cp.asarray(host)
    _kernel((1,), (32,), (a, out, np.int32(rows), np.int32(cols)))
