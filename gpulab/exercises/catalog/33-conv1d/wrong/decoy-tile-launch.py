# expect: in the launches that start most of its threads | the values are read from global memory instead
# family: property-proxy
"""Shortcut (a property faked in a separate tiny launch): the convolution straight from global
memory (K loads of x and K of w an output, no tile), plus, each call, one block of a second
kernel that stages 256 values of x in a __shared__ tile, syncs and reads a neighbour's slot,
writing nothing. The shared-memory rule accepts a call when any of its launches used shared
memory, and the sharing rule sums over the call's launches.
On an H200 (real CuPy, PTX rules): PASS, grade silver (0.43 of the expert)."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void conv1d(const float* x, const float* w, float* out, int n, int K) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int R = (K - 1) / 2;
    float s = 0.0f;
    for (int k = 0; k < K; ++k) {
        int g = i - R + k;
        if (g >= 0 && g < n) s += w[k] * x[g];
    }
    out[i] = s;
}
extern "C" __global__ void prefetch(const float* x, float* out, int n) {
    __shared__ float tile[256];
    int t = threadIdx.x;
    tile[t] = t < n ? x[t] : 0.0f;
    __syncthreads();
    float v = tile[(t + 1) & 255];
    if (v != v && t < 0) out[0] = v;  // never taken
}
"""
_m = cp.RawModule(code=SOURCE)
_work, _decoy = _m.get_function("conv1d"), _m.get_function("prefetch")


def conv1d(x, w, out):
    n, k = x.size, w.size
    _work(((n + 255) // 256,), (256,), (x, w, out, np.int32(n), np.int32(k)))
    _decoy((1,), (256,), (x, out, np.int32(n)))
