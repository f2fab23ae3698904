# expect: a thread walking a row
# family: loose-property
# emulator-only: on a GPU the compiled code cannot say which thread walks the data (the emulator counts it as it runs); the GPU times it
"""Shortcut (taught structure skipped; the emulator's busiest-thread count fooled).

Trick: one thread per row walks its whole row serially (wrong/rawkernel-serial-row.py), but
reads it in 256-float chunks by a struct assignment (`Chunk c = *(const Chunk*)p`). GCC's
ThreadSanitizer instruments an aggregate copy as ONE `__tsan_read_range(p, 1024)` call, and the
emulator's `access()` adds weight 1 for it, so a 4096-value row counts as ~16 global accesses
(the row rule refuses > cols/4 = 1024). Tail values are read one by one.

Rule got past: kernel_checks.row_rule (busiest thread's global accesses, emulator).

Before the fix, verdict: pass / pass, "all 7 input sets correct (seed 2549528593); emulator: correctness only". wrong/rawkernel-serial-row.py fails in the same minute ("touched 4,097 values").
Fix: count an access by its bytes (weight = ceil(n/4) in access() for __tsan_read_range/write_range and the 16-byte calls), as span() already does for memcpy.
"""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
struct Chunk { float v[256]; };
extern "C" __global__ void row_norms(const float* x, float* out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* p = x + (long long)r * cols;
    float s = 0.0f;
    int c = 0;
    for (; c + 256 <= cols; c += 256) {
        Chunk ch = *(const Chunk*)(p + c);
        for (int k = 0; k < 256; ++k) s += ch.v[k] * ch.v[k];
    }
    for (; c < cols; ++c) s += p[c] * p[c];
    out[r] = sqrtf(s);
}""",
    "row_norms",
)


def row_norms(x, out):
    rows, cols = x.shape
    _k(((rows + 127) // 128,), (128,), (x, out, np.int32(rows), np.int32(cols)))
