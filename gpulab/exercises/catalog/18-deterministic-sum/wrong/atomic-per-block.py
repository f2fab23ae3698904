# expect: same bits every run
# family: mistake
"""Wrong here: one atomicAdd per block. Fast and accurate, but the blocks' sums are added in
the order the blocks finish, which changes from run to run, and so do the last bits."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256
#define FULL 0xffffffffu

extern "C" __global__ void atomic_sum(const float* x, float* out, long long n) {
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
        if (lane == 0) atomicAdd(out, v);  // blocks finish in any order: so do these adds
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "atomic_sum")


def det_sum(x, out):
    n = x.size
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(8 * sms, (n + 255) // 256))
    out.fill(0)
    _kernel((blocks,), (256,), (x, out, np.int64(n)))
