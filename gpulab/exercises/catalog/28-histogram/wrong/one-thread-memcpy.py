# expect: a thread walking the array
# family: loose-property
# emulator-only: on a GPU the compiled code cannot say which thread does the work (the emulator counts it as it runs); the GPU times it, ungraded beside the expert
"""Shortcut (the taught structure skipped, hidden from the emulator's per-thread count): 256
threads are started but thread 0 counts everything, a CPU loop on the GPU. It reads the array
in 1 KiB chunks with memcpy (legal in CUDA device code) into a local buffer and counts into a
local table: the emulator counts global accesses through the compiler's load/store
instrumentation, which a memcpy call skips, so 'the busiest thread' stays at 256 stores."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void h(const int* x, int* hist, long long n) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    int counts[256];
    int chunk[256];
    for (int b = 0; b < 256; ++b) counts[b] = 0;
    for (long long i = 0; i < n; i += 256) {
        long long m = n - i < 256 ? n - i : 256;
        memcpy(chunk, x + i, m * sizeof(int));
        for (long long j = 0; j < m; ++j) counts[chunk[j]] += 1;
    }
    memcpy(hist, counts, sizeof counts);
}""",
    "h",
)


def histogram(x, hist):
    _k((1,), (256,), (x, hist, np.int64(x.size)))
