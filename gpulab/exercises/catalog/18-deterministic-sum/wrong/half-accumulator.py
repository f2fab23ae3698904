# expect: allowed: 1e-05 of sum|x|
# family: mistake
"""Wrong: each thread's running sum is a float16. Deterministic, but float16 keeps 11 bits:
every addition rounds to about 3 decimal digits, and the total is off by far more than float32's."""

import cupy as cp
import numpy as np

SOURCE = r"""
#include <cuda_fp16.h>
#define BLOCK 256
#define FULL 0xffffffffu

extern "C" __global__ void block_sums(const float* x, float* partial, long long n) {
    __shared__ float warp_totals[BLOCK / 32];
    int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    __half acc = __float2half(0.0f);  // half the bytes of a float: but 11 bits of precision
    long long stride = (long long)BLOCK * gridDim.x;
    for (long long i = (long long)blockIdx.x * BLOCK + t; i < n; i += stride)
        acc = __hadd(acc, __float2half(x[i]));
    float v = __half2float(acc);
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(FULL, v, offset);
    if (lane == 0) warp_totals[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < BLOCK / 32 ? warp_totals[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(FULL, v, offset);
        if (lane == 0) partial[blockIdx.x] = v;  // a fixed slot per block
    }
}
"""

_kernel = cp.RawModule(code=SOURCE).get_function("block_sums")


def det_sum(x, out):
    n = x.size
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(8 * sms, (n + 255) // 256))
    partial = cp.empty(blocks, dtype=cp.float32)
    _kernel((blocks,), (256,), (x, partial, np.int64(n)))
    _kernel((1,), (256,), (partial, out, np.int64(blocks)))  # one block, always the same order
