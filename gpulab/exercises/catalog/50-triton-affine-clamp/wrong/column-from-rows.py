# expect: expected
# family: mistake
"""Honest mistake: the column as the offset divided by the row count (a column-major habit). In a
row-major matrix the column is the offset modulo the width."""

import triton
import triton.language as tl


@triton.jit
def affine_clamp_kernel(x_ptr, scale_ptr, bias_ptr, out_ptr, n, cols, lo, hi, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    col = offsets // (n // cols)
    x = tl.load(x_ptr + offsets, mask=inside, other=0.0)
    scale = tl.load(scale_ptr + col, mask=inside, other=0.0)
    bias = tl.load(bias_ptr + col, mask=inside, other=0.0)
    tl.store(out_ptr + offsets, tl.minimum(tl.maximum(x * scale + bias, lo), hi), mask=inside)


def affine_clamp(x, scale, bias, lo, hi, out):
    n, cols = x.numel(), x.shape[-1]
    affine_clamp_kernel[(triton.cdiv(n, 1024),)](x, scale, bias, out, n, cols, lo, hi, BLOCK=1024)
