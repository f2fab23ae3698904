# expect: each row at its own offset
# family: mistake
"""Wrong: subtracts the largest value of the whole matrix, not the row's own max. Mathematically
the same, and it never overflows; but a row far below the top one has every exp(x - max)
underflow to 0, and 0 / 0 is NaN."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void softmax(const float* x, float* out, int rows, int cols) {
    __shared__ float sm[BLOCK];
    int t = threadIdx.x;
    const float* row = x + (long long)blockIdx.x * cols;
    float* orow = out + (long long)blockIdx.x * cols;
    float m = -3.402823466e38f;
    long long all = (long long)rows * cols;
    for (long long e = t; e < all; e += BLOCK) m = fmaxf(m, x[e]);  // the whole matrix
    sm[t] = m;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) sm[t] = fmaxf(sm[t], sm[t + s]);
        __syncthreads();
    }
    m = sm[0];
    __syncthreads();
    float sum = 0.0f;
    for (int c = t; c < cols; c += BLOCK) sum += expf(row[c] - m);
    sm[t] = sum;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) sm[t] += sm[t + s];
        __syncthreads();
    }
    float inv = 1.0f / sm[0];
    for (int c = t; c < cols; c += BLOCK) orow[c] = expf(row[c] - m) * inv;
}
"""

_kernel = cp.RawKernel(SOURCE, "softmax")


def softmax(x, out):
    rows, cols = x.shape
    _kernel((rows,), (256,), (x, out, np.int32(rows), np.int32(cols)))
