# expect: 7x7 filter
# family: mistake
"""Wrong: room for filters up to 5 x 5 in shared memory, enough for the 3 x 3 and 5 x 5 filters
everyone tries first; a larger filter is cut down to its central 5 x 5, so a 7 x 7 one (the
statement allows K up to 7) loses its outer ring of weights."""

from __future__ import annotations

import cupy as cp
import numpy as np

SOURCE = r"""
#define MAX_K 5  // 3 x 3 and 5 x 5 filters: surely enough

extern "C" __global__
void conv2d(const float* __restrict__ img, const float* __restrict__ k, float* __restrict__ out,
            int h, int w, int ksize) {
    __shared__ float weights[MAX_K * MAX_K];
    int kk = min(ksize, MAX_K), skip = (ksize - kk) / 2;  // the centre of a larger filter
    int t = threadIdx.y * blockDim.x + threadIdx.x;
    if (t < kk * kk) weights[t] = k[(t / kk + skip) * ksize + t % kk + skip];
    __syncthreads();

    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= h || c >= w) return;
    ksize = kk;

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
    grid = ((w + BLOCK[0] - 1) // BLOCK[0], (h + BLOCK[1] - 1) // BLOCK[1])
    _conv2d(grid, BLOCK, (image, kernel, out, np.int32(h), np.int32(w), np.int32(ksize)))
