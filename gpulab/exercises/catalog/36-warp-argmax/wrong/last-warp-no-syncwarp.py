# expect: lockstep
# family: mistake
"""Wrong: the classic last-warp unroll through volatile shared memory, on pairs, with no
__syncwarp() between steps. It assumes a warp's 32 threads move in lockstep, which no GPU since
Volta promises: a race, whatever one run shows. (The emulator runs each lane's steps before the
next lane's first, so its answers are wrong there too.)"""

import cupy as cp
import numpy as np

SOURCE = r"""
#define BLOCK 256

__device__ __forceinline__ void take_better(float& v, long long& k, float ov, long long ok) {
    if (ov > v || (ov == v && ok < k)) { v = ov; k = ok; }
}

extern "C" __global__ void argmax_pass(const float* vals, const long long* idx, int given,
                                       long long n, float* best_val, long long* best_idx) {
    __shared__ float sv[BLOCK];
    __shared__ long long sk[BLOCK];
    int t = threadIdx.x;
    float v = __int_as_float(0xff800000);
    long long k = 0x7fffffffffffffffLL;
    long long stride = (long long)BLOCK * gridDim.x;
    for (long long i = (long long)blockIdx.x * BLOCK + t; i < n; i += stride)
        take_better(v, k, vals[i], given ? idx[i] : i);
    sv[t] = v;
    sk[t] = k;
    __syncthreads();
    for (int s = BLOCK / 2; s > 32; s >>= 1) {
        if (t < s) {
            take_better(v, k, sv[t + s], sk[t + s]);
            sv[t] = v;
            sk[t] = k;
        }
        __syncthreads();
    }
    if (t < 32) {  // the pre-Volta "warp-synchronous" unroll: no barrier, no __syncwarp()
        volatile float* wv = sv;
        volatile long long* wk = sk;
        for (int o = 32; o > 0; o >>= 1) {
            float ov = wv[t + o];
            long long ok = wk[t + o];
            if (ov > wv[t] || (ov == wv[t] && ok < wk[t])) { wv[t] = ov; wk[t] = ok; }
        }
    }
    if (t == 0) { best_val[blockIdx.x] = sv[0]; best_idx[blockIdx.x] = sk[0]; }
}
"""

_kernel = cp.RawKernel(SOURCE, "argmax_pass")
_state = {}


def _scratch():
    dev = cp.cuda.Device().id
    if dev not in _state:
        sms = cp.cuda.Device(dev).attributes["MultiProcessorCount"]
        blocks = 8 * sms
        _state[dev] = (sms, cp.empty(blocks, dtype=cp.float32), cp.empty(blocks, dtype=cp.int64))
    return _state[dev]


def warp_argmax(x, out):
    n = x.size
    sms, vals, idx = _scratch()
    blocks = max(1, min(8 * sms, (n + 255) // 256))
    _kernel((blocks,), (256,), (x, idx, np.int32(0), np.int64(n), vals, idx))
    _kernel((1,), (256,), (vals, idx, np.int32(1), np.int64(blocks), vals, out))
