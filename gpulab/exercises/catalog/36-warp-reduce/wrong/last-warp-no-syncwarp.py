# expect: lockstep
"""Wrong: the classic last-warp unroll through volatile shared memory, with no __syncwarp()
between steps. It assumes a warp's 32 threads move in lockstep, which no GPU since Volta
promises: a race, whatever one run shows. (The emulator runs lane 0's six steps before lane
16's first, so its sums are wrong there too.)"""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256

extern "C" __global__ void warp_sum(const float* x, float* out, long long n) {
    __shared__ float sm[BLOCK];
    int t = threadIdx.x;
    float v = 0.0f;
    long long stride = (long long)BLOCK * gridDim.x;
    for (long long i = (long long)blockIdx.x * BLOCK + t; i < n; i += stride) v += x[i];
    sm[t] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 32; s >>= 1) {
        if (t < s) sm[t] += sm[t + s];
        __syncthreads();
    }
    if (t < 32) {  // the pre-Volta "warp-synchronous" unroll: no barrier, no __syncwarp()
        volatile float* w = sm;
        w[t] += w[t + 32];
        w[t] += w[t + 16];
        w[t] += w[t + 8];
        w[t] += w[t + 4];
        w[t] += w[t + 2];
        w[t] += w[t + 1];
    }
    if (t == 0) atomicAdd(out, sm[0]);
}
"""

_kernel = cp.RawKernel(SOURCE, "warp_sum")


def warp_sum(x, out):
    n = x.size
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks = max(1, min(8 * sms, (n + 255) // 256))
    out.fill(0)
    _kernel((blocks,), (256,), (x, out, np.int64(n)))
