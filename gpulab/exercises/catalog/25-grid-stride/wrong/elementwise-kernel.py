# expect: picks its own grid from n
# family: library
"""Wrong: the right numbers from a cupy.ElementwiseKernel, which launches as many threads as there
are elements: no fixed grid and no loop, the two things this exercise is about."""

import cupy as cp
import numpy as np

_kernel = cp.ElementwiseKernel(
    "float32 alpha, float32 x, float32 y", "float32 out", "out = alpha * x + y", "saxpy"
)


def saxpy(alpha, x, y, out):
    _kernel(np.float32(alpha), x, y, out)
