"""Expert zip: out[i] = |a[i] - b[i]| at the speed of a copy.

What the one-thread-per-element reference does not do:
- 16-byte loads and stores (float4): a quarter of the memory instructions, each a full sector;
  the kernel checks the alignment itself and falls back to 4-byte accesses (a view at an odd
  offset), and the last n % 4 elements are done one at a time;
- a grid sized to the GPU (every SM full: 2048 threads each), not to n: each thread walks the
  array with a grid-stride loop, so no block is launched only to retire at once;
- two independent float4 loads per trip, so each thread keeps more bytes in flight.
"""

import cupy as cp
import numpy as np

SOURCE = r"""
__device__ __forceinline__ float op(float a, float b) { return fabsf(a - b); }

extern "C" __global__ void __launch_bounds__(256) abs_diff(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, long long n) {
    long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)blockDim.x * gridDim.x;
    bool vec = (((unsigned long long)a | (unsigned long long)b | (unsigned long long)out) & 15) == 0;
    long long n4 = vec ? n / 4 : 0;
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    float4* o4 = reinterpret_cast<float4*>(out);
    long long i = tid;
    for (; i + stride < n4; i += 2 * stride) {  // two trips' loads in flight before a store
        float4 au = a4[i], av = a4[i + stride];
        float4 bu = b4[i], bv = b4[i + stride];
        o4[i] = make_float4(op(au.x, bu.x), op(au.y, bu.y), op(au.z, bu.z), op(au.w, bu.w));
        o4[i + stride] = make_float4(op(av.x, bv.x), op(av.y, bv.y), op(av.z, bv.z), op(av.w, bv.w));
    }
    if (i < n4) {
        float4 au = a4[i];
        float4 bu = b4[i];
        o4[i] = make_float4(op(au.x, bu.x), op(au.y, bu.y), op(au.z, bu.z), op(au.w, bu.w));
    }
    for (long long j = 4 * n4 + tid; j < n; j += stride) out[j] = op(a[j], b[j]);
}
"""

THREADS = 256
_kernel = cp.RawKernel(SOURCE, "abs_diff")


def abs_diff(a, b, out):
    n = a.size
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(sms * (2048 // THREADS), (n // 4 + THREADS - 1) // THREADS))
    _kernel((blocks,), (THREADS,), (a, b, out, np.int64(n)))
