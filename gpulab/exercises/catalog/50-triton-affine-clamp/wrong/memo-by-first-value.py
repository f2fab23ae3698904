# expect: torch.Tensor.item reaches aten._local_scalar_dense, which is not among the operations
# family: memo
"""Shortcut (a memo of content, keyed by the first and last values): the answer is kept per
input buffer (its address and shape) with the first and last element it held, and a call whose
key matches has the kept answer copied into out by a copy kernel instead of the affine clamp.
A check that comes back to the same buffers with a few values changed would get stale rows.
Reading the key's two values into Python is a torch operation the allowlist refuses, in every
call of every machine, before anything is kept."""

import torch
import triton
import triton.language as tl

_kept: dict[tuple, torch.Tensor] = {}


@triton.jit
def affine_clamp_kernel(x_ptr, scale_ptr, bias_ptr, out_ptr, n, cols, lo, hi, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    col = offsets % cols
    x = tl.load(x_ptr + offsets, mask=inside, other=0.0)
    scale = tl.load(scale_ptr + col, mask=inside, other=0.0)
    bias = tl.load(bias_ptr + col, mask=inside, other=0.0)
    y = tl.minimum(tl.maximum(x * scale + bias, lo), hi)
    tl.store(out_ptr + offsets, y, mask=inside)


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=inside), mask=inside)


def affine_clamp(x, scale, bias, lo, hi, out):
    n, cols = x.numel(), x.shape[-1]
    grid = (triton.cdiv(n, 1024),)
    flat = x.view(-1)
    key = (x.data_ptr(), tuple(x.shape), lo, hi, flat[0].item(), flat[-1].item())
    kept = _kept.get(key)
    if kept is None:
        kept = _kept[key] = torch.empty_like(out)
        affine_clamp_kernel[grid](x, scale, bias, kept, n, cols, lo, hi, BLOCK=1024)
    copy_kernel[grid](kept, out, n, BLOCK=1024)
