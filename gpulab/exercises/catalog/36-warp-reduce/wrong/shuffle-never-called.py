# expect: has no warp shuffle
"""A shortcut (a property faked in the source): a warp-shuffle helper sits in the file, never
called, beside a kernel in which every thread adds its elements with an atomicAdd of its own.
The source names __shfl_down_sync; the compiled kernel holds no shuffle instruction."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256
#define FULL 0xffffffffu

__device__ float warp_total(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(FULL, v, offset);
    return v;
}

extern "C" __global__ void warp_sum(const float* x, float* out, long long n) {
    float v = 0.0f;
    long long stride = (long long)BLOCK * gridDim.x;
    for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < n; i += stride) v += x[i];
    atomicAdd(out, v);
}
"""

_kernel = cp.RawKernel(SOURCE, "warp_sum")


def warp_sum(x, out):
    n = x.size
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(8 * sms, (n + 255) // 256))
    out.fill(0)
    _kernel((blocks,), (256,), (x, out, np.int64(n)))
