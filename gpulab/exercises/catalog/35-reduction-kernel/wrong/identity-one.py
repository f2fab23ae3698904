# expect: wrong
# family: mistake
"""Row norms with cupy.ReductionKernel: out[r] = sqrt(sum of x[r, c] ** 2)."""

import cupy as cp

_kernel = cp.ReductionKernel(
    "T x",  # input: one element
    "T y",  # output: one per row
    "x * x",  # map_expr: what each element contributes
    "a + b",  # reduce_expr: how two contributions combine
    "y = sqrt(a)",  # post_map_expr: the output from the total a
    "1",  # identity (wrong: every partial total starts at 1): where the total starts
    "row_norm",
)


def row_norms(x, out):
    _kernel(x, axis=1, out=out)
