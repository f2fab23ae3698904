# expect: never written
# family: mistake
"""Honest mistake: the store masked like the load, so the columns after the diagonal are never
written: they keep whatever out held (NaN here), not the zeros the statement asks for."""

import triton
import triton.language as tl


@triton.jit
def causal_softmax_kernel(x_ptr, out_ptr, T, scale, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK)
    seen = cols <= row % T
    x = tl.load(x_ptr + row * T + cols, mask=seen, other=-float("inf")) * scale
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * T + cols, e / tl.sum(e, axis=0), mask=seen)


def causal_softmax(x, scale, out):
    batch, t, _ = x.shape
    causal_softmax_kernel[(batch * t,)](x, out, t, scale, BLOCK=triton.next_power_of_2(t))
