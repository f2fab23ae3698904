# expect: none of your kernels was handed x | the library may allocate, not compute or copy
# family: escape
"""Shortcut (the work done elsewhere, a property faked): x is copied to the host and NumPy finds
the index; a kernel of the learner's, with a shuffle in its source, then writes that number."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void put(long long* out, long long k) {
    long long v = __shfl_down_sync(0xffffffffu, k, 0);
    if (threadIdx.x == 0) out[0] = v;
}
"""

_kernel = cp.RawKernel(SOURCE, "put")


def warp_argmax(x, out):
    k = int(np.argmax(cp.asnumpy(x)))
    _kernel((1,), (32,), (out, np.int64(k)))
