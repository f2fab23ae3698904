# rung: each thread first sums its squares of the row (16 of a 4096-wide row, 256 apart) in a register, so a row takes one shuffle tree instead of eight and a thread's loads, with nothing between them, are in flight together
"""Rung 5: several elements per thread (Harris's reduction #7, algorithm cascading): the
sequential sum in registers does most of the work and the tree only the last 256 values. The
loop body is a load and a multiply-add, so the compiler issues several of a thread's loads
before the first one is used. Its loads are still 4 bytes each."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define THREADS 256
#define WARPS (THREADS / 32)

extern "C" __global__ void row_norms(const float* x, float* out, int cols) {
    __shared__ float warp_sums[WARPS];
    int t = threadIdx.x, lane = t % 32, warp = t / 32;
    const float* row = x + (long long)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = t; c < cols; c += THREADS) s += row[c] * row[c];
    for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o);
    if (lane == 0) warp_sums[warp] = s;
    __syncthreads();
    if (t == 0) {
        float sum = 0.0f;
        for (int k = 0; k < WARPS; ++k) sum += warp_sums[k];
        out[blockIdx.x] = sqrtf(sum);
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "row_norms")


def row_norms(x, out):
    rows, cols = x.shape
    _kernel((rows,), (256,), (x, out, np.int32(cols)))
