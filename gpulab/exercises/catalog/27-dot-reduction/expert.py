"""Expert dot product: out[0] = sum(a * b) in one launch, reading a and b at copy speed.

- float4 loads (the kernel checks the alignment, and falls back to 4-byte loads), four of each
  input in flight per thread per trip, into independent accumulators;
- a grid sized to the GPU (every SM full) with a grid-stride loop, so each thread sums many
  elements in registers before any thread talks to another;
- the block's 256 partial sums reduced with warp shuffles (no barrier inside a warp), the 8
  warp sums through one small shared array;
- one launch per call, no `out.fill(0)` before it: the blocks add into a running total that
  lives beside the kernel, the last block to finish (an atomic ticket, after a fence) moves the
  total to out[0] and leaves the total and the ticket at zero for the next call. Each launch
  costs the GPU idle time while the host prepares it; a memset first is a second launch.
"""

import cupy as cp
import numpy as np

SOURCE = r"""
#define THREADS 256
#define WARPS (THREADS / 32)
#define U 4  // float4 of each input in flight per thread per trip

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float dot4(float4 x, float4 y) {
    return x.x * y.x + x.y * y.y + x.z * y.z + x.w * y.w;
}

extern "C" __global__ void __launch_bounds__(THREADS) dot(
        const float* __restrict__ a, const float* __restrict__ b, float* out, float* total,
        unsigned int* ticket, long long n) {
    __shared__ float warp_sums[WARPS];
    long long tid = (long long)blockIdx.x * THREADS + threadIdx.x;
    long long stride = (long long)THREADS * gridDim.x;
    bool vec = (((unsigned long long)a | (unsigned long long)b) & 15) == 0;
    long long n4 = vec ? n / 4 : 0;
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    float s[U] = {0.0f, 0.0f, 0.0f, 0.0f};
    long long i = tid;
    for (; i + (U - 1) * stride < n4; i += U * stride) {
        float4 x[U], y[U];
#pragma unroll
        for (int u = 0; u < U; ++u) { x[u] = a4[i + u * stride]; y[u] = b4[i + u * stride]; }
#pragma unroll
        for (int u = 0; u < U; ++u) s[u] += dot4(x[u], y[u]);
    }
    for (; i < n4; i += stride) s[0] += dot4(a4[i], b4[i]);
    for (long long j = 4 * n4 + tid; j < n; j += stride) s[1] += a[j] * b[j];
    float v = warp_sum((s[0] + s[1]) + (s[2] + s[3]));
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = warp_sum(lane < WARPS ? warp_sums[lane] : 0.0f);
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
_kernel = cp.RawKernel(SOURCE, "dot")
# per device: the running total and the ticket, both zero between calls
_state: dict[int, tuple] = {}


def dot(a, b, out):
    n = a.size
    dev = cp.cuda.Device()
    if dev.id not in _state:
        _state[dev.id] = (cp.zeros(1, dtype=cp.float32), cp.zeros(1, dtype=cp.uint32))
    total, ticket = _state[dev.id]
    sms = dev.attributes["MultiProcessorCount"]
    blocks = max(1, min(sms * (2048 // THREADS), (n // 4 + THREADS - 1) // THREADS))
    _kernel((blocks,), (THREADS,), (a, b, out, total, ticket, np.int64(n)))
