# expect: lets CuPy write the reduction | ReductionKernel
# family: library
"""Shortcut (the library writes the work): a ReductionKernel in double does the whole sum; its
fixed tree makes it deterministic, but CuPy wrote the passes and the combine this exercise asks
for."""

import cupy as cp

_sum = cp.ReductionKernel(
    "float32 x",
    "float32 s",
    "(double)x",
    "a + b",
    "s = (float)a",
    "0",
    "det_sum_rk",
    reduce_type="double",
)


def det_sum(x, out):
    _sum(x, out, keepdims=True)  # out is (1,): the kept axis
