# expect: a thread walking the array
# family: loose-property
# emulator-only: on a GPU the compiled code cannot say which thread walks the data (the emulator counts it as it runs); the GPU times it
"""scan (not in this brief's list; same rule as reduction-kernel): one thread walks the whole
array, reading and writing it in 256-int chunks by struct assignment. GCC's TSan instruments an
aggregate copy as ONE __tsan_read_range / __tsan_write_range, which the emulator counts with
weight 1, so the busiest thread reads as ~2n/256 accesses, under parallel_rule's n/16.
No attribute, nothing the source scan looks for.

Rule got past: kernel_checks.parallel_rule (busiest_thread on the emulator).

Before the fix, verdict: pass / pass, "all 8 input sets correct (seed 3143128937); emulator: correctness only".
Fix: as reduction-kernel-chunk-struct-walk.py (weight range accesses by bytes).
"""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
struct Chunk { int v[256]; };
extern "C" __global__ void walk_scan(const int* x, int* out, long long n) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    int acc = 0;
    long long i = 0;
    for (; i + 256 <= n; i += 256) {
        Chunk c = *(const Chunk*)(x + i);
        for (int k = 0; k < 256; ++k) { acc += c.v[k]; c.v[k] = acc; }
        *(Chunk*)(out + i) = c;
    }
    for (; i < n; ++i) { acc += x[i]; out[i] = acc; }
}""",
    "walk_scan",
)


def cumsum(x, out):
    _k((1,), (256,), (x, out, np.int64(x.size)))
