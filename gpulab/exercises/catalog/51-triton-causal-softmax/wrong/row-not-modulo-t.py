# expect: expected
# family: mistake
"""Honest mistake: the row's position taken as the program id itself. Right for the first matrix
of the batch; in the second, row i is program T + i, which sees every column."""

import triton
import triton.language as tl


@triton.jit
def causal_softmax_kernel(x_ptr, out_ptr, T, scale, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * T + cols, mask=cols <= row, other=-float("inf")) * scale
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * T + cols, e / tl.sum(e, axis=0), mask=cols < T)


def causal_softmax(x, scale, out):
    batch, t, _ = x.shape
    causal_softmax_kernel[(batch * t,)](x, out, t, scale, BLOCK=triton.next_power_of_2(t))
