# why: two passes over the row in blocks of 256 (a running max and a rescaled running sum), any width
"""Row softmax in two passes over blocks of the row: the 'online softmax' recurrence.

Pass 1 keeps, per lane, the largest value seen (m) and the sum of exp(x - m); when m grows the
sum is rescaled by exp(old m - new m). Pass 2 writes exp(x - max) / sum.
"""

import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, cols, x_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    x_row = x_ptr + row * x_stride
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + offsets, mask=offsets < cols, other=-float("inf"))
        new_m = tl.maximum(m, x)
        # A lane that has seen nothing yet has m = -inf: its rescale factor is taken as 0
        scale = tl.where(new_m == -float("inf"), 0.0, tl.exp(m - new_m))
        add = tl.where(new_m == -float("inf"), 0.0, tl.exp(x - new_m))
        s = s * scale + add
        m = new_m
    row_max = tl.max(m, axis=0)
    total = tl.sum(tl.where(m == -float("inf"), 0.0, s * tl.exp(m - row_max)), axis=0)
    for start in range(0, cols, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        inside = offsets < cols
        x = tl.load(x_row + offsets, mask=inside, other=-float("inf"))
        tl.store(out_ptr + row * out_stride + offsets, tl.exp(x - row_max) / total, mask=inside)


def softmax(x, out):
    rows, cols = x.shape
    softmax_kernel[(rows,)](x, out, cols, x.stride(0), out.stride(0), BLOCK=256)
