# expect: no kernel of yours ran: cupy.add
# family: library
"""Wrong: the library's answer in the wrapper (cupy.add). The numbers are right, but CuPy's kernels did
the work: this exercise is about writing the kernel."""

import cupy as cp
import numpy as np


def add_ten(a, out):
    cp.add(a, np.float32(10), out=out)
