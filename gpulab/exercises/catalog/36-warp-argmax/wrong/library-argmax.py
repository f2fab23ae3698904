# expect: no kernel of yours ran: cupy.argmax
# family: library
"""Shortcut (a library does the work): the library's argmax in the wrapper. The index is right,
and CuPy's kernel found it."""

import cupy as cp


def warp_argmax(x, out):
    out[...] = cp.argmax(x)
