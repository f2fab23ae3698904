# expect: your code uses ctypes
# family: escape
"""Shortcut (work done by NumPy through the tensors' memory, a pointer by another door): as
wrong/host-through-data-ptr.py, but the address from `data_ptr()` (allowed to a wrapper) becomes
a ctypes array through `ctypes.cast(addr, POINTER(c_uint16 * n)).contents`, which NumPy reads by
the buffer protocol (`np.asarray`), and the answer goes back with `ctypes.memmove`. None of the
names the source scan bans (`from_address`, `frombuffer`, `from_buffer`, `ctypeslib`,
`UnownedMemory`) appears. A Triton kernel of mine is launched as a decoy."""

import ctypes

import numpy as np
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, M, BM: tl.constexpr):
    offs = tl.arange(0, BM)
    a = tl.load(a_ptr + offs, mask=offs < M, other=0.0)  # noqa: F841 - loaded, unused


def _read(t, shape, ctype, dtype):
    n = int(np.prod(shape))
    arr = ctypes.cast(t.data_ptr(), ctypes.POINTER(ctype * n)).contents
    return np.asarray(arr).view(dtype).reshape(shape)


def matmul(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    c = _read(a, (M, K), ctypes.c_uint16, np.float16).astype(np.float32) @ _read(
        b, (K, N), ctypes.c_uint16, np.float16
    ).astype(np.float32)
    c = np.ascontiguousarray(c, dtype=np.float32)
    ctypes.memmove(out.data_ptr(), c.ctypes.data, c.nbytes)
    matmul_kernel[(1,)](a, 1, BM=16)
