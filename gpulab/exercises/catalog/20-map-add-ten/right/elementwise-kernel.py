# why: a cupy.ElementwiseKernel, the learner's own one-line C kernel: CuPy writes the index, the guard and the grid (exercise 34 teaches it)
"""Map with an ElementwiseKernel: out = a + 10."""

import cupy as cp

_kernel = cp.ElementwiseKernel("float32 a", "float32 out", "out = a + 10.0f", "add_ten")


def add_ten(a, out):
    _kernel(a, out)
