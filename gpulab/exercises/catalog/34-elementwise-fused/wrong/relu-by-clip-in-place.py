# expect: ran inside your call
# family: library
"""Shortcut (half fused, in place): the learner's ElementwiseKernel writes alpha * x + y into out, then out.clip(0, None, out=out) by the library: out written twice, the second pass CuPy's."""

import cupy as cp
import numpy as np

_axpy = cp.ElementwiseKernel(
    "float32 alpha, float32 x, float32 y", "float32 out", "out = alpha * x + y", "axpy_into"
)


def axpy_relu(alpha, x, y, out):
    _axpy(np.float32(alpha), x, y, out)
    cp.clip(out, 0, None, out=out)
