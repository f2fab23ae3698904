# expect: no kernel of yours ran: cupy.exp
# family: library
"""Wrong: the library's answer in the wrapper (NumPy-style: max, exp, sum, divide). The numbers are right, but CuPy's kernels did
the work: this exercise is about writing the kernel."""

import cupy as cp


def softmax(x, out):
    e = cp.exp(x - x.max(axis=1, keepdims=True))
    cp.divide(e, e.sum(axis=1, keepdims=True), out=out)
