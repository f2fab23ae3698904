# why: a RawKernel where each warp owns a row (8 rows a block of 256), lanes stride along it and __shfl_xor_sync folds the 32 partial sums; no shared memory
"""Row norms with one warp a row: a butterfly of shuffles leaves the row's sum in every lane."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void row_norms_warp(const float* x, float* out, int rows, int cols) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (warp >= rows) return;  // a whole warp leaves together: the shuffles below see all 32
    const float* row = x + (long long)warp * cols;
    float acc = 0.0f;
    for (int c = lane; c < cols; c += 32) acc += row[c] * row[c];
    for (int m = 16; m > 0; m >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, m);
    if (lane == 0) out[warp] = sqrtf(acc);
}
"""

_kernel = cp.RawKernel(SOURCE, "row_norms_warp")


def row_norms(x, out):
    rows, cols = x.shape
    _kernel(((rows + 7) // 8,), (256,), (x, out, np.int32(rows), np.int32(cols)))
