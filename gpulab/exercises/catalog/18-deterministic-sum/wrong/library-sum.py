# expect: no kernel of yours ran: cupy.sum
# family: library
"""Wrong: the library's sum (deterministic, as it happens). This exercise is about writing it."""

import cupy as cp


def det_sum(x, out):
    cp.sum(x, keepdims=True, out=out)
