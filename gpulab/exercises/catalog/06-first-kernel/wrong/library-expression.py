# expect: no kernel of yours ran: cupy.add
# family: library
"""Wrong: the library's answer in the wrapper. The numbers are right, but CuPy's own kernels did
the work: this exercise is about writing the kernel."""

import cupy as cp
import numpy as np


def saxpy(a, x, y, out):
    cp.add(np.float32(a) * x, y, out=out)
