# expect: not reused from a tile
# family: property-proxy
# emulator-only: on a GPU the compiled code shows the weights' tile read across threads, and how many bytes a launch loads through x needs Nsight Compute's counters; the time grades the K loads an output there
"""Shortcut (the small tile): the K weights go through shared memory (every thread reads what
others wrote, K shared reads an output), and x, the array the halo tile is for, is read from
global memory at every product, its parameter listed first so it is not the first array. Before
the fix: pass (on the emulator; a documented limit). The emulator counts the bytes each launch
loads through each array it was handed: x loaded K times an output, more than four loads an
output through any array but w ("not reused from a tile")."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void conv(float* out, const float* x, const float* w, int n, int K) {
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

_kernel = cp.RawKernel(SOURCE, "conv")


def conv1d(x, w, out):
    n = x.size
    _kernel(((n + 255) // 256,), (256,), (out, x, w, np.int32(n), np.int32(w.size)))
