# expect: a thread walking the array
# family: loose-property
"""histogram: one thread counts everything, no atomics, no shared bins."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void h(const int* x, int* hist, long long n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        for (int b = 0; b < 256; ++b) hist[b] = 0;
        for (long long i = 0; i < n; ++i) hist[x[i]] += 1;
    }
}""",
    "h",
)


def histogram(x, hist):
    _k((1,), (1,), (x, hist, np.int64(x.size)))
