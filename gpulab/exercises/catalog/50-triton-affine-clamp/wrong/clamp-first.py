# expect: expected
# family: mistake
"""Honest mistake: the clamp applied to x before the scale and bias, not to the result."""

import triton
import triton.language as tl


@triton.jit
def affine_clamp_kernel(x_ptr, scale_ptr, bias_ptr, out_ptr, n, cols, lo, hi, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    col = offsets % cols
    x = tl.minimum(tl.maximum(tl.load(x_ptr + offsets, mask=inside, other=0.0), lo), hi)
    scale = tl.load(scale_ptr + col, mask=inside, other=0.0)
    bias = tl.load(bias_ptr + col, mask=inside, other=0.0)
    tl.store(out_ptr + offsets, x * scale + bias, mask=inside)


def affine_clamp(x, scale, bias, lo, hi, out):
    n, cols = x.numel(), x.shape[-1]
    affine_clamp_kernel[(triton.cdiv(n, 1024),)](x, scale, bias, out, n, cols, lo, hi, BLOCK=1024)
