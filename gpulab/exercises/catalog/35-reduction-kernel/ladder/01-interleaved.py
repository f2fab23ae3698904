# rung: one block per row sums it 256 elements at a time in a shared-memory tree where thread t adds when t % (2 * s) == 0, so the working lanes are scattered over the warps (divergent) and % by a run-time value is slow
"""Rung 1: the first tree a person writes (Mark Harris's reduction #1, interleaved addressing).
One block of 256 threads per row; the row goes through the tree one chunk of 256 squares at a
time, thread 0 keeping the running total. The active threads of a level are 2 * s apart: in
the first five levels every warp runs the level for 16, 8, 4, 2, then 1 of its lanes, and `%`
by a value known only at run time is a long instruction sequence. Every chunk waits for its
load and then for 9 barriers."""

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
        for (unsigned int s = 1; s < blockDim.x; s *= 2) {
            if (t % (2 * s) == 0) sdata[t] += sdata[t + s];
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
