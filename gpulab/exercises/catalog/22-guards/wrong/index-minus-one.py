# expect: wrote before the start
# family: mistake
"""Wrong: counts elements from 1, as in a maths text: thread 0 of block 0 gets i = -1, which the
guard `i < n` lets through, so it writes before the start of out (and the last element is never
written)."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void leaky_relu(const float* a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x - 1;  // "element 1 is the first"
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
    blocks = (n + threads - 1) // threads
    _kernel((blocks,), (threads,), (a, out, np.int32(n)))
