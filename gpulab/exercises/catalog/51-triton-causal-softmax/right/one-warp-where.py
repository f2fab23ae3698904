# why: one warp per row (num_warps=1), a block twice the next power of two, the future masked after the load with tl.where instead of in it
"""Causal softmax loading the whole row and masking the future with tl.where."""

import triton
import triton.language as tl


@triton.jit
def causal_softmax_kernel(x_ptr, out_ptr, T, scale, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK)
    inside = cols < T
    x = tl.load(x_ptr + row * T + cols, mask=inside, other=0.0)
    x = tl.where(cols <= row % T, x * scale, -float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * T + cols, e / tl.sum(e, axis=0), mask=inside)


def causal_softmax(x, scale, out):
    batch, t, _ = x.shape
    block = 2 * triton.next_power_of_2(t)
    causal_softmax_kernel[(batch * t,)](x, out, t, scale, BLOCK=block, num_warps=1)
