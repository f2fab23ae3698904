# expect: 1x2: | 2x31: | wrote past the end | a read before its start or past its end | illegal memory access
"""No mask on the row's load and store: BLOCK is a power of two, the row is not."""

import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, cols, x_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * x_stride + offsets)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + offsets, e / tl.sum(e, axis=0))


def softmax(x, out):
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    softmax_kernel[(rows,)](x, out, cols, x.stride(0), out.stride(0), BLOCK=block)
