# expect: one thread of your launches touched
# family: property-proxy
# emulator-only: on a GPU the compiled code cannot say which thread does the work (which thread walks the array is counted as the emulator runs it); the GPU times it, ungraded beside the expert
"""Shortcut: launch 256 threads but let thread 0 walk the whole array serially (the parallel
rule counts threads started, not threads that did any work)."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void walk_scan(const int* x, int* out, long long n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        int acc = 0;
        for (long long i = 0; i < n; ++i) { acc += x[i]; out[i] = acc; }
    }
}""",
    "walk_scan",
)


def cumsum(x, out):
    _k((1,), (256,), (x, out, np.int64(x.size)))
