# expect: fusing is one kernel
# family: loose-property
"""Not fused: an AXPY kernel, then a ReLU kernel over out (two launches, out written twice)."""

import cupy as cp
import numpy as np

_axpy = cp.ElementwiseKernel(
    "float32 alpha, float32 x, float32 y", "float32 out", "out = alpha * x + y", "axpy"
)
_relu = cp.ElementwiseKernel("float32 v", "float32 out", "out = v > 0.0f ? v : 0.0f", "relu")


def axpy_relu(alpha, x, y, out):
    _axpy(np.float32(alpha), x, y, out)
    _relu(out, out)
