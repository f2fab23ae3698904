# expect: values 80..100
# family: mistake
"""Honest mistake: exp(s*x) / sum(exp(s*x)) without subtracting the row's max: exp overflows
float32 above about 88, and inf / inf is NaN."""

import triton
import triton.language as tl


@triton.jit
def causal_softmax_kernel(x_ptr, out_ptr, T, scale, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * T + cols, mask=cols <= row % T, other=-float("inf")) * scale
    e = tl.exp(x)
    tl.store(out_ptr + row * T + cols, e / tl.sum(e, axis=0), mask=cols < T)


def causal_softmax(x, scale, out):
    batch, t, _ = x.shape
    causal_softmax_kernel[(batch * t,)](x, out, t, scale, BLOCK=triton.next_power_of_2(t))
