# expect: no kernel of yours ran: cupy.abs (line 10) did the work
# family: library
"""The library's abs of a - b in the launch wrapper: the right numbers, but no kernel of the
learner's."""

import cupy as cp


def abs_diff(a, b, out):
    cp.abs(a - b, out=out)
