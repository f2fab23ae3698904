# expect: no kernel of yours ran: cupy.dot
# family: library
"""Wrong: the library's answer in the wrapper (cuBLAS). The numbers are right, but CuPy's kernels did
the work: this exercise is about writing the kernel."""

import cupy as cp


def dot(a, b, out):
    out[...] = cp.dot(a, b)
