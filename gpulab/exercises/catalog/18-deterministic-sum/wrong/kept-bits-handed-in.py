# expect: work kept from an earlier call | the library may allocate, not compute or copy
# family: memo
"""A shortcut: memo-by-address.py made to look like work. Every run launches the same kernels
(the atomic sum, then a one-thread kernel that writes a number into out), so a run on new values
launches what a repeat does; but on a repeat the number written is the kept answer, handed to
the kernel as an argument, so the bits never change."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void atomic_sum(const float* x, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i < n; i += (long long)blockDim.x * gridDim.x) atomicAdd(out, x[i]);
}
extern "C" __global__ void put(float* out, float v) { if (threadIdx.x == 0) out[0] = v; }
"""
_mod = cp.RawModule(code=SOURCE)
_atomic, _put = _mod.get_function("atomic_sum"), _mod.get_function("put")
_kept = {}


def det_sum(x, out):
    n = x.size
    key = (n, getattr(x.data, "ptr", None) or x.__array_interface__["data"][0])  # CuPy, emulator
    _put((1,), (1,), (out, np.float32(0)))
    blocks = max(1, min(8 * cp.cuda.Device().attributes["MultiProcessorCount"], (n + 255) // 256))
    _atomic((blocks,), (256,), (x, out, np.int64(n)))
    kept = _kept.setdefault(key, float(out[0]))
    _put((1,), (1,), (out, np.float32(kept)))
