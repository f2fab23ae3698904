# why: cooperative groups: a 32-thread tile and cg::reduce, which compiles to the same shfl.sync steps (cg::reduce on ints can use __reduce_add_sync, an integer-only instruction since sm_80)
"""Sum with cooperative groups: cg::reduce over each warp's tile."""

import cupy as cp
import numpy as np

SOURCE = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#define BLOCK 256
namespace cg = cooperative_groups;

extern "C" __global__ void warp_sum(const float* x, float* out, long long n) {
    __shared__ float warp_totals[BLOCK / 32];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    float v = 0.0f;
    long long stride = (long long)BLOCK * gridDim.x;
    for (long long i = (long long)blockIdx.x * BLOCK + block.thread_rank(); i < n; i += stride)
        v += x[i];
    v = cg::reduce(warp, v, cg::plus<float>());
    if (warp.thread_rank() == 0) warp_totals[warp.meta_group_rank()] = v;
    block.sync();
    if (warp.meta_group_rank() == 0) {
        v = warp.thread_rank() < BLOCK / 32 ? warp_totals[warp.thread_rank()] : 0.0f;
        v = cg::reduce(warp, v, cg::plus<float>());
        if (warp.thread_rank() == 0) atomicAdd(out, v);
    }
}
"""

# CUDA 13's cooperative-groups headers are C++17
_kernel = cp.RawKernel(SOURCE, "warp_sum", options=("-std=c++17",))


def warp_sum(x, out):
    n = x.size
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(8 * sms, (n + 255) // 256))
    out.fill(0)
    _kernel((blocks,), (256,), (x, out, np.int64(n)))
