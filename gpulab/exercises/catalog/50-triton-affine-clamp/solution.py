"""A per-column scale and bias, then a clamp, in one Triton kernel over the flattened matrix."""

import triton
import triton.language as tl


@triton.jit
def affine_clamp_kernel(x_ptr, scale_ptr, bias_ptr, out_ptr, n, cols, lo, hi, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n  # the last block runs past the end
    col = offsets % cols  # row-major: the column repeats every `cols` elements
    x = tl.load(x_ptr + offsets, mask=inside, other=0.0)
    scale = tl.load(scale_ptr + col, mask=inside, other=0.0)
    bias = tl.load(bias_ptr + col, mask=inside, other=0.0)
    y = tl.minimum(tl.maximum(x * scale + bias, lo), hi)
    tl.store(out_ptr + offsets, y, mask=inside)


def affine_clamp(x, scale, bias, lo, hi, out):
    n, cols = x.numel(), x.shape[-1]
    block = 1024
    grid = (triton.cdiv(n, block),)
    affine_clamp_kernel[grid](x, scale, bias, out, n, cols, lo, hi, BLOCK=block)
