# expect: never written
# family: mistake
"""Wrong: the grid is rounded down, so the right and bottom edges of most images are never computed."""

from __future__ import annotations

import cupy as cp
import numpy as np

SOURCE = r"""
#define MAX_K 7

extern "C" __global__
void conv2d(const float* __restrict__ img, const float* __restrict__ k, float* __restrict__ out,
            int h, int w, int ksize) {
    __shared__ float weights[MAX_K * MAX_K];
    int t = threadIdx.y * blockDim.x + threadIdx.x;
    if (t < ksize * ksize) weights[t] = k[t];
    __syncthreads();  // the weights are in place before any thread uses them

    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= h || c >= w) return;  // after the barrier: every thread reached it

    int half = ksize / 2;
    float acc = 0.0f;
    for (int i = 0; i < ksize; ++i) {
        int rr = r + i - half;
        if (rr < 0 || rr >= h) continue;  // zero padding: rows outside add nothing
        const float* row = img + (long long)rr * w;
        for (int j = 0; j < ksize; ++j) {
            int cc = c + j - half;
            if (cc >= 0 && cc < w) acc += weights[i * ksize + j] * row[cc];
        }
    }
    out[(long long)r * w + c] = acc;
}
"""

BLOCK = (32, 8)  # 32 threads along a row: a warp reads consecutive pixels
_conv2d = cp.RawKernel(SOURCE, "conv2d")


def conv2d(image: cp.ndarray, kernel: cp.ndarray, out: cp.ndarray) -> None:
    h, w = image.shape
    ksize = kernel.shape[0]
    grid = (max(1, w // BLOCK[0]), max(1, h // BLOCK[1]))
    _conv2d(grid, BLOCK, (image, kernel, out, np.int32(h), np.int32(w), np.int32(ksize)))
