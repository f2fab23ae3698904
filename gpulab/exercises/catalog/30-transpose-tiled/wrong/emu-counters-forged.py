# expect: your kernel uses no shared memory | tile | another thread | emulator's counters
# family: writes-what-check-reads
"""Shortcut (a property faked, in the emulator's own bookkeeping): the naive strided transpose,
no tile. The kernel's C++ runs in the same translation unit as the emulator's runtime.h, so
outside NVRTC (`#ifndef __CUDACC__`) it bumps `emu::shared_touches` and `emu::shared_shares`, the
very counters the shared-memory, sharing and tile-traffic rules read. A __shared__ array is
declared (never touched) so the launch 'asks' for shared memory."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void transpose(const float* a, float* out, int rows, int cols) {
    __shared__ float tile[32][33];
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
#ifndef __CUDACC__
    emu::shared_touches += 4;
    emu::shared_shares += 2;
#endif
    if (r < rows && c < cols) out[(long long)c * rows + r] = a[(long long)r * cols + c];
}
"""

_kernel = cp.RawKernel(SOURCE, "transpose")


def transpose(a, out):
    rows, cols = a.shape
    grid = ((cols + 31) // 32, (rows + 31) // 32)
    _kernel(grid, (32, 32), (a, out, np.int32(rows), np.int32(cols)))
