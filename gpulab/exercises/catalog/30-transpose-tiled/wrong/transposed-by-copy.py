# expect: a library kernel ran inside your call: cupy_copy
# family: library
"""Shortcut (the transpose left to the library): `a.T.copy()` transposes, and the learner's
kernel only copies the result through a shared tile, each thread storing its neighbour's value
(shared memory shared, stores coalesced). On a GPU the copy of the transposed view is CuPy's
copy kernel, which the trace names; the emulator's fake did not record `ndarray.copy`, `astype`
or `numpy.copy`, so the file passed there. The fake now records each as CuPy's copy."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void tile_copy(const float* t, float* out, int rows, int cols) {
    __shared__ float tile[8][33];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 8 + threadIdx.y;
    if (x < cols && y < rows) tile[threadIdx.y][threadIdx.x] = t[(long long)y * cols + x];
    __syncthreads();
    int tx = threadIdx.x ^ 1;
    int x2 = blockIdx.x * 32 + tx;
    if (x2 < cols && y < rows) out[(long long)y * cols + x2] = tile[threadIdx.y][tx];
}""",
    "tile_copy",
)


def transpose(a, out):
    rows, cols = a.shape
    t = a.T.copy()
    _k(((rows + 31) // 32, (cols + 7) // 8), (32, 8), (t, out, np.int32(cols), np.int32(rows)))
