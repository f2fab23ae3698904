# expect: uses the host CPU's vector instructions
# family: escape
# emulator-only: NVRTC refuses the header and its builtins, so on a GPU the file does not compile
"""Shortcut (the emulator's counting evaded): one thread per row, as wrong/rawkernel-serial-
row.py, but the row read with the host CPU's AVX masked loads (immintrin.h's
`_mm256_maskload_ps`, a `__builtin_ia32_maskloadps256` underneath). ThreadSanitizer's
instrumentation, which the emulator counts each thread's accesses by, sees no load in a target
builtin, so the busiest thread read as having touched nothing and the one-thread-a-row rule
passed. The emulator's source scan now refuses the host's intrinsics headers and target
builtins (`__builtin_ia32_...`, `__builtin_neon_...`): a GPU has none."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
#include <immintrin.h>
typedef float v8f __attribute__((vector_size(32)));
typedef int v8i __attribute__((vector_size(32)));
__attribute__((target("avx2"))) __device__ float row_sumsq(const float* p, int cols) {
    float s = 0.0f;
    int c = 0;
    v8i all = {-1, -1, -1, -1, -1, -1, -1, -1};
    for (; c + 8 <= cols; c += 8) {
        v8f v = (v8f)_mm256_maskload_ps(p + c, (__m256i)all);
        for (int j = 0; j < 8; ++j) s += v[j] * v[j];
    }
    for (; c < cols; ++c) {
        v8i m = {-1, 0, 0, 0, 0, 0, 0, 0};
        v8f v = (v8f)_mm256_maskload_ps(p + c, (__m256i)m);
        s += v[0] * v[0];
    }
    return s;
}
extern "C" __global__ void row_norms(const float* x, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    out[r] = sqrtf(row_sumsq(x + (long long)r * cols, cols));
}""",
    "row_norms",
)


def row_norms(x, out):
    rows, cols = x.shape
    _k(((rows + 127) // 128,), (128,), (x, out, np.int32(rows), np.int32(cols)))
