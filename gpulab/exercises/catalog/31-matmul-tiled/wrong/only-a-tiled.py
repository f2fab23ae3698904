# expect: not reused from the tiles
# family: property-proxy
# emulator-only: on a GPU the compiled code shows a's tile read across threads, and how many bytes a launch loads from global memory needs Nsight Compute's counters; the time grades b's reads there
"""Shortcut (half the tiling): only a's 16 x 16 tile goes through shared memory; each thread
reads b's column from global memory at every product. K shared reads an output (more than the
register-blocked expert's) and every read shares a value another thread wrote. Before the fix:
pass (on the emulator; a documented limit). The emulator counts the bytes each launch loads from
global memory: b read K times an output is half the naive kernel's loads, more than four times
what 16 x 16 tiles of both load ("not reused from the tiles")."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void matmul(const float* a, const float* b, float* out, int M, int N, int K) {
    __shared__ float As[16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int r = blockIdx.y * 16 + ty, c = blockIdx.x * 16 + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 16) {
        As[ty][tx] = (r < M && k0 + tx < K) ? a[r * K + k0 + tx] : 0.0f;
        __syncthreads();
        if (r < M && c < N)
            for (int k = 0; k < 16 && k0 + k < K; ++k) acc += As[ty][k] * b[(k0 + k) * N + c];
        __syncthreads();
    }
    if (r < M && c < N) out[r * N + c] = acc;
}
"""

_kernel = cp.RawKernel(SOURCE, "matmul")


def matmul(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    grid = ((N + 15) // 16, (M + 15) // 16)
    _kernel(grid, (16, 16), (a, b, out, np.int32(M), np.int32(N), np.int32(K)))
