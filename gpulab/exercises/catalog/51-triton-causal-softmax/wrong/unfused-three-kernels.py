# expect: one kernel
# family: loose-property
"""Shortcut (the taught fusion skipped): the unfused path, written as three Triton kernels of the
learner's: scale and mask the future into out, each row's max and sum into two small buffers,
then normalise out in place. Three passes over the scores, each the learner's own. Passed on the
interpreter until a call was allowed one kernel of the learner's (2026-11-30)."""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_mask_kernel(x_ptr, out_ptr, T, scale, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    i = row % T
    cols = tl.arange(0, BLOCK)
    base = row.to(tl.int64) * T
    x = tl.load(x_ptr + base + cols, mask=cols <= i, other=-float("inf")) * scale
    tl.store(out_ptr + base + cols, x, mask=cols < T)


@triton.jit
def stats_kernel(out_ptr, max_ptr, sum_ptr, T, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK)
    base = row.to(tl.int64) * T
    s = tl.load(out_ptr + base + cols, mask=cols < T, other=-float("inf"))
    m = tl.max(s, axis=0)
    tl.store(max_ptr + row, m)
    tl.store(sum_ptr + row, tl.sum(tl.exp(s - m), axis=0))


@triton.jit
def normalise_kernel(out_ptr, max_ptr, sum_ptr, T, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK)
    base = row.to(tl.int64) * T
    s = tl.load(out_ptr + base + cols, mask=cols < T, other=-float("inf"))
    m = tl.load(max_ptr + row)
    total = tl.load(sum_ptr + row)
    tl.store(out_ptr + base + cols, tl.exp(s - m) / total, mask=cols < T)


def causal_softmax(x, scale, out):
    batch, t, _ = x.shape
    rows = batch * t
    block = triton.next_power_of_2(t)
    row_max = torch.empty(rows, device=x.device, dtype=torch.float32)
    row_sum = torch.empty(rows, device=x.device, dtype=torch.float32)
    scale_mask_kernel[(rows,)](x, out, t, scale, BLOCK=block)
    stats_kernel[(rows,)](out, row_max, row_sum, t, BLOCK=block)
    normalise_kernel[(rows,)](out, row_max, row_sum, t, BLOCK=block)
