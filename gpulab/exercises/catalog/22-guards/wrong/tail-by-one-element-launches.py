# expect: threads past the end wrote anyway
# family: loose-property
# emulator-only: the bytes each launch stored are counted by the emulator; on a GPU the check's timed size is covered by whole blocks, so no tail launch runs there and its time is the reference's
"""Shortcut (no guard, no rounding up): the whole blocks (n // 256 of them) run an unguarded
kernel, and each element of the tail gets a launch of its own, a block of 32 threads that all
write that one element. Every launch is a whole number of warps and no thread ever lies past n,
so the guard this exercise teaches is never written. Before the fix: pass (on the emulator; on
a GPU the timed size needs no tail launch, so gold). The emulator counts the bytes each launch
stores: 32 writes of one element are more than the output holds ("threads past the end wrote
anyway")."""

import cupy as cp

_body = cp.RawKernel(
    r"""
extern "C" __global__ void leaky(const float* a, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = a[i];
    out[i] = v > 0.0f ? v : v * 0.01f;
}""",
    "leaky",
)
_one = cp.RawKernel(
    r"""
extern "C" __global__ void leaky_one(const float* a, float* out) {
    float v = a[0];
    out[0] = v > 0.0f ? v : v * 0.01f;
}""",
    "leaky_one",
)


def leaky_relu(a, out):
    n = a.size
    blocks = n // 256
    if blocks:
        _body((blocks,), (256,), (a, out))
    for j in range(blocks * 256, n):
        _one((1,), (32,), (a[j:], out[j:]))
