# expect: turns off the instrumentation | no_sanitize
# family: writes-what-check-reads
# emulator-only: the attribute turns off what the emulator counts each thread's accesses by; a GPU build ignores it, and the GPU times the one thread's walk
"""histogram: one thread counts everything, hidden from the emulator's per-thread access counts.

Trick (family: "the taught structure skipped", past the emulator rule that closed the memcpy
version, wrong/one-thread-memcpy.py): the loop lives in a device function marked
__attribute__((no_sanitize("thread"))), so ThreadSanitizer's load/store callbacks, which are
how the emulator counts each thread's global accesses (and checks bounds and races), are never
called for it.  256 threads are launched; thread 0 of block 0 does all the work.

Before the fix, verdict (seed 1777244789): {"verdict": "pass", "message": "all 8 input sets correct (seed 1777244789); emulator: correctness only, no speed grade (your CUDA C ran on the CPU emulator)", "grade": "pass"}
"""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
static __attribute__((no_sanitize("thread"))) __device__ void count(const int* x, int* hist, long long n) {
    for (int b = 0; b < 256; ++b) hist[b] = 0;
    for (long long i = 0; i < n; ++i) hist[x[i]] += 1;
}
extern "C" __global__ void h(const int* x, int* hist, long long n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) count(x, hist, n);
}""",
    "h",
)


def histogram(x, hist):
    _k((1,), (256,), (x, hist, np.int64(x.size)))
