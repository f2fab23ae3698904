"""Dot product: out[0] = sum(a * b), a shared-memory tree and one atomicAdd per block."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void dot(const float* a, const float* b, float* out, long long n) {
    __shared__ float sm[BLOCK];
    int t = threadIdx.x;
    // TODO: grid-stride partial sum, tree in sm, atomicAdd(out, sm[0]) from thread 0
}
"""

_kernel = cp.RawKernel(SOURCE, "dot")


def dot(a, b, out):
    n = a.size
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(8 * sms, (n + 255) // 256))
    # TODO: out holds NaN on arrival
    _kernel((blocks,), (256,), (a, b, out, np.int64(n)))
