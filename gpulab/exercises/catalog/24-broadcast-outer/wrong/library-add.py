# expect: no kernel of yours ran: cupy.add
# family: library
"""Wrong: the library's answer in the wrapper (NumPy-style broadcasting). The numbers are right, but CuPy's kernels did
the work: this exercise is about writing the kernel."""

import cupy as cp


def outer_add(col, row, out):
    cp.add(col[:, None], row[None, :], out=out)
