# expect: expected
# family: mistake
"""Honest mistake: the scale applied to the difference from the unscaled max, after the
exponential: exp(x - max) ** scale is not exp(scale * x - max(scale * x)) once divided."""

import triton
import triton.language as tl


@triton.jit
def causal_softmax_kernel(x_ptr, out_ptr, T, scale, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * T + cols, mask=cols <= row % T, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * T + cols, e / tl.sum(e, axis=0) * scale, mask=cols < T)


def causal_softmax(x, scale, out):
    batch, t, _ = x.shape
    causal_softmax_kernel[(batch * t,)](x, out, t, scale, BLOCK=triton.next_power_of_2(t))
