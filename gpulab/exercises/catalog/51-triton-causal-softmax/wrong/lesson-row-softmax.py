# expect: expected
# family: mistake
"""Honest mistake: the lesson's row softmax with only the width as its mask: every row sees the
future, so each row but the last of a matrix is normalised over columns it must not see."""

import triton
import triton.language as tl


@triton.jit
def causal_softmax_kernel(x_ptr, out_ptr, T, scale, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK)
    inside = cols < T
    x = tl.load(x_ptr + row * T + cols, mask=inside, other=-float("inf")) * scale
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * T + cols, e / tl.sum(e, axis=0), mask=inside)


def causal_softmax(x, scale, out):
    batch, t, _ = x.shape
    causal_softmax_kernel[(batch * t,)](x, out, t, scale, BLOCK=triton.next_power_of_2(t))
