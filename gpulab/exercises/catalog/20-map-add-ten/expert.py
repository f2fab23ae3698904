"""Expert: out[i] = a[i] + 10 at the speed of a copy.

Three things the one-thread-per-element reference does not do:
- 16-byte loads and stores (float4): a quarter of the memory instructions, each a full sector;
  the kernel checks the alignment itself and falls back to 4-byte accesses (a view at an odd
  offset), and the last n % 4 elements are done one at a time;
- a grid sized to the GPU (every SM full: 2048 threads each), not to n: each thread walks the
  array with a grid-stride loop, so no block is launched only to retire at once;
- two independent float4 loads per trip, so each thread keeps 32 bytes in flight.
"""

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void __launch_bounds__(256) add_ten(const float* __restrict__ a,
                                                          float* __restrict__ out, long long n) {
    long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)blockDim.x * gridDim.x;
    bool vec = (((unsigned long long)a | (unsigned long long)out) & 15) == 0;
    long long n4 = vec ? n / 4 : 0;
    const float4* a4 = reinterpret_cast<const float4*>(a);
    float4* o4 = reinterpret_cast<float4*>(out);
    long long i = tid;
    for (; i + stride < n4; i += 2 * stride) {  // two loads in flight before either store
        float4 u = a4[i], v = a4[i + stride];
        o4[i] = make_float4(u.x + 10.0f, u.y + 10.0f, u.z + 10.0f, u.w + 10.0f);
        o4[i + stride] = make_float4(v.x + 10.0f, v.y + 10.0f, v.z + 10.0f, v.w + 10.0f);
    }
    if (i < n4) {
        float4 u = a4[i];
        o4[i] = make_float4(u.x + 10.0f, u.y + 10.0f, u.z + 10.0f, u.w + 10.0f);
    }
    for (long long j = 4 * n4 + tid; j < n; j += stride) out[j] = a[j] + 10.0f;
}
"""

THREADS = 256
_kernel = cp.RawKernel(SOURCE, "add_ten")


def add_ten(a, out):
    n = a.size
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(sms * (2048 // THREADS), (n // 4 + THREADS - 1) // THREADS))
    _kernel((blocks,), (THREADS,), (a, out, np.int64(n)))
