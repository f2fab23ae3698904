# expect: no kernel of yours ran: cupy.add (line 8) did the work
"""The library's add in the launch wrapper: the right numbers, but not a kernel of the learner's."""

import cupy as cp


def add(a, b, out):
    cp.add(a, b, out=out)
