# expect: your kernel uses no shared memory | tile | another thread
# family: property-proxy
"""Shortcut (a property faked, with a value that flows): the naive transpose, each thread passing
its element through its own slot of a __shared__ array on the way (stored, read back by the same
thread). Shared memory is touched and its value reaches out, but no thread reads what another
stored, so the writes stay strided: the tile that turns them into coalesced rows is the exercise."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void transpose(const float* a, float* out, int rows, int cols) {
    __shared__ float slot[32][33];
    int c = blockIdx.x * 32 + threadIdx.x;
    for (int k = 0; k < 32; k += 8) {
        int r = blockIdx.y * 32 + threadIdx.y + k;
        if (r < rows && c < cols) {
            slot[threadIdx.y + k][threadIdx.x] = a[(long long)r * cols + c];
            out[(long long)c * rows + r] = slot[threadIdx.y + k][threadIdx.x];
        }
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "transpose")


def transpose(a, out):
    rows, cols = a.shape
    grid = ((cols + 31) // 32, (rows + 31) // 32)
    _kernel(grid, (32, 8), (a, out, np.int32(rows), np.int32(cols)))
