# expect: threads past the end wrote anyway
# family: loose-property
# emulator-only: the bytes each launch stored are counted by the emulator; on a GPU the spare threads' rewrites are in-bounds and cost a sliver of the last wave, so its time passes for the reference's
"""Shortcut (the guard replaced by arithmetic): blocks rounded up, then the index taken modulo n,
so the spare threads of the last block rewrite elements 0, 1, ... with the values those already
hold. Nothing lands past the end and the answer is right, but every spare thread still reads and
writes, the opposite of the guard this exercise teaches (`min(i, n - 1)` is the same trick).
Before the fix: pass (on the emulator). The emulator counts the bytes each launch stores into
global memory: more than the output holds ("threads past the end wrote anyway")."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
extern "C" __global__ void leaky(const float* a, float* out, int n) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) % n;
    float v = a[i];
    out[i] = v > 0.0f ? v : v * 0.01f;
}""",
    "leaky",
)


def leaky_relu(a, out):
    n = a.size
    _k(((n + 255) // 256,), (256,), (a, out, np.int32(n)))
