# expect: stores to global memory are scattered
# family: property-proxy
# emulator-only: on a GPU the compiled code shows a tile written and read across threads, and whether a warp's stores coalesce needs Nsight Compute's counters; the time grades the scattered stores there
"""Shortcut (the tile staged for show): each thread loads its four values of a (coalesced), puts
them in a 32 x 33 tile, syncs and reads back the transposed slot, which it multiplies by zero;
it writes out[x][y] from its own registers, the naive transpose's scattered stores. Shared
memory is used, shared between threads, and touched twice an element. Before the fix: pass (on
the emulator). The emulator compares each lane's global stores with its neighbour's: none of
them lie within 16 bytes ("stores to global memory are scattered")."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void transpose(const float* a, float* out, int rows, int cols) {
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y0 = blockIdx.y * 32;
    float v[4];
    for (int j = 0; j < 4; ++j) {
        int y = y0 + threadIdx.y + 8 * j;
        v[j] = (x < cols && y < rows) ? a[y * cols + x] : 0.0f;
        tile[threadIdx.y + 8 * j][threadIdx.x] = v[j];
    }
    __syncthreads();
    for (int j = 0; j < 4; ++j) {
        int y = y0 + threadIdx.y + 8 * j;
        float other = tile[threadIdx.x][threadIdx.y + 8 * j];
        if (x < cols && y < rows) out[x * rows + y] = v[j] + other * 0.0f;
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "transpose")


def transpose(a, out):
    rows, cols = a.shape
    grid = ((cols + 31) // 32, (rows + 31) // 32)
    _kernel(grid, (32, 8), (a, out, np.int32(rows), np.int32(cols)))
