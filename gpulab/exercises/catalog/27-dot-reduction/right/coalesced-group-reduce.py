# why: warp sums by cooperative groups (coalesced_threads() and cg::reduce), one atomicAdd a warp, __ldg loads and a grid-stride loop: correct CUDA the emulator once refused to compile
"""CORRECT (unusual): warp sums by cooperative groups' coalesced_threads() + cg::reduce, one
atomicAdd per warp, __ldg loads and a grid-stride loop."""

import cupy as cp
import numpy as np

_k = cp.RawKernel(
    r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
extern "C" __global__ void dotcg(const float* __restrict__ a, const float* __restrict__ b,
                                 float* out, long long n) {
    float acc = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x)
        acc = __fmaf_rn(__ldg(a + i), __ldg(b + i), acc);
    cg::coalesced_group g = cg::coalesced_threads();
    float s = cg::reduce(g, acc, cg::plus<float>());
    if (g.thread_rank() == 0) atomicAdd(out, s);
}""",
    "dotcg",
)


def dot(a, b, out):
    out.fill(0)
    blocks = max(1, min(64, (a.size + 255) // 256))
    _k((blocks,), (256,), (a, b, out, np.int64(a.size)))
