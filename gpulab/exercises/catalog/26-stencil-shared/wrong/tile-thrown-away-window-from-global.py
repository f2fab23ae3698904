# expect: not reused from the tiles
# family: property-proxy
# emulator-only: on a GPU the compiled code shows a shared slot read by another thread, and how many bytes a launch loads from global memory needs Nsight Compute's counters; the time grades the seven loads an output there
"""Shortcut (the tile as a throwaway, a documented limit): each thread stores its value in a
shared array, syncs and reads its neighbour's slot (shared memory used and shared between
threads), multiplies it by zero, and sums the window from seven global loads. Before the fix:
pass (on the emulator). The emulator counts the bytes each launch loads from global memory:
seven loads an output, more than three ("not reused from the tiles")."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void window_sum(const float* a, float* out, int n) {
    __shared__ float s[256];
    int t = threadIdx.x;
    int i = blockIdx.x * 256 + t;
    s[t] = i < n ? a[i] : 0.0f;
    __syncthreads();
    float other = s[(t + 1) & 255];
    if (i < n) {
        float acc = 0.0f;
        for (int k = -3; k <= 3; ++k) {
            int j = i + k;
            if (j >= 0 && j < n) acc += a[j];
        }
        out[i] = acc + other * 0.0f;
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "window_sum")


def window_sum(a, out):
    n = a.size
    _kernel(((n + 255) // 256,), (256,), (a, out, np.int32(n)))
