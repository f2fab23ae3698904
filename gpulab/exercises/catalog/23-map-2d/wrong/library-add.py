# expect: no kernel of yours ran: cupy.arange (line 10), cupy.add
# family: library
"""Wrong: the library's answer in the wrapper (a broadcast cupy.add). The numbers are right, but CuPy's kernels did
the work: this exercise is about writing the kernel."""

import cupy as cp


def add_row_index(a, out):
    rows = cp.arange(a.shape[0], dtype=cp.float32)[:, None]
    cp.add(a, rows, out=out)
