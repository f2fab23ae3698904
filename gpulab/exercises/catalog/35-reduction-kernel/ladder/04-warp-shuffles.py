# rung: warp shuffles: each warp sums its 32 values in registers with __shfl_down_sync and its lane 0 keeps the warp's running total, so a chunk needs no shared-memory tree and no barrier, one barrier a row
"""Rung 4: the tree inside a warp by register shuffles (the warp reduction of NVIDIA's
"Faster Parallel Reductions on Kepler"). The 32 lanes of a warp exchange registers directly,
in five steps of __shfl_down_sync; lane 0 adds each chunk's warp sum to its own running total,
so the eight warps of the block never wait for one another until the row ends, when their
eight totals meet in shared memory. The _sync shuffles name the lanes taking part: since Volta
a warp's lanes may run apart, and the old warp-synchronous tree in `volatile` shared memory is
not safe there. Each chunk still waits for its two loads before its shuffles."""

import cupy as cp
import numpy as np

SOURCE = r"""
#define THREADS 256
#define WARPS (THREADS / 32)

extern "C" __global__ void row_norms(const float* x, float* out, int cols) {
    __shared__ float warp_sums[WARPS];
    int t = threadIdx.x, lane = t % 32, warp = t / 32;
    const float* row = x + (long long)blockIdx.x * cols;
    float total = 0.0f;  // the warp's running total, kept by its lane 0
    for (int c0 = 0; c0 < cols; c0 += 2 * THREADS) {
        int c = c0 + t;
        float v = c < cols ? row[c] : 0.0f;
        float w = c + THREADS < cols ? row[c + THREADS] : 0.0f;
        float s = v * v + w * w;
        for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o);
        if (lane == 0) total += s;
    }
    if (lane == 0) warp_sums[warp] = total;
    __syncthreads();
    if (t == 0) {
        float sum = 0.0f;
        for (int k = 0; k < WARPS; ++k) sum += warp_sums[k];
        out[blockIdx.x] = sqrtf(sum);
    }
}
"""

_kernel = cp.RawKernel(SOURCE, "row_norms")


def row_norms(x, out):
    rows, cols = x.shape
    _kernel((rows,), (256,), (x, out, np.int32(cols)))
