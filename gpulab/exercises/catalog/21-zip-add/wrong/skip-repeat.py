# expect: work kept from an earlier call
# family: memo
# gpu-only: only timing calls the function twice on the same buffers, and it runs on a GPU
"""Wrong: remembers which outputs it has computed and, called again on one, launches its kernel
only over what it has not done before, which is nothing. Every correctness case hands it a fresh
buffer, so it passes them; the timed calls come back to the same buffers (with the output
poisoned and an input changed in between), and the grader checks every one of them."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void abs_diff(const float* a, const float* b, float* out, int start, int n) {
    int i = start + blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fabsf(a[i] - b[i]);
}
"""

_kernel = cp.RawKernel(SOURCE, "abs_diff")
_done = []  # (out, elements of it already computed); the arrays are kept, so no id is reused


def abs_diff(a, b, out):
    n = a.size
    start = next((k for o, k in _done if o is out), 0)  # "the answer is already there"
    blocks = max(1, (n - start + 255) // 256)
    _kernel((blocks,), (256,), (a, b, out, np.int32(start), np.int32(n)))
    _done.append((out, n))
