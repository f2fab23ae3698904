# expect: one thread of your launches touched
# family: property-proxy
# emulator-only: which thread walks is counted as the kernel runs on the emulator; on a GPU its 64 launches of 32 threads clear the thread count, and its time grades it
"""Shortcut (a red team's, 2026-11-30; passed on the emulator before the rule): the serial loop, cut into 64 launches. Each launch's thread 0 walks 1/64 of the
array and carries the running total in a device int to the next launch; the other threads
idle. The busiest-thread rule is read per launch (max over launches), so each walker touches
~n/32 values, under n/16; 64 launches x 32 threads clear the 256-threads rule."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void walk_part(const int* x, int* out, int* carry, long long lo, long long hi) {
    if (threadIdx.x != 0) return;
    int acc = carry[0];
    for (long long i = lo; i < hi; ++i) { acc += x[i]; out[i] = acc; }
    carry[0] = acc;
}""",
    "walk_part",
)

PARTS = 64


def cumsum(x, out):
    n = x.size
    carry = cp.zeros(1, dtype=cp.int32)
    step = -(-n // PARTS)
    for p in range(PARTS):
        lo, hi = min(n, p * step), min(n, (p + 1) * step)
        _k((1,), (32,), (x, out, carry, np.int64(lo), np.int64(hi)))
