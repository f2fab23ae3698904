# rung: sequential addressing: at each level the first s threads add sdata[t + s], so whole warps fall idle together (a warp diverges only once fewer than 32 threads add) and no % is computed
"""Rung 2: the same chunked tree (Harris's reduction #3, sequential addressing). The stride
halves from 128 to 1 and thread t < s adds sdata[t + s]: the active threads are contiguous, so
at a level of 128 active threads four warps work and four skip the level whole, and the
neighbouring addresses of a warp fall in 32 different banks. Each chunk still waits for its
load and 9 barriers, one chunk of 256 at a time."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define THREADS 256

extern "C" __global__ void row_norms(const float* x, float* out, int cols) {
    __shared__ float sdata[THREADS];
    unsigned int t = threadIdx.x;
    const float* row = x + (long long)blockIdx.x * cols;
    float total = 0.0f;
    for (int c0 = 0; c0 < cols; c0 += blockDim.x) {
        float v = c0 + t < cols ? row[c0 + t] : 0.0f;
        sdata[t] = v * v;
        __syncthreads();
        for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (t < s) sdata[t] += sdata[t + s];
            __syncthreads();
        }
        if (t == 0) total += sdata[0];
    }
    if (t == 0) out[blockIdx.x] = sqrtf(total);
}
"""

_kernel = cp.RawKernel(SOURCE, "row_norms")


def row_norms(x, out):
    rows, cols = x.shape
    _kernel((rows,), (256,), (x, out, np.int32(cols)))
