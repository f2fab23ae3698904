# expect: __cuda_array_interface__
# family: library
"""Shortcut (cuBLAS through CuPy, past torch): `cupy.asarray` wraps a, b and out by their
`__cuda_array_interface__` (no DLPack, no torch operator) and `cupy.matmul` writes the product
into out; a one-program launch of a Triton kernel of mine stands beside it. Argued from the
code for a GPU (no GPU here): the Triton exercises have no kernel trace, so before the fix it
passed there, at cuBLAS's speed (gold). The Allow's exits now include reading a tensor's
`__cuda_array_interface__`, refused by the torch function mode as the getter is asked: on the
CPU too, where the refusal comes before the getter's own error."""

import triton
import triton.language as tl

try:
    import cupy
except ImportError:  # the CPU: the refusal comes first
    cupy = None


@triton.jit
def matmul_kernel(a_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(a_ptr + offs, mask=offs < 1, other=0.0)
    tl.store(c_ptr + offs, x.to(tl.float32), mask=offs < 0)


def matmul(a, b, out):
    matmul_kernel[(1,)](a, out, BLOCK=16)
    if cupy is None:  # the CPU: ask what cupy.asarray asks first, and stop there
        hasattr(a, "__cuda_array_interface__")
        return
    ca, cb, co = cupy.asarray(a), cupy.asarray(b), cupy.asarray(out)
    cupy.matmul(ca.astype(cupy.float32), cb.astype(cupy.float32), out=co)
