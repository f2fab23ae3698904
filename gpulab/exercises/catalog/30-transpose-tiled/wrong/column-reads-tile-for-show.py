# expect: loads from global memory are scattered
# family: property-proxy
# emulator-only: on a GPU the compiled code shows a tile written and read across threads, and whether a warp's loads coalesce needs Nsight Compute's counters; the time grades the scattered loads there
"""Shortcut (the other naive transpose, with a tile for show): each warp reads a column of a (32
values a row apart) and writes a row of out, so the stores coalesce and the loads scatter; a
neighbour's value is read back from a shared tile and multiplied by zero. Before the fix: pass
(on the emulator). The emulator compares each lane's global loads with its neighbour's: none of
them lie within 16 bytes ("loads from global memory are scattered")."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void transpose(const float* a, float* out, int rows, int cols) {
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x;  // a's row, out's column
    int y0 = blockIdx.y * 32;
    for (int j = 0; j < 4; ++j) {
        int y = y0 + threadIdx.y + 8 * j;  // a's column, out's row
        float v = (x < rows && y < cols) ? a[x * cols + y] : 0.0f;
        tile[threadIdx.y + 8 * j][threadIdx.x] = v;
        __syncthreads();
        float other = tile[threadIdx.y + 8 * j][(threadIdx.x + 1) & 31];
        if (x < rows && y < cols) out[y * rows + x] = v + other * 0.0f;
        __syncthreads();
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "transpose")


def transpose(a, out):
    rows, cols = a.shape
    grid = ((rows + 31) // 32, (cols + 31) // 32)
    _kernel(grid, (32, 8), (a, out, np.int32(rows), np.int32(cols)))
