# expect: a thread walking the array is a CPU loop
# family: loose-property
# emulator-only: the emulator counts each thread's global accesses; on a GPU the compiled code cannot say which thread works, and one thread's walk over the timed matrix grades far below bronze
"""Shortcut (the broadcast as a CPU loop on the GPU): one block, and its thread (0, 0) fills all
of out with two nested loops, col[r] + row[c], while the rest of the block idles. Before the
fix: pass (on the emulator). The emulator counts the global accesses of each launch's busiest
thread: all of them in one ("a thread walking the array is a CPU loop")."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void outer(const float* col, const float* row, float* out, int rows, int cols) {
    if (blockIdx.x == 0 && threadIdx.x == 0 && threadIdx.y == 0)
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c) out[r * cols + c] = col[r] + row[c];
}""",
    "outer",
)


def outer_add(col, row, out):
    _k((1, 1), (32, 8), (col, row, out, np.int32(col.size), np.int32(row.size)))
