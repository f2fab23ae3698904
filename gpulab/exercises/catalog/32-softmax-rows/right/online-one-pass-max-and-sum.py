# why: the online softmax: one pass keeps a running max and a sum rescaled whenever the max grows, and (max, sum) pairs are merged across the block with warp shuffles and a shared slot a warp
"""Softmax with the max and the sum found in one read of the row (the online normaliser)."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256

__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
    float top = fmaxf(m, m2);
    // a side with no values yet (s == 0) adds nothing, whatever its max
    s = (s == 0.0f ? 0.0f : s * expf(m - top)) + (s2 == 0.0f ? 0.0f : s2 * expf(m2 - top));
    m = top;
}

extern "C" __global__ void softmax_online(const float* x, float* out, int cols) {
    __shared__ float wm[BLOCK / 32], ws[BLOCK / 32];
    const float* row = x + (long long)blockIdx.x * cols;
    float m = -3.402823466e38f, s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) {
        float v = row[c];
        if (v > m) {
            s = s * expf(m - v) + 1.0f;
            m = v;
        } else {
            s += expf(v - m);
        }
    }
    for (int off = 16; off > 0; off >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, off);
        float s2 = __shfl_xor_sync(0xffffffffu, s, off);
        merge(m, s, m2, s2);
    }
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) { wm[warp] = m; ws[warp] = s; }
    __syncthreads();
    m = wm[0];
    s = ws[0];
    for (int w = 1; w < BLOCK / 32; ++w) merge(m, s, wm[w], ws[w]);
    float inv = 1.0f / s;
    float* orow = out + (long long)blockIdx.x * cols;
    for (int c = threadIdx.x; c < cols; c += BLOCK) orow[c] = expf(row[c] - m) * inv;
}
"""

_kernel = cp.RawKernel(SOURCE, "softmax_online")


def softmax(x, out):
    rows, cols = x.shape
    _kernel((rows,), (256,), (x, out, np.int32(cols)))
