"""The CPU stand-in for RawKernel that the kernel track's tests rely on (gpulab/testing)."""

from __future__ import annotations

import numpy as np
import pytest

from gpulab.testing import cuda_emu, fake_cupy

pytestmark = pytest.mark.skipif(cuda_emu.compiler() is None, reason="no host C++ compiler")

SHIFT = r"""
extern "C" __global__ void shift(const float* a, float* out, int n) {
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = a[blockIdx.x * 64 + t];
    BARRIER
    if (blockIdx.x * 64 + t < n) out[blockIdx.x * 64 + t] = t < 63 ? s[t + 1] : -1.0f;
}
"""


def _shift(barrier: str) -> np.ndarray:
    cp = fake_cupy.make()
    a = cp.asarray(np.arange(128, dtype=np.float32) + 1)
    out = cp.full(128, np.nan, dtype=np.float32)
    cp.RawKernel(SHIFT.replace("BARRIER", barrier), "shift")((2,), (64,), (a, out, np.int32(128)))
    return out


def test_threads_meet_at_the_barrier() -> None:
    out = _shift("__syncthreads();")
    want = np.where(np.arange(128) % 64 < 63, np.arange(128) + 2, -1)
    assert np.array_equal(out, want)


def test_a_missing_barrier_reads_stale_shared_memory_every_time() -> None:
    for _ in range(2):
        out = _shift("")
        # thread t of block 1 reads s[t + 1] before its neighbour stored a[65 + t] there, so it
        # gets what block 0 left, a[t + 1] = t + 2, every time
        assert np.array_equal(out[64:127], np.arange(63) + 2)


def test_scalars_must_have_the_parameters_exact_type() -> None:
    cp = fake_cupy.make()
    k = cp.RawKernel(SHIFT.replace("BARRIER", ""), "shift")
    a = cp.zeros(64, dtype=np.float32)
    with pytest.raises(cuda_emu.EmulatorError, match=r"takes int: pass np.int32"):
        k((1,), (64,), (a, a, 64))
    with pytest.raises(cuda_emu.EmulatorError, match="1024"):
        k((1,), (2048,), (a, a, np.int32(64)))


def test_allocations_are_padded_like_the_pool() -> None:
    cp = fake_cupy.make()
    a = cp.empty(3, dtype=np.float32)
    assert a.base is not None and a.base.nbytes >= fake_cupy.PAD_BYTES


def test_elementwise_kernel_pastes_the_operation_into_a_loop() -> None:
    cp = fake_cupy.make()
    k = cp.ElementwiseKernel("float32 s, T x", "T y", "y = s * x + (T)i", "affine")
    x = cp.asarray(np.array([1, 2, 3], dtype=np.float32))
    assert np.array_equal(k(np.float32(2), x), [2, 5, 8])


def test_reduction_kernel_over_everything_and_over_rows() -> None:
    cp = fake_cupy.make()
    k = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "norm")
    x = cp.asarray(np.array([[3, 4], [6, 8]], dtype=np.float32))
    assert float(k(x)) == pytest.approx(np.sqrt(125))
    out = cp.empty(2, dtype=np.float32)
    k(x, axis=1, out=out)
    assert np.array_equal(out, [5, 10])


VECTOR = r"""
extern "C" __global__ void twice(const float* a, float* out, int n4) {
    extern __shared__ float buf[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = reinterpret_cast<const float4*>(a)[i];
        buf[threadIdx.x] = v.x;
        reinterpret_cast<float4*>(out)[i] = make_float4(2 * buf[threadIdx.x], 2 * v.y, 2 * v.z, 2 * v.w);
    }
}
"""


def test_vector_types_and_dynamic_shared_memory() -> None:
    cp = fake_cupy.make()
    a = cp.asarray(np.arange(64, dtype=np.float32))
    out = cp.full(64, np.nan, dtype=np.float32)
    k = cp.RawKernel(VECTOR, "twice")
    assert k.shared_size_bytes == 0  # `extern __shared__` is sized by the launch, not the source
    k((2,), (8,), (a, out, np.int32(16)), shared_mem=8 * 4)
    assert np.array_equal(out, 2 * np.arange(64))
    with pytest.raises(cuda_emu.EmulatorError, match="dynamic shared memory"):
        k((1,), (8,), (a, out, np.int32(16)), shared_mem=1 << 20)


def test_raw_module_fuse_and_events() -> None:
    cp = fake_cupy.make()
    mod = cp.RawModule(code=VECTOR)
    a = cp.asarray(np.ones(8, dtype=np.float32))
    out = cp.zeros(8, dtype=np.float32)
    mod.get_function("twice")((1,), (2,), (a, out, np.int32(2)), shared_mem=8)
    assert np.array_equal(out, np.full(8, 2.0))
    assert cp.fuse(lambda x: x + 1)(a)[0] == 2.0 and cp.fuse(kernel_name="k")(lambda x: x)(a) is a
    s = cp.cuda.Stream(non_blocking=True)
    ev = cp.cuda.Event(disable_timing=True)
    ev.record(s)
    cp.cuda.get_current_stream().wait_event(ev)
    assert s.done and ev.done


WARP = r"""
extern "C" __global__ void __launch_bounds__(96) warp(const float* a, float* out, int* lanes) {
    int t = threadIdx.x, lane = t & 31;
    float v = a[blockIdx.x * blockDim.x + t];
    float down = v, x = v;
    for (int o = 16; o > 0; o >>= 1) down += __shfl_down_sync(0xffffffffu, down, o);
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    int up = __shfl_up_sync(0xffffffffu, t, 1);
    int first = __shfl_sync(0xffffffffu, t, 0);
    __shared__ float sums[3];
    if (lane == 0) sums[t >> 5] = down;
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = x + (t == 0 ? sums[0] + sums[1] + sums[2] : 0.0f);
    lanes[2 * (blockIdx.x * blockDim.x + t)] = up;
    lanes[2 * (blockIdx.x * blockDim.x + t) + 1] = first;
}
"""


def test_warp_shuffles_exchange_within_each_warp() -> None:
    cp = fake_cupy.make()
    a = cp.asarray(np.arange(192, dtype=np.float32))
    out = cp.full(192, np.nan, dtype=np.float32)
    lanes = cp.full(384, -1, dtype=np.int32)
    cp.RawKernel(WARP, "warp")((2,), (96,), (a, out, lanes))
    warp_sums = np.arange(192).reshape(6, 32).sum(axis=1)
    want = np.repeat(warp_sums, 32).astype(np.float32)  # the xor butterfly: every lane has it
    want[0] += warp_sums[:3].sum()  # the shuffle-down totals of block 0, through shared memory
    want[96] += warp_sums[3:].sum()
    assert np.array_equal(out, want)
    t = np.tile(np.arange(96), 2)
    up, first = lanes[0::2], lanes[1::2]
    assert np.array_equal(up, np.where(t % 32 == 0, t, t - 1))  # lane 0 keeps its own
    assert np.array_equal(first, t - t % 32)


def test_a_shuffle_only_some_lanes_reach_is_refused() -> None:
    cp = fake_cupy.make()
    src = r"""
extern "C" __global__ void split(float* out) {
    float v = 1.0f;
    if (threadIdx.x < 16) v = __shfl_down_sync(0xffffffffu, v, 1);
    else __syncthreads();
    out[threadIdx.x] = v;
}
"""
    out = cp.zeros(32, dtype=np.float32)
    with pytest.raises(cuda_emu.EmulatorError, match="lanes of a warp waited at different"):
        cp.RawKernel(src, "split")((1,), (32,), (out,))
