# expect: never written
# family: mistake
"""Map: out[i] = a[i] + 10, one GPU thread per element."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void add_ten(const float* a, float* out, int n) {
    int i = threadIdx.x;  // forgot the block: every block writes the first 256
    if (i >= n) return;
    out[i] = a[i] + 10.0f;
}
"""

_kernel = cp.RawKernel(SOURCE, "add_ten")


def add_ten(a, out):
    n = a.size
    threads = 256
    blocks = (n + threads - 1) // threads
    _kernel((blocks,), (threads,), (a, out, np.int32(n)))
