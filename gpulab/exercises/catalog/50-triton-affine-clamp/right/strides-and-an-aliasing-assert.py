# why: a wrapper that reads strides and asserts x and out do not alias (data_ptr compared, never dereferenced)
"""affine clamp with a wrapper that reads strides, numel and checks aliasing (correct)"""

import triton
import triton.language as tl


@triton.jit
def _k(x_ptr, s_ptr, b_ptr, o_ptr, n, cols, sx, lo, hi, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    r = offs // cols
    c = offs % cols
    x = tl.load(x_ptr + r * sx + c, mask=m, other=0.0)
    s = tl.load(s_ptr + c, mask=m, other=0.0)
    b = tl.load(b_ptr + c, mask=m, other=0.0)
    tl.store(o_ptr + offs, tl.minimum(tl.maximum(x * s + b, lo), hi), mask=m)


def affine_clamp(x, scale, bias, lo, hi, out):
    assert x.stride(-1) == 1 and out.is_contiguous()
    assert x.data_ptr() != out.data_ptr(), "in-place not supported"
    n, cols = x.numel(), x.shape[-1]
    sx = x.stride(0) if x.dim() > 1 else cols
    _k[(triton.cdiv(n, 1024),)](x, scale, bias, out, n, cols, sx, lo, hi, BLOCK=1024)
