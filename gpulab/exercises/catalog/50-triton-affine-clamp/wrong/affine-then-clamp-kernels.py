# expect: one kernel
# family: loose-property
"""Shortcut (the taught fusion skipped): the affine step in one Triton kernel, written to out,
then a second kernel clamps out in place: two passes over memory, both the learner's. Passed on the interpreter
(correctness only) until a call was allowed one kernel of the learner's (2026-11-30)."""

import triton
import triton.language as tl


@triton.jit
def affine_kernel(x_ptr, scale_ptr, bias_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    col = offsets % cols
    x = tl.load(x_ptr + offsets, mask=inside, other=0.0)
    scale = tl.load(scale_ptr + col, mask=inside, other=0.0)
    bias = tl.load(bias_ptr + col, mask=inside, other=0.0)
    tl.store(out_ptr + offsets, x * scale + bias, mask=inside)


@triton.jit
def clamp_kernel(out_ptr, n, lo, hi, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    y = tl.load(out_ptr + offsets, mask=inside, other=0.0)
    tl.store(out_ptr + offsets, tl.minimum(tl.maximum(y, lo), hi), mask=inside)


def affine_clamp(x, scale, bias, lo, hi, out):
    n, cols = x.numel(), x.shape[-1]
    grid = (triton.cdiv(n, 1024),)
    affine_kernel[grid](x, scale, bias, out, n, cols, BLOCK=1024)
    clamp_kernel[grid](out, n, lo, hi, BLOCK=1024)
