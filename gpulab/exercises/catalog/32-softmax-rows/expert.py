# rung: hold the row in registers as 4 float4 per thread and find its max and sum in one online pass (each exp computed once, rescaled by the final max), so x is read from memory once and out written once
"""Expert row softmax: one read of x and one write of out, reductions by warp shuffles.

The reference reads every row three times (max, sum, output) and reduces through shared memory
with a barrier per level. The expert:
- keeps the row in registers: a block of 256 threads holds a 4096-wide row as 4 float4 per
  thread (coalesced loads), so x is read from memory once and out written once: 8 bytes per
  element, the least any softmax can move;
- is "online": each thread computes exp(v - m) against its own running max m and the sum of
  those; pairs (m, s) combine as (max, s1 e^(m1 - max) + s2 e^(m2 - max)), so the max and the
  sum come out of one reduction, and each element's exp is computed once and rescaled;
- reduces by warp shuffles (xor butterfly: every lane ends with the warp's pair), then the 8
  warps' pairs through shared memory, read by every thread: two barriers per row;
- walks the rows with a grid sized to the GPU.
Rows that do not fit the registers (wider than 4096), are not a multiple of 4 wide or not
16-byte aligned take a two-pass path: one online pass for (max, sum), one to write.
"""

import cupy as cp
import numpy as np

SOURCE = r"""
#define THREADS 256
#define WARPS (THREADS / 32)
#define VEC 4  // float4 per thread held in registers: rows up to 4096 wide
#define NEG_INF __int_as_float(0xff800000)  // -infinity, without a header

__device__ __forceinline__ void combine(float& m, float& s, float m2, float s2) {
    float mx = fmaxf(m, m2);
    // a side with nothing yet (m = -inf) adds 0, never exp(-inf - -inf) = NaN
    float a = m == NEG_INF ? 0.0f : s * __expf(m - mx);
    float b = m2 == NEG_INF ? 0.0f : s2 * __expf(m2 - mx);
    m = mx;
    s = a + b;
}

__device__ __forceinline__ void block_max_sum(float& m, float& s, float* sm, float* ss) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, o);
        float s2 = __shfl_xor_sync(0xffffffffu, s, o);
        combine(m, s, m2, s2);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) { sm[warp] = m; ss[warp] = s; }
    __syncthreads();
    m = sm[0]; s = ss[0];
#pragma unroll
    for (int w = 1; w < WARPS; ++w) combine(m, s, sm[w], ss[w]);
    __syncthreads();  // the next row may overwrite sm and ss only after everyone read them
}

extern "C" __global__ void __launch_bounds__(THREADS) softmax(
        const float* __restrict__ x, float* __restrict__ out, int rows, int cols) {
    __shared__ float sm[WARPS], ss[WARPS];
    int t = threadIdx.x;
    bool vec = cols % 4 == 0 && cols <= 4 * VEC * THREADS &&
               (((unsigned long long)x | (unsigned long long)out) & 15) == 0;
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* row = x + (long long)r * cols;
        float* orow = out + (long long)r * cols;
        float m = NEG_INF, s = 0.0f;
        if (vec) {
            int n4 = cols / 4;
            float4 v[VEC];
#pragma unroll
            for (int k = 0; k < VEC; ++k) {
                int i = t + k * THREADS;
                v[k] = i < n4 ? reinterpret_cast<const float4*>(row)[i]
                              : make_float4(NEG_INF, NEG_INF, NEG_INF, NEG_INF);
                m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
            }
            float mine = m;
            if (m != NEG_INF) {
#pragma unroll
                for (int k = 0; k < VEC; ++k) {  // exp once per element, against this thread's max
                    v[k].x = __expf(v[k].x - m); v[k].y = __expf(v[k].y - m);
                    v[k].z = __expf(v[k].z - m); v[k].w = __expf(v[k].w - m);
                    s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
                }
            }
            block_max_sum(m, s, sm, ss);
            float scale = mine == NEG_INF ? 0.0f : __expf(mine - m) / s;
#pragma unroll
            for (int k = 0; k < VEC; ++k) {
                int i = t + k * THREADS;
                if (i < n4)
                    reinterpret_cast<float4*>(orow)[i] = make_float4(
                        v[k].x * scale, v[k].y * scale, v[k].z * scale, v[k].w * scale);
            }
        } else {
            for (int c = t; c < cols; c += THREADS) {  // online: rescale the sum when m rises
                float y = row[c];
                if (y > m) { s = s * __expf(m - y) + 1.0f; m = y; }
                else s += __expf(y - m);
            }
            block_max_sum(m, s, sm, ss);
            float inv = 1.0f / s;
            for (int c = t; c < cols; c += THREADS) orow[c] = __expf(row[c] - m) * inv;
        }
    }
}
"""

THREADS = 256
_kernel = cp.RawKernel(SOURCE, "softmax")


def softmax(x, out):
    rows, cols = x.shape
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(rows, sms * (2048 // THREADS)))
    _kernel((blocks,), (THREADS,), (x, out, np.int32(rows), np.int32(cols)))
