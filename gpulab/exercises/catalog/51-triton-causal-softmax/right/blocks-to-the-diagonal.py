# why: the row walked in blocks of 128 that stop at the diagonal (an online max and rescaled sum, then a second pass writing the kept part and a third the zeros): works for any width
"""Causal softmax in passes over blocks of the row, touching no block past the diagonal.

Pass 1 keeps, per lane, the largest value seen (m) and the sum of exp(x - m); when m grows the
sum is rescaled by exp(old m - new m). Pass 2 writes exp(x - max) / sum up to the diagonal,
pass 3 zeros after it.
"""

import triton
import triton.language as tl


@triton.jit
def causal_softmax_kernel(x_ptr, out_ptr, T, scale, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    i = row % T
    x_row = x_ptr + row.to(tl.int64) * T
    o_row = out_ptr + row.to(tl.int64) * T
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, i + 1, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols <= i, other=-float("inf")) * scale
        new_m = tl.maximum(m, x)
        # a lane that has seen nothing yet has m = -inf: its rescale factor is taken as 0
        keep = tl.where(new_m == -float("inf"), 0.0, tl.exp(m - new_m))
        add = tl.where(new_m == -float("inf"), 0.0, tl.exp(x - new_m))
        s = s * keep + add
        m = new_m
    row_max = tl.max(m, axis=0)
    total = tl.sum(tl.where(m == -float("inf"), 0.0, s * tl.exp(m - row_max)), axis=0)
    for start in range(0, i + 1, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols <= i, other=-float("inf")) * scale
        tl.store(o_row + cols, tl.exp(x - row_max) / total, mask=cols <= i)
    for start in range(0, T, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        tl.store(o_row + cols, tl.zeros([BLOCK], tl.float32), mask=(cols > i) & (cols < T))


def causal_softmax(x, scale, out):
    batch, t, _ = x.shape
    causal_softmax_kernel[(batch * t,)](x, out, t, scale, BLOCK=128)
