# expect: lets CuPy write what this exercise teaches
# family: library
"""saxpy with cupy.ElementwiseKernel: CuPy writes the index, the guard and the grid (the statement asks for a RawKernel)."""

import cupy as cp
import numpy as np

_k = cp.ElementwiseKernel(
    "float32 a, float32 x, float32 y", "float32 out", "out = a * x + y", "saxpy_ew"
)


def saxpy(a, x, y, out):
    _k(np.float32(a), x, y, out)
