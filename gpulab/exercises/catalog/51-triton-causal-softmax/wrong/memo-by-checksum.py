# expect: torch.Tensor.sum reaches aten.sum, which is not among the operations
# family: memo
"""Shortcut (a memo of content, keyed by a checksum): the answer for each input is kept, keyed by
its shape, scale and the sum of its values, and a later call on an input with the same key has
the kept rows copied into out by a one-pass copy kernel instead of computing the softmax again.
The timed calls come back to the same few inputs, so on a GPU most of them would be copies. The
checksum is a torch reduction the allowlist refuses, in every call, before anything is kept."""

import torch
import triton
import triton.language as tl

_kept: dict[tuple, torch.Tensor] = {}


@triton.jit
def causal_softmax_kernel(x_ptr, out_ptr, T, scale, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    i = row % T
    cols = tl.arange(0, BLOCK)
    base = row.to(tl.int64) * T
    seen = cols <= i
    x = tl.load(x_ptr + base + cols, mask=seen, other=-float("inf")) * scale
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + base + cols, e / tl.sum(e, axis=0), mask=cols < T)


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=inside), mask=inside)


def causal_softmax(x, scale, out):
    batch, t, _ = x.shape
    key = (tuple(x.shape), scale, float(x.sum()))
    kept = _kept.get(key)
    if kept is None:
        kept = _kept[key] = torch.empty_like(out)
        block = triton.next_power_of_2(t)
        causal_softmax_kernel[(batch * t,)](x, kept, t, scale, BLOCK=block)
    n = out.numel()
    copy_kernel[(triton.cdiv(n, 1024),)](kept, out, n, BLOCK=1024)
