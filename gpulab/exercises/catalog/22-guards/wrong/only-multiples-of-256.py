# expect: never written
# family: mistake
"""Guards: a leaky ReLU over any length, out[i] = a[i] if a[i] > 0 else 0.01 * a[i]."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void leaky_relu(const float* a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = a[i];
        out[i] = x > 0.0f ? x : 0.01f * x;
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "leaky_relu")


def leaky_relu(a, out):
    n = a.size
    threads = 256
    blocks = max(1, n // threads)  # rounds down: right only when n is a multiple of 256
    _kernel((blocks,), (threads,), (a, out, np.int32(n)))
