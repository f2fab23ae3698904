# why: the ReLU as a __device__ function in the ElementwiseKernel's preamble= (CuPy pastes it above the kernel)
"""A fused element-wise kernel whose operation calls a device function of its own."""

import cupy as cp
import numpy as np

_kernel = cp.ElementwiseKernel(
    "float32 alpha, float32 x, float32 y",
    "float32 out",
    "out = relu(alpha * x + y)",
    "axpy_relu",
    preamble="__device__ float relu(float v) { return v > 0.0f ? v : 0.0f; }",
)


def axpy_relu(alpha, x, y, out):
    _kernel(np.float32(alpha), x, y, out)
