# expect: one thread of your launches touched
# family: property-proxy
# emulator-only: which thread walks is counted as the kernel runs on the emulator; on a GPU its 64 launches of 32 threads clear the thread count, and its time grades it
"""Shortcut (a red team's, 2026-11-30; passed on the emulator before the rule): one thread counts everything, no atomics, no shared bins, the serial loop cut into
64 launches of one working thread each (the histogram carried in `hist` between them). The
busiest-thread rule is read per launch, so each walker touches ~3n/64 accesses (a read of x, a read and a write of hist), under n/16."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void count_part(const int* x, int* hist, long long lo, long long hi) {
    if (threadIdx.x != 0) return;
    for (long long i = lo; i < hi; ++i) hist[x[i]] += 1;
}""",
    "count_part",
)

PARTS = 64


def histogram(x, hist):
    n = x.size
    hist.fill(0)
    step = -(-n // PARTS)
    for p in range(PARTS):
        lo, hi = min(n, p * step), min(n, (p + 1) * step)
        _k((1,), (32,), (x, hist, np.int64(lo), np.int64(hi)))
