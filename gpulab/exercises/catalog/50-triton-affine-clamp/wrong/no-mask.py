# expect: wrote past the end | illegal memory access
# family: mistake
"""Honest mistake: no mask on the store. The last program's lanes past n write past the end of
out whenever n is no multiple of the block."""

import triton
import triton.language as tl


@triton.jit
def affine_clamp_kernel(x_ptr, scale_ptr, bias_ptr, out_ptr, n, cols, lo, hi, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    col = offsets % cols
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    y = x * tl.load(scale_ptr + col) + tl.load(bias_ptr + col)
    tl.store(out_ptr + offsets, tl.minimum(tl.maximum(y, lo), hi))


def affine_clamp(x, scale, bias, lo, hi, out):
    n, cols = x.numel(), x.shape[-1]
    affine_clamp_kernel[(triton.cdiv(n, 1024),)](x, scale, bias, out, n, cols, lo, hi, BLOCK=1024)
