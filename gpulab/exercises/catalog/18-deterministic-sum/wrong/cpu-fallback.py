# expect: no kernel of yours ran
# family: library
"""Wrong: copy to the host and let NumPy add in float64. Exact and deterministic, but no GPU
kernel of yours ran, and a 256 MB round trip over PCIe costs far more than the sum."""

import cupy as cp
import numpy as np


def det_sum(x, out):
    total = np.sum(cp.asnumpy(x), dtype=np.float64)
    out[...] = cp.asarray(np.float32(total))
