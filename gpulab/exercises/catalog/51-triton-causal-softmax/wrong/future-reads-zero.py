# expect: expected
# family: mistake
"""Honest mistake: the masked lanes load 0.0. Each future column then adds exp(0 - max) to the
row's sum (and wins the max when the row is all negative)."""

import triton
import triton.language as tl


@triton.jit
def causal_softmax_kernel(x_ptr, out_ptr, T, scale, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK)
    seen = cols <= row % T
    x = tl.load(x_ptr + row * T + cols, mask=seen, other=0.0) * scale
    e = tl.exp(x - tl.max(x, axis=0))
    p = tl.where(seen, e / tl.sum(e, axis=0), 0.0)
    tl.store(out_ptr + row * T + cols, p, mask=cols < T)


def causal_softmax(x, scale, out):
    batch, t, _ = x.shape
    causal_softmax_kernel[(batch * t,)](x, out, t, scale, BLOCK=triton.next_power_of_2(t))
