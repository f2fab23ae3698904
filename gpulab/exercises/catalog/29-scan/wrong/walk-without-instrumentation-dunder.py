# expect: turns off the instrumentation | no_sanitize
# family: writes-what-check-reads
# emulator-only: the attribute turns off what the emulator counts each thread's accesses by; a GPU build ignores it, and the GPU times the one thread's walk
"""scan: one thread walks the whole array; the emulator's counting turned off by
__attribute__((__no_sanitize__("thread"))).

Trick (family: "the emulator's counting turned off"): _UNCOUNTED is r"\b(?:no_sanitize\\w*|...)\b"; in
"__no_sanitize__" there is no word boundary before "no" (underscores are word characters), so the
double-underscore spelling, which g++ accepts as the same attribute, is not matched.
__attribute__((__no_sanitize_thread__)) passed too (seed 3499578349).

Before the fix, verdict: {"verdict": "pass", "grade": "pass", "message": "all 8 input sets correct (seed 3787558210); emulator: correctness only"}
Fix: match the attribute names with leading/trailing underscores stripped: r"(?<![A-Za-z0-9])_*(?:no_sanitize\\w*|disable_sanitizer_instrumentation|no_instrument_function)_*\b" (GCC and clang accept __name__ for every attribute), or better, read the instrumentation from the object (count __tsan_* calls per function / refuse functions with loads and no __tsan_read) instead of the source.
"""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
static __attribute__((__no_sanitize__("thread"))) __device__ void walk(const int* x, int* out, long long n) {
    int acc = 0;
    for (long long i = 0; i < n; ++i) { acc += x[i]; out[i] = acc; }
}
extern "C" __global__ void walk_scan(const int* x, int* out, long long n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) walk(x, out, n);
}""",
    "walk_scan",
)


def cumsum(x, out):
    _k((1,), (256,), (x, out, np.int64(x.size)))
