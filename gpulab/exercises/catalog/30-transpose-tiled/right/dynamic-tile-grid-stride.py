# why: a fixed grid of blocks walks over the tiles (a grid-stride loop, a barrier each side of every tile), through a padded tile in dynamic shared memory indexed by hand as one flat array
"""Transpose where each block moves many 32 x 32 tiles in turn: the tile lives in `extern
__shared__` memory sized at launch (`shared_mem=`), padded by one column and indexed as
`tile[row * 33 + col]`; the loop reuses it, so a barrier ends each tile before the next load."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define TILE 32
#define ROWS 8
#define PITCH (TILE + 1)

extern "C" __global__ void transpose(const float* a, float* out, int rows, int cols) {
    extern __shared__ float tile[];
    int tx = threadIdx.x, ty = threadIdx.y;
    int across = (cols + TILE - 1) / TILE, down = (rows + TILE - 1) / TILE;
    for (int t = blockIdx.x; t < across * down; t += gridDim.x) {
        int bx = t % across, by = t / across;
        int c = bx * TILE + tx;
        for (int j = ty; j < TILE; j += ROWS) {
            int r = by * TILE + j;
            if (r < rows && c < cols) tile[j * PITCH + tx] = a[(long long)r * cols + c];
        }
        __syncthreads();
        int oc = by * TILE + tx;
        for (int j = ty; j < TILE; j += ROWS) {
            int orow = bx * TILE + j;
            if (orow < cols && oc < rows) out[(long long)orow * rows + oc] = tile[tx * PITCH + j];
        }
        __syncthreads();  // every thread has read this tile before the next overwrites it
    }
}
"""

_module = cp.RawModule(code=SOURCE)
_kernel = _module.get_function("transpose")


def transpose(a, out):
    rows, cols = a.shape
    tiles = ((cols + 31) // 32) * ((rows + 31) // 32)
    blocks = min(tiles, 1024)
    _kernel((blocks,), (32, 8), (a, out, np.int32(rows), np.int32(cols)), shared_mem=32 * 33 * 4)
