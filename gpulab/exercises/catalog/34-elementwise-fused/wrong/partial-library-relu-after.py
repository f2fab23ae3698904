# expect: ran inside your call
# family: library
"""Shortcut (half fused): the learner's ElementwiseKernel computes alpha * x + y into a new array, and the library's cupy.maximum does the ReLU into out: one kernel of the learner's, the rest the library's."""

import cupy as cp
import numpy as np

_axpy = cp.ElementwiseKernel(
    "float32 alpha, float32 x, float32 y", "float32 out", "out = alpha * x + y", "axpy_only"
)


def axpy_relu(alpha, x, y, out):
    cp.maximum(_axpy(np.float32(alpha), x, y), 0, out=out)
