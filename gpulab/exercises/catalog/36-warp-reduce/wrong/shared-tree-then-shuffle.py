# expect: a float per thread or more
"""Wrong here: the block's tree in shared memory (a float per thread), shuffles only for the
last 32 values. Right sums, but the shuffles are not doing the reduction."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256
#define FULL 0xffffffffu

extern "C" __global__ void warp_sum(const float* x, float* out, long long n) {
    __shared__ float sm[BLOCK];
    int t = threadIdx.x;
    float v = 0.0f;
    long long stride = (long long)BLOCK * gridDim.x;
    for (long long i = (long long)blockIdx.x * BLOCK + t; i < n; i += stride) v += x[i];
    sm[t] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s >= 32; s >>= 1) {  // the tree in shared memory down to 32 values
        if (t < s) sm[t] += sm[t + s];
        __syncthreads();
    }
    if (t < 32) {
        v = sm[t];
        for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(FULL, v, offset);
        if (t == 0) atomicAdd(out, v);
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "warp_sum")


def warp_sum(x, out):
    n = x.size
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(8 * sms, (n + 255) // 256))
    out.fill(0)
    _kernel((blocks,), (256,), (x, out, np.int64(n)))
