# expect: lets CuPy write what this exercise teaches
# family: library
"""Shortcut: an ElementwiseKernel over the output with the image and the filter as raw arrays:
the window sum is written, but CuPy writes the pixel's index, the guard and the launch, which
this exercise asks for (a red team's, 2026-11-30)."""

import cupy as cp
import numpy as np

_k = cp.ElementwiseKernel(
    "raw float32 img, raw float32 k, int32 h, int32 w, int32 K",
    "float32 out",
    """
    int r = i / w, c = i % w, hf = K / 2;
    float acc = 0.0f;
    for (int a = 0; a < K; ++a) {
        int rr = r + a - hf;
        if (rr < 0 || rr >= h) continue;
        for (int b = 0; b < K; ++b) {
            int cc = c + b - hf;
            if (cc >= 0 && cc < w) acc += k[a * K + b] * img[rr * w + cc];
        }
    }
    out = acc;
    """,
    "my_conv2d",
)


def conv2d(image, kernel, out):
    h, w = image.shape
    _k(image, kernel, np.int32(h), np.int32(w), np.int32(kernel.shape[0]), out)
