# why: a 1-D grid-stride loop over the h * w pixels (row and column from / and %), weights read from global memory, no shared memory
"""Correlation with a flat index: a fixed grid of 1-D blocks walks every pixel of the image."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void conv2d_flat(const float* img, const float* k, float* out,
                                       int h, int w, int ksize) {
    long long n = (long long)h * w;
    int half = ksize / 2;
    for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < n;
         p += (long long)gridDim.x * blockDim.x) {
        int r = (int)(p / w), c = (int)(p % w);
        float acc = 0.0f;
        for (int i = 0; i < ksize; ++i) {
            for (int j = 0; j < ksize; ++j) {
                int rr = r + i - half, cc = c + j - half;
                if (rr >= 0 && rr < h && cc >= 0 && cc < w) {
                    acc += k[i * ksize + j] * img[(long long)rr * w + cc];
                }
            }
        }
        out[p] = acc;
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "conv2d_flat")


def conv2d(image, kernel, out):
    h, w = image.shape
    blocks = min(1024, (h * w + 255) // 256)
    _kernel(
        (blocks,), (256,), (image, kernel, out, np.int32(h), np.int32(w), np.int32(kernel.shape[0]))
    )
