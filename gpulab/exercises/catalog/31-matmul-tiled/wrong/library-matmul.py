# expect: no kernel of yours ran: cupy.matmul
# family: library
"""Wrong: the library's answer in the wrapper (cuBLAS). The numbers are right, but CuPy's kernels did
the work: this exercise is about writing the kernel."""

import cupy as cp


def matmul(a, b, out):
    cp.matmul(a, b, out=out)
