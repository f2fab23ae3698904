# expect: lets CuPy write what this exercise teaches
# family: library
"""Row norms without a reduction: an ElementwiseKernel, one thread per row, a serial loop."""

import cupy as cp
import numpy as np

_k = cp.ElementwiseKernel(
    "raw float32 x, int32 cols",
    "float32 out",
    "float s = 0.0f; for (int c = 0; c < cols; ++c) { float v = x[i * cols + c]; s += v * v; } out = sqrtf(s);",
    "row_norm_loop",
)


def row_norms(x, out):
    _k(x, np.int32(x.shape[1]), out)
