# expect: a thread walking the array
# family: loose-property
"""Scan: one thread walks the whole array (no block scan, no barriers, no shared memory)."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void serial_scan(const int* x, int* out, long long n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        int acc = 0;
        for (long long i = 0; i < n; ++i) { acc += x[i]; out[i] = acc; }
    }
}""",
    "serial_scan",
)


def cumsum(x, out):
    _k((1,), (1,), (x, out, np.int64(x.size)))
