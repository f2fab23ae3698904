# expect: returned before its kernel finished | never written
# family: lazy
# gpu-only: the emulator has no streams
"""The same unsynchronized side stream, made as cupy.cuda.stream.Stream: the name the class has in
its own module, which the check must watch as closely as cupy.cuda.Stream."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void abs_diff(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fabsf(a[i] - b[i]);
}
"""

_kernel = cp.RawKernel(SOURCE, "abs_diff")
_stream = cp.cuda.stream.Stream(non_blocking=True)


def abs_diff(a, b, out):
    n = a.size
    _kernel(((n + 255) // 256,), (256,), (a, b, out, np.int32(n)), stream=_stream)
