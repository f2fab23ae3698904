"""Guards: a leaky ReLU over any length, out[i] = a[i] if a[i] > 0 else 0.01 * a[i]."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void leaky_relu(const float* a, float* out, int n) {
    // TODO: the index, the guard, then out[i] = a[i] > 0 ? a[i] : 0.01f * a[i]
}
"""

_kernel = cp.RawKernel(SOURCE, "leaky_relu")


def leaky_relu(a, out):
    n = a.size
    threads = 256
    blocks = 1  # TODO: enough blocks of `threads` to cover all n elements
    _kernel((blocks,), (threads,), (a, out, np.int32(n)))
