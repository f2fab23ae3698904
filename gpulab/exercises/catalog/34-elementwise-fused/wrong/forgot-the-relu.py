# expect: wrong
# family: mistake
"""A fused element-wise kernel with cupy.ElementwiseKernel: out = max(alpha * x + y, 0)."""

import cupy as cp
import numpy as np

_kernel = cp.ElementwiseKernel(
    "float32 alpha, float32 x, float32 y",
    "float32 out",
    "out = alpha * x + y",  # no ReLU
    "axpy_relu",
)


def axpy_relu(alpha, x, y, out):
    _kernel(np.float32(alpha), x, y, out)
