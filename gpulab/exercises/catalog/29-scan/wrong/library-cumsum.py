# expect: no kernel of yours ran: cupy.cumsum
# family: library
"""Wrong: the library's answer in the wrapper (cupy.cumsum). The numbers are right, but CuPy's kernels did
the work: this exercise is about writing the kernel."""

import cupy as cp


def cumsum(x, out):
    cp.cumsum(x, out=out)
