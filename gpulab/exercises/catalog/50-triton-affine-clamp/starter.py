"""out = clamp(x * scale[col] + bias[col], lo, hi), in one Triton kernel."""

import triton
import triton.language as tl


@triton.jit
def affine_clamp_kernel(x_ptr, scale_ptr, bias_ptr, out_ptr, n, cols, lo, hi, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)  # noqa: F841 - yours to use
    # TODO: this program's BLOCK offsets into the flattened matrix and a mask for those inside n;
    # each element's column, the scale and bias of that column, the clamp; store into out


def affine_clamp(x, scale, bias, lo, hi, out):
    n, cols = x.numel(), x.shape[-1]  # noqa: F841 - yours to use
    block = 1024  # noqa: F841
    # TODO: launch affine_clamp_kernel over enough programs of `block` elements to cover n
