# expect: touched shared memory | uses no shared memory | shares
# family: property-proxy
# emulator-only: on a GPU the compiled code shows a shared value read by other threads, and the counts of shared accesses that would tell a tile from one index need Nsight Compute
"""transpose with no tile: thread 0 puts cols in shared memory, every thread reads it, then a direct global transpose."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void tr(const float* a, float* out, int rows, int cols) {
    __shared__ int dims[1];
    if (threadIdx.x == 0 && threadIdx.y == 0) dims[0] = cols;
    __syncthreads();
    int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
    int C = dims[0];
    if (r < rows && c < C) out[c * rows + r] = a[r * C + c];
}""",
    "tr",
)


def transpose(a, out):
    rows, cols = a.shape
    _k(((cols + 31) // 32, (rows + 7) // 8), (32, 8), (a, out, np.int32(rows), np.int32(cols)))
