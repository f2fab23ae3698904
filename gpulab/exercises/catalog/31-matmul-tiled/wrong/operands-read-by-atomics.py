# expect: not reused from the tiles
# family: property-proxy
# emulator-only: the loads hidden in atomics were hidden from the emulator's counts; on a GPU two atomics a product are slower than the naive kernel, and the time grades them
"""Shortcut (loads the count did not see): 16 x 16 tiles of a and b are staged and multiplied
into a sum that is thrown away (times zero); the product itself reads each operand from global
memory with `atomicOr(p, 0)`, which changes nothing and returns the value. The emulator counted
an atomic as neither a load nor a store, so the call's loads were the tiles' alone. Before the
fix: pass (on the emulator). An atomic now counts as a load and a store of its bytes ("not
reused from the tiles")."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void matmul(const float* a, const float* b, float* out, int M, int N, int K) {
    __shared__ float As[16][16];
    __shared__ float Bs[16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int r = blockIdx.y * 16 + ty, c = blockIdx.x * 16 + tx;
    float junk = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 16) {
        As[ty][tx] = (r < M && k0 + tx < K) ? a[r * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (c < N && k0 + ty < K) ? b[(k0 + ty) * N + c] : 0.0f;
        __syncthreads();
        for (int k = 0; k < 16; ++k) junk += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (r < M && c < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) {
            unsigned ua = atomicOr((unsigned*)&a[r * K + k], 0u);
            unsigned ub = atomicOr((unsigned*)&b[k * N + c], 0u);
            acc += __uint_as_float(ua) * __uint_as_float(ub);
        }
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
