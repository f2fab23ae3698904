# expect: lets CuPy write what this exercise teaches
# family: library
"""Shortcut: an ElementwiseKernel over the flat matrix, the row as i / cols: CuPy writes the index, the guard and the launch (the statement's 2-D grid is never written)."""

import cupy as cp
import numpy as np

_kernel = cp.ElementwiseKernel(
    "float32 a, int32 cols", "float32 out", "out = a + (float)(i / cols)", "add_row_flat"
)


def add_row_index(a, out):
    _kernel(a, np.int32(a.shape[1]), out)
