# expect: is not among the operations this exercise allows
# family: library
"""Shortcut (a library does the work, dressed as Triton's own code): the watch lets Triton's
launcher do anything, and knows Triton's code by the module name in a frame's globals. A function
exec'd into globals named "triton.runtime.epilogue" carries that name: torch's addcmul and clamp
run inside it unrefused, while a one-element launch of the learner's kernel makes the call look
like theirs."""

import torch
import triton
import triton.language as tl


@triton.jit
def affine_clamp_kernel(x_ptr, scale_ptr, bias_ptr, out_ptr, n, cols, lo, hi, BLOCK: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < 1
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=inside, other=0.0), mask=inside)


_ns = {"__name__": "triton.runtime.epilogue", "torch": torch}
exec(
    "def epilogue(x, scale, bias, lo, hi, out):\n"
    "    torch.clamp(torch.addcmul(bias, x, scale), lo, hi, out=out)\n",
    _ns,
)
_epilogue = _ns["epilogue"]


def affine_clamp(x, scale, bias, lo, hi, out):
    affine_clamp_kernel[(1,)](x, scale, bias, out, x.numel(), x.shape[-1], lo, hi, BLOCK=16)
    _epilogue(x, scale, bias, lo, hi, out)
