# why: two passes of one RawModule kernel, no atomics: per-block sums, then one block sums those (the same order every run, so the same bits every run)
"""Sum in two passes: the same kernel reduces x to one value per block, then those to one."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256
#define FULL 0xffffffffu

extern "C" __global__ void block_sums(const float* x, float* partial, long long n) {
    __shared__ float warp_totals[BLOCK / 32];
    int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    float v = 0.0f;
    long long stride = (long long)BLOCK * gridDim.x;
    for (long long i = (long long)blockIdx.x * BLOCK + t; i < n; i += stride) v += x[i];
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(FULL, v, offset);
    if (lane == 0) warp_totals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < BLOCK / 32 ? warp_totals[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(FULL, v, offset);
        if (lane == 0) partial[blockIdx.x] = v;
    }
}
"""

_module = cp.RawModule(code=SOURCE)
_kernel = _module.get_function("block_sums")


def warp_sum(x, out):
    n = x.size
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(4 * sms, (n + 255) // 256))
    partial = cp.empty(blocks, dtype=cp.float32)
    _kernel((blocks,), (256,), (x, partial, np.int64(n)))  # pass 1: one sum per block
    _kernel((1,), (256,), (partial, out, np.int64(blocks)))  # pass 2: one block sums those
