# expect: no kernel of yours ran: cupyx.scipy.ndimage.correlate1d
# family: library
"""Wrong: the library's answer in the wrapper (cupyx.scipy.ndimage.correlate1d). The numbers are right, but CuPy's kernels did
the work: this exercise is about writing the kernel."""

import cupyx.scipy.ndimage as ndi


def conv1d(x, w, out):
    ndi.correlate1d(x, w, mode="constant", cval=0.0, output=out)
