# expect: never written
# family: mistake
"""Honest mistake: n // BLOCK programs. The elements after the last whole block are never
computed (and with fewer than 1024 elements, none is)."""

import triton
import triton.language as tl


@triton.jit
def affine_clamp_kernel(x_ptr, scale_ptr, bias_ptr, out_ptr, n, cols, lo, hi, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    col = offsets % cols
    x = tl.load(x_ptr + offsets, mask=inside, other=0.0)
    y = x * tl.load(scale_ptr + col, mask=inside, other=0.0)
    y = y + tl.load(bias_ptr + col, mask=inside, other=0.0)
    tl.store(out_ptr + offsets, tl.minimum(tl.maximum(y, lo), hi), mask=inside)


def affine_clamp(x, scale, bias, lo, hi, out):
    n, cols = x.numel(), x.shape[-1]
    affine_clamp_kernel[(max(1, n // 1024),)](x, scale, bias, out, n, cols, lo, hi, BLOCK=1024)
