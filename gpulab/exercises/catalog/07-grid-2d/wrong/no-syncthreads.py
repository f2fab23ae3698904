# expect: expected | shared-memory race
# family: mistake
"""Wrong: no __syncthreads() between filling the shared tile and reading it: a race, threads read tile entries other warps have not written yet."""

from __future__ import annotations

import cupy as cp
import numpy as np

SOURCE = r"""
#define TILE 32
#define ROWS 8   // blockDim.y: each thread handles TILE / ROWS elements of the tile

extern "C" __global__
void transpose(const float* __restrict__ a, float* __restrict__ out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];  // +1 column: the column reads hit 32 banks

    // Load: this block's tile of a starts at row blockIdx.y * TILE, column blockIdx.x * TILE.
    int c = blockIdx.x * TILE + threadIdx.x;
    int r = blockIdx.y * TILE + threadIdx.y;
    for (int k = 0; k < TILE; k += ROWS) {
        if (r + k < rows && c < cols) {
            tile[threadIdx.y + k][threadIdx.x] = a[(long long)(r + k) * cols + c];
        }
    }

    // Store: the same tile lands at row blockIdx.x * TILE, column blockIdx.y * TILE of out,
    // which has cols rows of rows elements.
    int oc = blockIdx.y * TILE + threadIdx.x;
    int orow = blockIdx.x * TILE + threadIdx.y;
    for (int k = 0; k < TILE; k += ROWS) {
        if (orow + k < cols && oc < rows) {
            out[(long long)(orow + k) * rows + oc] = tile[threadIdx.x][threadIdx.y + k];
        }
    }
}
"""

TILE, ROWS = 32, 8
_transpose = cp.RawKernel(SOURCE, "transpose")


def transpose(a: cp.ndarray, out: cp.ndarray) -> None:
    rows, cols = a.shape
    # x walks the columns of a, y its rows: ceil-divide each so partial tiles get a block.
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE)
    _transpose(grid, (TILE, ROWS), (a, out, np.int32(rows), np.int32(cols)))
