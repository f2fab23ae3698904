# expect: no kernel of yours ran: cupy.copyto
# family: library
"""Wrong: the library's answer in the wrapper (an element-wise copy from a strided view). The numbers are right, but CuPy's kernels did
the work: this exercise is about writing the kernel."""

import cupy as cp


def transpose(a, out):
    cp.copyto(out, a.T)
