# expect: no kernel of yours ran: cupyx.scipy.ndimage.correlate1d
# family: library
"""Wrong: the library's answer in the wrapper (seven ones). The numbers are right, but CuPy's kernels did
the work: this exercise is about writing the kernel."""

import cupy as cp
import cupyx.scipy.ndimage as ndi


def window_sum(a, out):
    ones = cp.ones(7, dtype=cp.float32)
    ndi.correlate1d(a, ones, mode="constant", cval=0.0, output=out)
