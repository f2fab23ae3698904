# expect: no kernel of yours ran: cupy.maximum
# family: library
"""Wrong: the library's answer in the wrapper (three kernels and two temporaries). The numbers are right, but CuPy's kernels did
the work: this exercise is about writing the kernel."""

import cupy as cp
import numpy as np


def axpy_relu(alpha, x, y, out):
    cp.maximum(np.float32(alpha) * x + y, np.float32(0), out=out)
