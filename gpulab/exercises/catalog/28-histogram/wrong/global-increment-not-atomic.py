# expect: wrong | race
# family: mistake
# gpu-only: the CPU emulator runs each thread alone between barriers and blocks one after another, so no increment is lost there
"""Histogram with a plain `hist[v] += 1` in global memory: a read-modify-write that thousands of
threads make on the same 256 counters at once. On a GPU most increments are lost (95% of one
input's values are 7); the emulator never interleaves two threads' increments."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void histogram(const int* x, int* hist, long long n) {
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        hist[x[i]] += 1;  // not atomic
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "histogram")


def histogram(x, hist):
    n = x.size
    blocks = max(1, min(1024, (n + 255) // 256))
    hist.fill(0)
    _kernel((blocks,), (256,), (x, hist, np.int64(n)))
