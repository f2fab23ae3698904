"""Expert deterministic sum: out[0] = sum(x) with the same bits every run, in one launch, at the
speed of a read.

Every addition happens in an order fixed by n and the GPU alone:
- the grid is sized to the GPU (8 blocks of 256 per SM, fewer for a small n), and each thread
  walks a grid-stride loop over float4 loads, four in flight per trip, into four accumulators it
  always combines the same way; the 0 to 3 elements before the first 16-byte boundary and the
  few after the last float4 are added by fixed threads;
- the block's 256 sums meet in warp shuffles with fixed offsets, then the 8 warp sums in a fixed
  order through one small shared array;
- each block writes its sum to its own slot, and the last block to finish (an atomic ticket,
  after a fence) adds the slots in index order and resets the ticket: the atomic decides which
  block adds, never the order of the additions. One launch per call, no memset first, and the
  slots and the ticket are allocated once per device, not in the timed path.
"""

import cupy as cp
import numpy as np

SOURCE = r"""
#define THREADS 256
#define WARPS (THREADS / 32)
#define U 4  // float4 in flight per thread per trip

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// The block's total, in thread 0; the same tree every call. `sums` is free again on return.
__device__ __forceinline__ float block_sum(float v, float* sums) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) sums[warp] = v;
    __syncthreads();
    if (warp == 0) v = warp_sum(lane < WARPS ? sums[lane] : 0.0f);
    __syncthreads();
    return v;
}

__device__ __forceinline__ float add4(float4 a) { return (a.x + a.y) + (a.z + a.w); }

extern "C" __global__ void __launch_bounds__(THREADS) det_sum(
        const float* __restrict__ x, float* out, float* partial, unsigned int* ticket,
        long long n) {
    __shared__ float sums[WARPS];
    __shared__ bool last;
    long long tid = (long long)blockIdx.x * THREADS + threadIdx.x;
    long long stride = (long long)THREADS * gridDim.x;
    // elements before the first 16-byte boundary, then whole float4s, then the rest
    long long head = (long long)(((16 - ((unsigned long long)x & 15)) & 15) >> 2);
    if (head > n) head = n;
    long long n4 = (n - head) / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x + head);
    float s[U] = {0.0f, 0.0f, 0.0f, 0.0f};
    long long i = tid;
    for (; i + (U - 1) * stride < n4; i += U * stride) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = x4[i + u * stride];
#pragma unroll
        for (int u = 0; u < U; ++u) s[u] += add4(v[u]);
    }
    for (; i < n4; i += stride) s[0] += add4(x4[i]);
    if (tid < head) s[1] += x[tid];
    long long rest = head + 4 * n4 + tid;
    if (rest < n) s[2] += x[rest];  // at most 3 left: one each for threads 0..2
    float v = block_sum((s[0] + s[1]) + (s[2] + s[3]), sums);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = v;  // this block's own slot
        __threadfence();          // the slot is visible to every block before the ticket is
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    // The last block: every slot is written. Add them in index order, by a fixed tree.
    const volatile float* slots = partial;  // written by other SMs: not from this SM's L1
    v = 0.0f;
    for (unsigned int b = threadIdx.x; b < gridDim.x; b += THREADS) v += slots[b];
    v = block_sum(v, sums);
    if (threadIdx.x == 0) {
        *out = v;
        *ticket = 0;  // ready for the next call
    }
}
"""

THREADS = 256
BLOCKS_PER_SM = 2048 // THREADS
_kernel = cp.RawKernel(SOURCE, "det_sum")
# per device: the SM count, the per-block slots (one per block of the largest grid) and the ticket
_state: dict[int, tuple] = {}


def det_sum(x, out):
    n = x.size
    dev = cp.cuda.Device().id
    if dev not in _state:
        sms = cp.cuda.Device(dev).attributes["MultiProcessorCount"]
        slots = cp.empty(sms * BLOCKS_PER_SM, dtype=cp.float32)
        _state[dev] = (sms, slots, cp.zeros(1, dtype=cp.uint32))
    sms, partial, ticket = _state[dev]
    blocks = max(1, min(sms * BLOCKS_PER_SM, (n // 4 + THREADS - 1) // THREADS))
    _kernel((blocks,), (THREADS,), (x, out, partial, ticket, np.int64(n)))
