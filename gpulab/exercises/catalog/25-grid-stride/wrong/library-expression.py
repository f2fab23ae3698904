# expect: no kernel of yours ran: your file compiles no kernel
# family: library
"""Wrong: the library's answer in the wrapper (a plain CuPy expression). The numbers are right, but CuPy's kernels did
the work: this exercise is about writing the kernel."""

import numpy as np


def saxpy(alpha, x, y, out):
    out[...] = np.float32(alpha) * x + y
