# expect: a thread walking the array is a CPU loop
# family: loose-property
# emulator-only: the emulator counts each thread's global accesses; on a GPU the compiled code cannot say which thread works, and one thread's walk over the timed matrix grades far below bronze
"""Shortcut (the 2-D grid launched, not used): one block of 32 x 8 threads, and thread (0, 0)
alone walks the whole matrix with two nested loops while the other 255 idle. Every element is
written once, nothing past the end. Before the fix: pass (on the emulator). The emulator counts
the global accesses of each launch's busiest thread: all of them in one ("a thread walking the
array is a CPU loop")."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void add_rows(const float* a, float* out, int rows, int cols) {
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0)
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c) out[r * cols + c] = a[r * cols + c] + r;
}""",
    "add_rows",
)


def add_row_index(a, out):
    rows, cols = a.shape
    _k((1, 1), (32, 8), (a, out, np.int32(rows), np.int32(cols)))
