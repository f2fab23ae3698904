# expect: no kernel of yours ran: cupy.where
# family: library
"""Wrong: the library's answer in the wrapper (cupy.where). The numbers are right, but CuPy's kernels did
the work: this exercise is about writing the kernel."""

import cupy as cp
import numpy as np


def leaky_relu(a, out):
    out[...] = cp.where(a > 0, a, a * np.float32(0.01))
