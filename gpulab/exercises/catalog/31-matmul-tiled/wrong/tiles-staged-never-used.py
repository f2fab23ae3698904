# expect: not reused from the tiles
# family: property-proxy
# emulator-only: on a GPU the compiled code shows tiles written and read across threads, and how many bytes a launch loads from global memory needs Nsight Compute's counters; the time grades the naive loop there
"""Shortcut (tiles staged, never used for the product): each step along K stages 16 x 16 tiles
of a and b in shared memory, syncs, and reads one neighbour's value of each into a sum that is
multiplied by zero; the product itself is the naive loop over K from global memory. Shared
memory is used, shared between threads, and touched more than K/16 times an output. Before the
fix: pass (on the emulator). The emulator counts the bytes each launch loads from global memory:
about the naive kernel's 2K values an output, more than four times what 16 x 16 tiles load
("not reused from the tiles")."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void matmul(const float* a, const float* b, float* out, int M, int N, int K) {
    __shared__ float As[16][16];
    __shared__ float Bs[16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int r = blockIdx.y * 16 + ty, c = blockIdx.x * 16 + tx;
    float acc = 0.0f, junk = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 16) {
        As[ty][tx] = (r < M && k0 + tx < K) ? a[r * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (c < N && k0 + ty < K) ? b[(k0 + ty) * N + c] : 0.0f;
        __syncthreads();
        junk += As[ty][(tx + 1) & 15] + Bs[(ty + 1) & 15][tx];
        __syncthreads();
    }
    if (r < M && c < N) {
        for (int k = 0; k < K; ++k) acc += a[r * K + k] * b[k * N + c];
        out[r * N + c] = acc + junk * 0.0f;
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "matmul")


def matmul(a, b, out):
    M, K = a.shape
    N = b.shape[1]
    grid = ((N + 15) // 16, (M + 15) // 16)
    _kernel(grid, (16, 16), (a, b, out, np.int32(M), np.int32(N), np.int32(K)))
