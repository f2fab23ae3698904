// Tree reduction: sum of n float32 values, one launch.
//
// 1. Each thread walks the array with a grid stride, loading float4 (16 bytes) at a time and
//    keeping four loads in flight, accumulating in float32 registers (a few hundred elements per
//    thread at most, so float32 loses nothing that matters).
// 2. The per-thread sums become doubles and are combined in double from here on: a warp
//    shuffle tree (5 steps for 32 lanes), then one value per warp through shared memory, then
//    the first warp reduces those.
// 3. Each block writes its partial sum; the last block to finish (an atomic ticket) adds the
//    partials in a fixed order, so the result is deterministic, and resets the ticket.
//
// Launch with blockDim.x == THREADS and any grid size up to MAX_BLOCKS; x must be 16-byte
// aligned (CuPy and PyTorch allocations are).

#define THREADS 512
#define MAX_BLOCKS 4096

__device__ __forceinline__ double warp_sum(double v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    return v;
}

// Sum of one block's values, valid in thread 0.
__device__ __forceinline__ double block_sum(double v, double* shared) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = (threadIdx.x < blockDim.x / 32) ? shared[lane] : 0.0;
    if (warp == 0) v = warp_sum(v);
    return v;
}

extern "C" __global__ void __launch_bounds__(THREADS)
reduce_sum_f32(const float* __restrict__ x, long long n, double* __restrict__ partials,
               unsigned int* __restrict__ ticket, double* __restrict__ out) {
    __shared__ double shared[THREADS / 32];
    __shared__ bool is_last;

    const long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long n4 = n >> 2;
    const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);

    float acc0 = 0.f, acc1 = 0.f, acc2 = 0.f, acc3 = 0.f;
    // Four independent 16-byte loads per trip keep enough bytes in flight to cover latency.
    for (; i + 3 * stride < n4; i += 4 * stride) {
        const float4 a = x4[i];
        const float4 b = x4[i + stride];
        const float4 c = x4[i + 2 * stride];
        const float4 d = x4[i + 3 * stride];
        acc0 += (a.x + a.y) + (a.z + a.w);
        acc1 += (b.x + b.y) + (b.z + b.w);
        acc2 += (c.x + c.y) + (c.z + c.w);
        acc3 += (d.x + d.y) + (d.z + d.w);
    }
    for (; i < n4; i += stride) {
        const float4 a = x4[i];
        acc0 += (a.x + a.y) + (a.z + a.w);
    }
    // The last n % 4 elements, one thread each.
    const long long tail = (n4 << 2) + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (tail < n) acc1 += x[tail];

    double v = ((double)acc0 + (double)acc1) + ((double)acc2 + (double)acc3);
    v = block_sum(v, shared);

    if (threadIdx.x == 0) {
        partials[blockIdx.x] = v;
        __threadfence();  // the partial is visible to every block before the ticket is taken
        const unsigned int done = atomicAdd(ticket, 1u);
        is_last = (done == gridDim.x - 1);
    }
    __syncthreads();
    if (!is_last) return;

    // The last block: add the partials in a fixed order (deterministic), reset the ticket.
    __threadfence();
    double w = 0.0;
    for (int b = threadIdx.x; b < gridDim.x; b += blockDim.x) {
        w += ((volatile double*)partials)[b];
    }
    __syncthreads();  // shared[] is reused
    w = block_sum(w, shared);
    if (threadIdx.x == 0) {
        out[0] = w;
        *ticket = 0u;
    }
}
