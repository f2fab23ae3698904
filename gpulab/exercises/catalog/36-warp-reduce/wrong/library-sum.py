# expect: no kernel of yours ran: cupy.sum
"""Wrong: the library's sum in the wrapper. The number is right, but CuPy's kernel did the work."""

import cupy as cp


def warp_sum(x, out):
    cp.sum(x, keepdims=True, out=out)
