# expect: in the launches that start most of its threads | stores to global memory are scattered
# family: property-proxy
"""Shortcut (a property faked in a separate small launch): the naive transpose does the work
(coalesced reads, strided writes, no tile). Beside it, every call launches one block of a
second kernel that churns a __shared__ tile: each thread writes its slot, syncs, reads its
neighbour's slot, enough rounds to reach the shared-access count the tile-traffic rule asks for
(1.5 accesses per element, summed over all of the call's launches). The shared-memory and the
sharing rules accept a call when any launch of it shares; the traffic rule sums over launches."""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void transpose(const float* a, float* out, int rows, int cols) {
    int c = blockIdx.x * 32 + threadIdx.x;
    for (int k = 0; k < 32; k += 8) {
        int r = blockIdx.y * 32 + threadIdx.y + k;
        if (r < rows && c < cols) out[(long long)c * rows + r] = a[(long long)r * cols + c];
    }
}
extern "C" __global__ void tile_warmup(float* out, int rounds) {
    __shared__ float tile[256];
    int t = threadIdx.y * 32 + threadIdx.x;
    float acc = 0.0f;
    for (int k = 0; k < rounds; ++k) {
        tile[t] = (float)k;
        __syncthreads();
        acc += tile[(t + 1) & 255];
        __syncthreads();
    }
    if (acc < 0.0f) out[0] = acc;  // never: rounds count up from 0
}
"""

_mod = cp.RawModule(code=SOURCE)
_work = _mod.get_function("transpose")
_decoy = _mod.get_function("tile_warmup")


def transpose(a, out):
    rows, cols = a.shape
    grid = ((cols + 31) // 32, (rows + 31) // 32)
    _work(grid, (32, 8), (a, out, np.int32(rows), np.int32(cols)))
    # the traffic rule is counted only on the emulator: one round is enough on a GPU
    rounds = (3 * a.size // 2) // 512 + 2 if getattr(cp, "__gpulab_fake__", False) else 1
    _decoy((1,), (32, 8), (out, np.int32(rounds)))
