# expect: not reused from a tile
# family: property-proxy
# emulator-only: the emulator counted loads per array argument and missed an address passed as a number; on a GPU how many bytes a launch loads needs Nsight Compute's counters, and the time grades the K loads an output
"""Shortcut (x reached past the per-array count): the weights go through shared memory and x is
read at every product through its address, handed to the kernel as an unsigned 64-bit integer
(w passed in x's place). The emulator counted the loads through each array argument, and an
address passed as a number is none of them. Before the fix: pass (on the emulator). Loads from
device memory in no argument's allocation are counted as an array of their own ("not reused
from a tile")."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void conv(const float* unused, const float* w, float* out, int n, int K,
                                unsigned long long xp) {
    const float* x = (const float*)xp;
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
    ptr = x.data.ptr if hasattr(x.data, "ptr") else x.__array_interface__["data"][0]
    args = (w, w, out, np.int32(n), np.int32(w.size), np.uint64(ptr))
    _kernel(((n + 255) // 256,), (256,), args)
