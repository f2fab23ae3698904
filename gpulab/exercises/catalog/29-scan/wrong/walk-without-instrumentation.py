# expect: turns off the instrumentation | no_sanitize
# family: writes-what-check-reads
# emulator-only: the attribute turns off what the emulator counts each thread's accesses by; a GPU build ignores it, and the GPU times the one thread's walk
"""scan: one thread walks the whole array, hidden from the emulator's access counts.

Trick (family: "the taught structure skipped" / "idle threads", past its emulator rule): the
emulator counts each thread's global accesses through ThreadSanitizer's instrumentation
(__tsan_read4 ...), and its own runtime marks its functions no_sanitize("thread") (EMU_RAW) so
they are not counted.  The kernel source may use the same attribute: thread 0 of block 0 walks
the array in an EMU_RAW helper, so the busiest thread reads as having touched nothing, and the
"one thread of your launches touched ..." rule never fires.  256 threads are launched, as the
thread-count rule asks.  (Same file as the catalog's wrong/one-thread-of-256.py, plus the
attribute.)

Before the fix, verdict (seed 4089312687): {"verdict": "pass", "message": "all 8 input sets correct (seed 4089312687); emulator: correctness only, no speed grade (your CUDA C ran on the CPU emulator)", "grade": "pass"}
"""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
static __attribute__((no_sanitize("thread"))) __device__ void walk(const int* x, int* out, long long n) {
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
