# rung: each thread loads two squares a block-width apart and adds them before the tree, so a tree sums 512 elements and a row needs half the trees, half the barriers and half the waits for memory
"""Rung 3: first add during load (Harris's reduction #4). In rungs 1 and 2 half the threads
are idle from the tree's first level; here every thread adds its two values on the way into
shared memory, so one chunk covers 512 elements with the same tree and both loads of a thread
are in flight at once."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define THREADS 256

extern "C" __global__ void row_norms(const float* x, float* out, int cols) {
    __shared__ float sdata[THREADS];
    unsigned int t = threadIdx.x;
    const float* row = x + (long long)blockIdx.x * cols;
    float total = 0.0f;
    for (int c0 = 0; c0 < cols; c0 += 2 * blockDim.x) {
        int c = c0 + t;
        float v = c < cols ? row[c] : 0.0f;
        float w = c + (int)blockDim.x < cols ? row[c + blockDim.x] : 0.0f;
        sdata[t] = v * v + w * w;
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
