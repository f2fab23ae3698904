# why: the halo is loaded by a __noinline__ __device__ helper that gets the tile as a plain pointer, so on a GPU the shared accesses sit in another function behind a generic address
"""A window sum whose halo (the 3 cells each side of the block's tile) is filled by a helper
function the compiler keeps apart (`__noinline__`): the reading of the compiled code must follow
the call and the pointer into the tile, not give up on it as "nothing shared"."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256
#define R 3

__device__ __noinline__ void load_halo(const float* a, float* tile, int i, int t, int n) {
    int left = i - R, right = i + BLOCK;
    tile[t] = left >= 0 && left < n ? a[left] : 0.0f;
    tile[t + BLOCK + R] = right < n ? a[right] : 0.0f;
}

extern "C" __global__ void window_sum(const float* a, float* out, int n) {
    __shared__ float tile[BLOCK + 2 * R];
    int t = threadIdx.x;
    int i = blockIdx.x * BLOCK + t;
    tile[t + R] = i < n ? a[i] : 0.0f;
    if (t < R) load_halo(a, tile, i, t, n);
    __syncthreads();
    if (i < n) {
        float s = 0.0f;
        for (int k = 0; k < 2 * R + 1; ++k) s += tile[t + k];
        out[i] = s;
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "window_sum")


def window_sum(a, out):
    n = a.size
    _kernel(((n + 255) // 256,), (256,), (a, out, np.int32(n)))
