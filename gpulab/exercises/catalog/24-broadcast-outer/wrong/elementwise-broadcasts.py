# expect: lets CuPy write what this exercise teaches
# family: library
"""Broadcast by CuPy: an ElementwiseKernel handed col[:, None] and row[None, :]; CuPy writes the 2-D indexing."""

import cupy as cp

_k = cp.ElementwiseKernel("float32 c, float32 r", "float32 o", "o = c + r", "outer_add")


def outer_add(col, row, out):
    _k(col[:, None], row[None, :], out)
