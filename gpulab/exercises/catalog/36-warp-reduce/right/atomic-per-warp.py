# why: no shared memory at all: each warp's lane 0 adds its total to out with atomicAdd (8 atomics per block instead of 1)
"""Sum with shuffles and one atomicAdd per warp: no shared memory, no barrier."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256
#define FULL 0xffffffffu

extern "C" __global__ void warp_sum(const float* x, float* out, long long n) {
    float v = 0.0f;
    long long stride = (long long)BLOCK * gridDim.x;
    for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < n; i += stride) v += x[i];
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(FULL, v, offset);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}
"""

_kernel = cp.RawKernel(SOURCE, "warp_sum")


def warp_sum(x, out):
    n = x.size
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(8 * sms, (n + 255) // 256))
    out.fill(0)
    _kernel((blocks,), (256,), (x, out, np.int64(n)))
