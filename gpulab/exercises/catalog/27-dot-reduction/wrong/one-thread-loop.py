# expect: thread(s) for | a thread walking the array
# family: loose-property
"""Shortcut (taught structure skipped): one thread of one block walks both arrays serially.

Trick: `_k((1,), (1,), ...)`, a plain loop in the kernel; no shared memory, no tree, no barrier,
no atomic. dot-reduction's check has OWN_KERNEL = "raw" and nothing else about structure: no
SHARED_MEMORY rule (the exercise is titled "a block reduction in shared memory"), no
parallel_rule / busiest-thread rule (scan and histogram have one), no thread-count floor.
On the emulator it passes with no grade; on a GPU only its time would grade it.

Rule got past: none exists (missing structure rule).

Before the fix, verdict: pass / pass, "all 7 input sets correct (seed 598936177); emulator: correctness only".
Fix: give dot-reduction kc.parallel_rule (busiest thread <= n/16, >= 256 threads) and a SHARED_MEMORY (or shuffle) rule, as scan/histogram have.
"""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void dot1(const float* a, const float* b, float* out, long long n) {
    float s = 0.0f;
    for (long long i = 0; i < n; ++i) s += a[i] * b[i];
    out[0] = s;
}""",
    "dot1",
)


def dot(a, b, out):
    _k((1,), (1,), (a, b, out, np.int64(a.size)))
