# why: one RawModule a filter size, K given as a -D option at compile time (the taps' loops have constant bounds)
"""Correlation compiled once per filter size: the size is a macro, so the compiler unrolls the taps."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void conv2d_fixed(const float* img, const float* k, float* out, int h, int w) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= h || c >= w) return;
    float acc = 0.0f;
    #pragma unroll
    for (int i = 0; i < KSIZE; ++i) {
        int rr = r + i - KSIZE / 2;
        if (rr < 0 || rr >= h) continue;
        #pragma unroll
        for (int j = 0; j < KSIZE; ++j) {
            int cc = c + j - KSIZE / 2;
            if (cc >= 0 && cc < w) acc += k[i * KSIZE + j] * img[(long long)rr * w + cc];
        }
    }
    out[(long long)r * w + c] = acc;
}
"""

_modules: dict[int, cp.RawModule] = {}


def _kernel_for(ksize):
    if ksize not in _modules:
        _modules[ksize] = cp.RawModule(code=SOURCE, options=(f"-DKSIZE={ksize}",))
    return _modules[ksize].get_function("conv2d_fixed")


def conv2d(image, kernel, out):
    h, w = image.shape
    grid = ((w + 31) // 32, (h + 7) // 8)
    _kernel_for(kernel.shape[0])(grid, (32, 8), (image, kernel, out, np.int32(h), np.int32(w)))
