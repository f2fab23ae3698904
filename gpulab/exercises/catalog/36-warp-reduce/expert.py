"""Expert warp-shuffle sum: out[0] = sum(x) in one launch, at the speed of a read.

- float4 loads, four in flight per thread per trip, into four accumulators; the 0 to 3 elements
  before the first 16-byte boundary and the few after the last float4 are added by fixed
  threads, so any offset of x reads whole float4s;
- a grid sized to the GPU (8 blocks of 256 per SM, fewer for a small n) with a grid-stride
  loop, so each thread sums many elements in registers before any thread talks to another;
- the block's 256 sums combined by warp shuffles, one float per warp in shared memory (32 bytes
  a block), the first warp shuffling those 8;
- one launch per call, no `out.fill(0)` before it: each block adds its sum into a running total
  kept beside the kernel, and the last block to finish (an atomic ticket, after a fence) moves
  the total to out[0] and leaves the total and the ticket at zero for the next call.
"""

import cupy as cp
import numpy as np

SOURCE = r"""
#define THREADS 256
#define WARPS (THREADS / 32)
#define U 4  // float4 in flight per thread per trip

__device__ __forceinline__ float warp_total(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float add4(float4 a) { return (a.x + a.y) + (a.z + a.w); }

extern "C" __global__ void __launch_bounds__(THREADS) warp_sum(
        const float* __restrict__ x, float* out, float* total, unsigned int* ticket,
        long long n) {
    __shared__ float warp_sums[WARPS];  // one float per warp, never one per thread
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
    // every lane reaches the shuffles: lanes with nothing to add bring 0
    float v = warp_total((s[0] + s[1]) + (s[2] + s[3]));
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = warp_total(lane < WARPS ? warp_sums[lane] : 0.0f);
        if (lane == 0) {
            atomicAdd(total, v);
            __threadfence();  // this block's sum is in the total before its ticket is seen
            if (atomicAdd(ticket, 1u) == gridDim.x - 1) {  // the last block: every sum is in
                *out = atomicExch(total, 0.0f);
                *ticket = 0;
            }
        }
    }
}
"""

THREADS = 256
BLOCKS_PER_SM = 2048 // THREADS
_kernel = cp.RawKernel(SOURCE, "warp_sum")
# per device: the SM count, the running total and the ticket (both zero between calls)
_state: dict[int, tuple] = {}


def warp_sum(x, out):
    n = x.size
    dev = cp.cuda.Device().id
    if dev not in _state:
        sms = cp.cuda.Device(dev).attributes["MultiProcessorCount"]
        _state[dev] = (sms, cp.zeros(1, dtype=cp.float32), cp.zeros(1, dtype=cp.uint32))
    sms, total, ticket = _state[dev]
    blocks = max(1, min(sms * BLOCKS_PER_SM, (n // 4 + THREADS - 1) // THREADS))
    _kernel((blocks,), (THREADS,), (x, out, total, ticket, np.int64(n)))
