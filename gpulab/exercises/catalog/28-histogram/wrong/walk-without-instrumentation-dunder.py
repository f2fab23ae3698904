# expect: turns off the instrumentation | no_sanitize
# family: writes-what-check-reads
# emulator-only: the attribute turns off what the emulator counts each thread's accesses by; a GPU build ignores it, and the GPU times the one thread's walk
"""histogram: one thread counts the whole array inside a __attribute__((__no_sanitize__("thread")))
helper (same trick as scan-dunder-no-sanitize.py: no \b before "no_sanitize" in "__no_sanitize__").

Before the fix, verdict: {"verdict": "pass", "grade": "pass", "message": "all 8 input sets correct (seed 4149033328); emulator: correctness only"}
Fix: match the attribute names with leading/trailing underscores stripped: r"(?<![A-Za-z0-9])_*(?:no_sanitize\\w*|disable_sanitizer_instrumentation|no_instrument_function)_*\b" (GCC and clang accept __name__ for every attribute), or better, read the instrumentation from the object (count __tsan_* calls per function / refuse functions with loads and no __tsan_read) instead of the source.
"""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
static __attribute__((__no_sanitize__("thread"))) __device__ void count(const int* x, int* hist, long long n) {
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
