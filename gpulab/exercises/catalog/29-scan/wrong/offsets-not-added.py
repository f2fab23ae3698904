# expect: wrong
# family: mistake
"""Inclusive prefix sum of int32: a scan per block, a scan of the block sums, then offsets."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void block_scan(const int* x, int* out, int* sums, int n) {
    __shared__ int s[BLOCK];
    int t = threadIdx.x;
    int i = blockIdx.x * BLOCK + t;
    s[t] = i < n ? x[i] : 0;
    __syncthreads();
    for (int offset = 1; offset < BLOCK; offset <<= 1) {
        int v = t >= offset ? s[t - offset] : 0;
        __syncthreads();
        s[t] += v;
        __syncthreads();
    }
    if (i < n) out[i] = s[t];
    if (t == BLOCK - 1) sums[blockIdx.x] = s[BLOCK - 1];
}

extern "C" __global__ void add_offsets(int* out, const int* scanned_sums, int n) {
    int i = blockIdx.x * BLOCK + threadIdx.x;
    // the offsets are never added: every block restarts from 0
}
"""

_scan = cp.RawKernel(SOURCE, "block_scan")
_add = cp.RawKernel(SOURCE, "add_offsets")


def cumsum(x, out):
    n = x.size
    blocks = (n + 255) // 256
    sums = cp.empty(blocks, dtype=cp.int32)
    _scan((blocks,), (256,), (x, out, sums, np.int32(n)))
    if blocks > 1:
        scanned = cp.empty_like(sums)
        cumsum(sums, scanned)
        _add((blocks,), (256,), (out, scanned, np.int32(n)))
