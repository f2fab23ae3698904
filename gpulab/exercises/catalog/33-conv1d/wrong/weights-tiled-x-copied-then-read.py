# expect: not reused from a tile
# family: property-proxy
# emulator-only: on a GPU the compiled code shows the weights' tile read across threads, and how many bytes a launch loads through its copy of x needs Nsight Compute's counters; the time grades the copy and the K loads an output there
"""Shortcut (the small tile, x moved out of the check's sight): a first kernel copies x into a
buffer of the file's own, then the weights go through shared memory and the copy of x is read
from global memory at every product. A rule that counts the loads through x alone sees each
value of x loaded once. Before the fix: pass (on the emulator). The emulator counts the loads
through every array a launch was handed: the copy loaded K times an output ("not reused from a
tile")."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void copy_x(const float* x, float* s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) s[i] = x[i];
}
extern "C" __global__ void conv(const float* x, const float* w, float* out, int n, int K) {
    __shared__ float ws[64];
    int t = threadIdx.x;
    if (t < K) ws[t] = w[t];
    __syncthreads();
    int i = blockIdx.x * blockDim.x + t;
    int R = (K - 1) / 2;
    if (i < n) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) {
            int j = i + k - R;
            if (j >= 0 && j < n) acc += ws[k] * x[j];
        }
        out[i] = acc;
    }
}
"""

_module = cp.RawModule(code=SOURCE)


def conv1d(x, w, out):
    n = x.size
    copy = cp.empty_like(x)
    grid = ((n + 255) // 256,)
    _module.get_function("copy_x")(grid, (256,), (x, copy, np.int32(n)))
    _module.get_function("conv")(grid, (256,), (copy, w, out, np.int32(n), np.int32(w.size)))
