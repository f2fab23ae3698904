# expect: work kept from an earlier call
# family: memo
# gpu-only: only timing calls the function twice on the same buffers, and it runs on a GPU
"""Wrong: remembers which outputs it has computed and, called again on one, computes only what
it has not done before, which is nothing. Every correctness case hands it a fresh buffer, so it
passes them; the timed calls come back to the same buffers (with the output poisoned and an input
changed in between), and the grader checks every one of them."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__
void saxpy(float a, const float* __restrict__ x, const float* __restrict__ y,
           float* __restrict__ out, long long start, long long n) {
    long long i = start + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = a * x[i] + y[i];
    }
}
"""

THREADS = 256
_saxpy = cp.RawKernel(SOURCE, "saxpy")
_done = []  # (out, elements of it already computed); the arrays are kept, so no id is reused


def saxpy(a, x, y, out):
    n = x.size
    start = next((k for o, k in _done if o is out), 0)  # "the answer is already there"
    blocks = max(1, (n - start + THREADS - 1) // THREADS)
    _saxpy((blocks,), (THREADS,), (np.float32(a), x, y, out, np.int64(start), np.int64(n)))
    _done.append((out, n))
