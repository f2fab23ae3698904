# expect: no kernel of yours ran: cupy.bincount
# family: library
"""Wrong: the library's answer in the wrapper (cupy.bincount). The numbers are right, but CuPy's kernels did
the work: this exercise is about writing the kernel."""

import cupy as cp


def histogram(x, hist):
    hist[...] = cp.bincount(x, minlength=256)
