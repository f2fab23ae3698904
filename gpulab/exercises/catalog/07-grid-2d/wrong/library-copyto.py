# expect: no kernel of yours ran: cupy.copyto
# family: library
"""Wrong: the library's transpose in the wrapper. The result is right, but CuPy's copy kernel did
the work: this exercise is about writing the kernel."""

import cupy as cp


def transpose(a, out):
    cp.copyto(out, a.T)
