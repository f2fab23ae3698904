# expect: lets CuPy write the reduction | ReductionKernel
# family: library
"""Shortcut (the library writes the work): a ReductionKernel sums the products, so CuPy writes
the grid-stride loop, the shared-memory tree, the barriers and the final combine that this
exercise is about; an ElementwiseKernel makes the products first (the one-input ReductionKernel
the emulator runs too)."""

import cupy as cp

_mul = cp.ElementwiseKernel("float32 a, float32 b", "float32 p", "p = a * b", "dot_products")
_sum = cp.ReductionKernel("float32 p", "float32 s", "p", "a + b", "s = a", "0", "dot_sum")


def dot(a, b, out):
    _sum(_mul(a, b), out, keepdims=True)  # out is (1,): the kept axis
