# expect: into one launch
# family: loose-property
"""Shortcut (the taught fusion skipped, under one kernel's name): the unfused path's three
passes (scale and mask into out, each row's max and sum into two buffers, then normalise out)
written as one Triton function with a constexpr STAGE and launched three times. The one-kernel
rule told kernels apart by their function, so three launches of one passed on the
interpreter. Before the fix: pass. A call's launches of the learner's kernels are counted now,
an autotuner's trial launches apart: more than one is another pass over memory."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, max_ptr, sum_ptr, T, scale, BLOCK: tl.constexpr,
                   STAGE: tl.constexpr):  # fmt: skip
    row = tl.program_id(axis=0)
    cols = tl.arange(0, BLOCK)
    base = row.to(tl.int64) * T
    if STAGE == 0:
        i = row % T
        x = tl.load(x_ptr + base + cols, mask=cols <= i, other=-float("inf")) * scale
        tl.store(out_ptr + base + cols, x, mask=cols < T)
    elif STAGE == 1:
        s = tl.load(out_ptr + base + cols, mask=cols < T, other=-float("inf"))
        m = tl.max(s, axis=0)
        tl.store(max_ptr + row, m)
        tl.store(sum_ptr + row, tl.sum(tl.exp(s - m), axis=0))
    else:
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
    for stage in range(3):
        softmax_kernel[(rows,)](x, out, row_max, row_sum, t, scale, BLOCK=block, STAGE=stage)
