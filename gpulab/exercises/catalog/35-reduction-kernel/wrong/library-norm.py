# expect: no kernel of yours ran: cupy.linalg.norm
# family: library
"""Wrong: the library's answer in the wrapper (cupy.linalg.norm). The numbers are right, but CuPy's kernels did
the work: this exercise is about writing the kernel."""

import cupy as cp


def row_norms(x, out):
    out[...] = cp.linalg.norm(x, axis=1)
