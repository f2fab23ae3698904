# expect: ran inside your call
# family: library
"""Shortcut (a library does the data movement): row copied into every row of out by device-to-device copies (one `copyto` per row, sliced views), then a kernel adds col[r] to each element."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void outer_add(const float* col, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[(long long)r * cols + c] += col[r];
}
"""
_kernel = cp.RawKernel(SOURCE, "outer_add")


def outer_add(col, row, out):
    rows, cols = out.shape
    for r in range(rows):
        cp.copyto(out[r], row)
    _kernel(
        ((cols + 31) // 32, (rows + 7) // 8), (32, 8), (col, out, np.int32(rows), np.int32(cols))
    )
