"""The CUDA emulator (gpulab/emulator): what `gpulab ex check` runs CUDA C on without a GPU, and
what the kernel track's tests rely on."""

from __future__ import annotations

import numpy as np
import pytest

from gpulab.emulator import cuda, cupy_module, toolchain

pytestmark = pytest.mark.skipif(toolchain.compiler() is None, reason="no host C++ compiler")

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
    cp = cupy_module.make()
    a = cp.asarray(np.arange(128, dtype=np.float32) + 1)
    out = cp.full(128, np.nan, dtype=np.float32)
    cp.RawKernel(SHIFT.replace("BARRIER", barrier), "shift")((2,), (64,), (a, out, np.int32(128)))
    return out


def test_threads_meet_at_the_barrier() -> None:
    out = _shift("__syncthreads();")
    want = np.where(np.arange(128) % 64 < 63, np.arange(128) + 2, -1)
    assert np.array_equal(out, want)


def test_a_missing_barrier_is_a_shared_memory_race_named_like_racecheck() -> None:
    # thread 0 reads s[1] before thread 1, its neighbour in the same warp, stores there
    with pytest.raises(cuda.EmulatorError) as err:
        _shift("")
    message = str(err.value)
    assert message.startswith("kernel shift: block (0,0,0), thread (1,0,0): shared-memory race")
    assert "on s[1]: thread (0,0,0) reads it and thread (1,0,0) writes it" in message
    assert "write-after-read hazard" in message and "lockstep" in message
    assert "\n" not in message


RAW = r"""
extern "C" __global__ void neighbours(float* out) {
    __shared__ float tile[4][64];
    int t = threadIdx.x;
    tile[1][t] = (float)t;
    SYNC
    out[t] = tile[1][(t + 32) % 64];
}
"""


@pytest.mark.parametrize(
    ("sync", "hazard"), [("", "write-after-read"), ("__syncwarp();", "read-after-write")]
)
def test_another_warps_slot_needs_a_barrier(sync: str, hazard: str) -> None:
    """Thread 0 reads tile[1][32], which thread 32 of another warp writes in the same barrier
    interval (after the read without a meeting point, before it with one): a __syncwarp()
    orders a warp's own lanes only."""
    cp = cupy_module.make()
    out = cp.zeros(64, dtype=np.float32)
    with pytest.raises(cuda.EmulatorError) as err:
        cp.RawKernel(RAW.replace("SYNC", sync), "neighbours")((1,), (64,), (out,))
    message = str(err.value)
    assert "race on tile[1][32]: thread (0,0,0) reads it and thread (32,0,0) writes it" in message
    assert f"a {hazard} hazard" in message
    assert "lockstep" not in message  # two warps: only a barrier orders them
    cp.RawKernel(RAW.replace("SYNC", "__syncthreads();"), "neighbours")((1,), (64,), (out,))
    assert np.array_equal(out, (np.arange(64) + 32) % 64)


HISTOGRAM = r"""
extern "C" __global__ void hist(const int* x, unsigned int* bins, int n) {
    __shared__ unsigned int h[8];
    int t = threadIdx.x;
    if (t < 8) h[t] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + t;
    if (i < n) atomicAdd(&h[x[i] % 8], 1u);
    __syncthreads();
    if (t < 8) atomicAdd(&bins[t], h[t]);
}
"""


def test_shared_atomics_are_no_race() -> None:
    cp = cupy_module.make()
    x = cp.asarray(np.arange(100, dtype=np.int32))
    bins = cp.zeros(8, dtype=np.uint32)
    cp.RawKernel(HISTOGRAM, "hist")((4,), (32,), (x, bins, np.int32(100)))
    assert np.array_equal(bins, np.bincount(np.arange(100) % 8))


OOB = r"""
extern "C" __global__ void copy(const float* a, float* out, int n, int shift) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i + shift];
}
"""


@pytest.mark.parametrize(
    ("shift", "words"),
    [
        (1, "thread (3,0,0): out-of-bounds read: read past the end of a's allocation, at a[20], "
            "1 element after its last element a[19] (compute-sanitizer: Invalid __global__ read "
            "of size 4)"),
        (-2, "block (0,0,0), thread (0,0,0): out-of-bounds read: read before the start of a's "
             "allocation, at a[-2], 2 elements before its first element a[0]"),
        (100_000, "thread (0,0,0): out-of-bounds read: read past the end of a's allocation, at "
                  "a[100000], 99981 elements after"),
    ],
)  # fmt: skip
def test_an_index_outside_the_allocation_stops_the_kernel_naming_it(shift: int, words: str):
    cp = cupy_module.make()
    a = cp.asarray(np.arange(20, dtype=np.float32))
    out = cp.full(20, np.nan, dtype=np.float32)
    with pytest.raises(cuda.EmulatorError) as err:
        cp.RawKernel(OOB, "copy")((4,), (8,), (a, out, np.int32(20), np.int32(shift)))
    assert str(err.value).startswith("kernel copy: block (")
    assert words in str(err.value)


def test_a_view_is_checked_against_the_allocation_it_points_into() -> None:
    """A view's neighbours in its own allocation are the program's to read, as on a GPU (the
    kernel checks' guard buffers rely on it); past the allocation is an error."""
    cp = cupy_module.make()
    buf = cp.asarray(np.arange(30, dtype=np.float32))
    out = cp.zeros(20, dtype=np.float32)
    k = cp.RawKernel(OOB, "copy")
    k((4,), (8,), (buf[5:25], out, np.int32(20), np.int32(-5)))
    assert np.array_equal(out, np.arange(20))
    with pytest.raises(
        cuda.EmulatorError, match=r"at a\[25\], 1 element after its last element a\[24\]"
    ):
        k((4,), (8,), (buf[5:25], out, np.int32(20), np.int32(6)))


def test_scalars_must_have_the_parameters_exact_type() -> None:
    cp = cupy_module.make()
    k = cp.RawKernel(SHIFT.replace("BARRIER", ""), "shift")
    a = cp.zeros(64, dtype=np.float32)
    with pytest.raises(cuda.EmulatorError, match=r"takes int: pass np.int32"):
        k((1,), (64,), (a, a, 64))
    with pytest.raises(cuda.EmulatorError, match="1024"):
        k((1,), (2048,), (a, a, np.int32(64)))


def test_elementwise_kernel_pastes_the_operation_into_a_loop() -> None:
    cp = cupy_module.make()
    k = cp.ElementwiseKernel("float32 s, T x", "T y", "y = s * x + (T)i", "affine")
    x = cp.asarray(np.array([1, 2, 3], dtype=np.float32))
    assert np.array_equal(k(np.float32(2), x), [2, 5, 8])


def test_reduction_kernel_over_everything_and_over_rows() -> None:
    cp = cupy_module.make()
    k = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "norm")
    x = cp.asarray(np.array([[3, 4], [6, 8]], dtype=np.float32))
    assert float(k(x)) == pytest.approx(np.sqrt(125))
    out = cp.empty(2, dtype=np.float32)
    k(x, axis=1, out=out)
    assert np.array_equal(out, [5, 10])


def test_reduction_kernel_reduce_type_is_a_c_type_as_under_nvrtc() -> None:
    cp = cupy_module.make()
    x = cp.asarray(np.full((1, 4), 1 + 2**-12, dtype=np.float32))
    # CuPy pastes reduce_type into the source: a C type compiles and the sum is kept in it
    wide = cp.ReductionKernel(
        "float32 x",
        "float32 y",
        "(double)x * (double)x",
        "a + b",
        "y = (float)a",
        "0.0",
        "sq",
        reduce_type="double",
    )
    assert float(wide(x, axis=1)[0]) == pytest.approx(4 * (1 + 2**-12) ** 2, rel=1e-7)
    # NumPy's name is no C type: an H200's NVRTC refused a right/ file that passed here
    numpy_name = cp.ReductionKernel(
        "float32 x", "float32 y", "x * x", "a + b", "y = a", "0.0", "sq2", reduce_type="float64"
    )
    with pytest.raises(Exception, match="float64"):
        numpy_name(x, axis=1)


def test_fuse_over_a_lambda_fails_as_cupy_14s_compile_does() -> None:
    cp = cupy_module.make()
    x = cp.asarray(np.arange(4, dtype=np.float32))
    with pytest.raises(TypeError, match="no C name"):
        cp.fuse(lambda a: a + 1)(x)

    def plus_one(a):
        return a + 1

    assert np.array_equal(cp.fuse(plus_one)(x), [1, 2, 3, 4])


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
    cp = cupy_module.make()
    a = cp.asarray(np.arange(64, dtype=np.float32))
    out = cp.full(64, np.nan, dtype=np.float32)
    k = cp.RawKernel(VECTOR, "twice")
    assert k.shared_size_bytes == 0  # `extern __shared__` is sized by the launch, not the source
    k((2,), (8,), (a, out, np.int32(16)), shared_mem=8 * 4)
    assert np.array_equal(out, 2 * np.arange(64))
    with pytest.raises(cuda.EmulatorError, match="dynamic shared memory"):
        k((1,), (8,), (a, out, np.int32(16)), shared_mem=1 << 20)
    with pytest.raises(cuda.EmulatorError) as err:  # 8 threads, room for 4 floats
        k((2,), (8,), (a, out, np.int32(16)), shared_mem=4 * 4)
    assert "thread (4,0,0): out-of-bounds write of buf[4], past the 16 bytes of dynamic shared" in (
        str(err.value)
    )


def test_raw_module_fuse_and_events() -> None:
    cp = cupy_module.make()
    mod = cp.RawModule(code=VECTOR)
    a = cp.asarray(np.ones(8, dtype=np.float32))
    out = cp.zeros(8, dtype=np.float32)
    mod.get_function("twice")((1,), (2,), (a, out, np.int32(2)), shared_mem=8)
    assert np.array_equal(out, np.full(8, 2.0))
    assert cp.fuse(kernel_name="k")(lambda x: x + 1)(a)[0] == 2.0
    assert cp.fuse(kernel_name="k")(lambda x: x)(a) is a
    s = cp.cuda.Stream(non_blocking=True)
    ev = cp.cuda.Event(disable_timing=True)
    ev.record(s)
    cp.cuda.get_current_stream().wait_event(ev)
    assert s.done and ev.done


WARP_SUM = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
extern "C" __global__ void warp_sums(const float* x, float* out) {
    int t = threadIdx.x;
    float v = x[blockIdx.x * blockDim.x + t];
    STEP
    if ((t & 31) == 0) out[blockIdx.x * (blockDim.x / 32) + t / 32] = v;
}
"""


def _warp_sums(step: str, threads: int = 64) -> np.ndarray:
    cp = cupy_module.make()
    x = cp.asarray(np.arange(2 * threads, dtype=np.float32))
    out = cp.full(2 * threads // 32, np.nan, dtype=np.float32)
    k = cp.RawKernel(WARP_SUM.replace("STEP", step), "warp_sums")
    k((2,), (threads,), (x, out))
    return out


def _per_warp(threads: int = 64) -> np.ndarray:
    return np.arange(2 * threads, dtype=np.float64).reshape(-1, 32).sum(axis=1)


@pytest.mark.parametrize(
    "step",
    [
        "for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);",
        "for (int o = 1; o < 32; o <<= 1) v += __shfl_xor_sync(0xffffffffu, v, o);",
        "cg::thread_block_tile<32> w = cg::tiled_partition<32>(cg::this_thread_block());"
        " v = cg::reduce(w, v, cg::plus<float>());",
        "auto w = cg::tiled_partition<32>(cg::this_thread_block());"
        " for (int o = 16; o > 0; o >>= 1) v += w.shfl_down(v, o);",
    ],
    ids=["shfl-down", "shfl-xor", "cg-reduce", "cg-tile-shfl-down"],
)
def test_warp_shuffles_and_cooperative_groups_sum_a_warp(step: str) -> None:
    assert np.array_equal(_warp_sums(step), _per_warp())


def test_shuffle_up_and_broadcast_follow_cuda_at_the_edges() -> None:
    # up by 1: lane 0 keeps its own value; then lane 5's value broadcast to the warp
    out = _warp_sums("v = __shfl_up_sync(0xffffffffu, v, 1); v = __shfl_sync(0xffffffffu, v, 0);")
    assert np.array_equal(out, [0, 32, 64, 96])


def test_a_mask_that_leaves_the_caller_out_is_an_error() -> None:
    with pytest.raises(cuda.EmulatorError, match=r"mask 0x0000ffff, which leaves that lane"):
        _warp_sums("for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffu, v, o);")


def test_reading_a_lane_outside_the_mask_is_an_error() -> None:
    step = "if ((t & 31) < 16) v += __shfl_down_sync(0xffffu, v, 16);"
    with pytest.raises(cuda.EmulatorError, match="leaves lane 16 out"):
        _warp_sums(step)


def test_a_lane_that_returned_before_a_full_mask_shuffle_is_an_error() -> None:
    step = "if ((t & 31) == 31) return; v += __shfl_down_sync(0xffffffffu, v, 1);"
    with pytest.raises(cuda.EmulatorError, match="had already returned"):
        _warp_sums(step)


UNROLL = r"""
extern "C" __global__ void last_warp(const float* x, float* out) {
    __shared__ float sm[64];
    int t = threadIdx.x;
    sm[t] = x[t];
    __syncthreads();
    if (t < 32) {
        volatile float* v = sm;
        v[t] += v[t + 32]; SYNC
        v[t] += v[t + 16]; SYNC
        v[t] += v[t + 8]; SYNC
        v[t] += v[t + 4]; SYNC
        v[t] += v[t + 2]; SYNC
        v[t] += v[t + 1];
    }
    if (t == 0) out[0] = sm[0];
}
"""


SPLIT = """{
        float s = v[t] + v[t + OFF]; __syncwarp();
        v[t] = s; __syncwarp(); }"""


@pytest.mark.parametrize(
    ("sync", "race"),
    [
        ("", "sm[1]: thread (0,0,0) reads it and thread (1,0,0) writes it"),
        ("__syncwarp();", "sm[16]: thread (0,0,0) reads it and thread (16,0,0) writes it"),
        ("split", None),
    ],
)
def test_a_last_warp_unroll_needs_syncwarp_between_read_and_write(sync: str, race: str | None):
    """Independent thread scheduling: without __syncwarp() lane 0 may run all its steps before
    lane 16 did its first, and here it always does; with one after each step, lane 16 still
    overwrites the slot lane 0 reads in the same step. Reading, __syncwarp(), writing is right."""
    source = UNROLL.replace("SYNC", "" if sync == "split" else sync)
    if sync == "split":
        for off in (32, 16, 8, 4, 2, 1):
            step = f"v[t] += v[t + {off}];"
            source = source.replace(step, SPLIT.replace("OFF", str(off)))
    cp = cupy_module.make()
    x = cp.asarray(np.arange(64, dtype=np.float32))
    out = cp.zeros(1, dtype=np.float32)
    k = cp.RawKernel(source, "last_warp")
    if race is None:
        k((1,), (64,), (x, out))
        assert float(out[0]) == 2016.0
        return
    with pytest.raises(cuda.EmulatorError, match="lockstep") as err:
        k((1,), (64,), (x, out))
    assert race in str(err.value)


def test_static_shared_memory_is_sized_like_a_compiler() -> None:
    src = r"""
#define BLOCK 256
#define WARPS (BLOCK / 32)
extern "C" __global__ void a(float* x) { __shared__ float tree[BLOCK]; __shared__ double w[WARPS][2]; }
extern "C" __global__ void b(float* x) { __shared__ volatile unsigned int flag; }
extern "C" __global__ void c(float* x, int n) { x[0] = 1.0f; }
"""
    assert cuda.static_shared_bytes(src, "a") == 256 * 4 + 8 * 2 * 8
    assert cuda.static_shared_bytes(src, "b") == 4
    assert cuda.static_shared_bytes(src, "c") == 0


ATOMIC_SUM = r"""
extern "C" __global__ void total(const float* x, float* out) {
    atomicAdd(out, x[blockIdx.x * blockDim.x + threadIdx.x]);
}
"""


def test_shuffled_blocks_change_a_float_atomic_sum_from_run_to_run() -> None:
    cp = cupy_module.make()
    rng = np.random.default_rng(3)
    x = cp.asarray((rng.standard_normal(64 * 32) * 1e3).astype(np.float32))
    k = cp.RawKernel(ATOMIC_SUM, "total")

    def once() -> float:
        out = cp.zeros(1, dtype=np.float32)
        k((64,), (32,), (x, out))
        return float(out[0])

    assert len({once() for _ in range(3)}) == 1  # blocks in order: the same order every run
    with cuda.shuffled_blocks(seed=1):
        assert len({once() for _ in range(6)}) > 1


def test_half_accumulates_in_half() -> None:
    src = r"""
#include <cuda_fp16.h>
extern "C" __global__ void h(float* out) {
    __half acc = __float2half(2048.0f);
    acc = __hadd(acc, __float2half(1.0f));
    out[0] = __half2float(acc);
}
"""
    cp = cupy_module.make()
    out = cp.zeros(1, dtype=np.float32)
    cp.RawKernel(src, "h")((1,), (1,), (out,))
    assert float(out[0]) == 2048.0  # 2049 is not a float16: the spacing there is 2


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
    cp = cupy_module.make()
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
    cp = cupy_module.make()
    src = r"""
extern "C" __global__ void split(float* out) {
    float v = 1.0f;
    if (threadIdx.x < 16) v = __shfl_down_sync(0xffffffffu, v, 1);
    else __syncthreads();
    out[threadIdx.x] = v;
}
"""
    out = cp.zeros(32, dtype=np.float32)
    with pytest.raises(cuda.EmulatorError, match="waits for lanes that wait at __syncthreads"):
        cp.RawKernel(src, "split")((1,), (32,), (out,))


def test_a_compile_error_is_one_line_naming_the_kernel_lines() -> None:
    cp = cupy_module.make()
    out = cp.zeros(4, dtype=np.float32)
    broken = OOB.replace("out[i] = a[i + shift];", "out[i] = __no_such_builtin(a[i + shift]);")
    with pytest.raises(cuda.EmulatorError) as err:
        cp.RawKernel(broken, "copy")((1,), (4,), (out, out, np.int32(4), np.int32(0)))
    message = str(err.value)
    assert message.startswith("your CUDA C does not compile (emulator, host C++ compiler): ")
    assert "kernel source line 4: " in message and "__no_such_builtin" in message
    assert "a CUDA built-in the emulator does not provide" in message and "\n" not in message


COUNTED = r"""
extern "C" __global__ void counted(const float* a, float* out, int n, int live) {
    __shared__ float s[32];
    int t = threadIdx.x;
    float v = a[t];
    if (live > 0) {
        s[t] = v;
        __syncwarp();
        v = s[t ^ 1] + __shfl_down_sync(0xffffffffu, v, 1);
    }
    v += (float)(__ballot_sync(0xffffffffu, v > 0.0f) & 1u);  // a vote moves no value
    out[t] = v;
}
"""


@pytest.mark.parametrize("live", [1, 0])
def test_each_launch_counts_the_shared_accesses_and_shuffles_that_ran(live: int) -> None:
    """What a launch did, counted as it ran: the same compiled kernel touches shared memory and
    moves values between lanes only when its branch is taken, and a vote is not a move."""
    cp = cupy_module.make()
    a = cp.asarray(np.arange(32, dtype=np.float32))
    out = cp.zeros(32, dtype=np.float32)
    kernel = cp.RawKernel(COUNTED, "counted")
    kernel((1,), (32,), (a, out, np.int32(32), np.int32(live)))
    ran = kernel.ran
    assert isinstance(ran, cuda.Ran)
    if live:
        # 32 writes and 32 reads; 31 lanes read another lane's value (lane 31's shuffle down by
        # 1 falls past the warp and hands it its own: it moves nothing)
        assert ran.shared_touches == 64 and ran.lane_moves == 31, ran
    else:
        assert ran.shared_touches == 0 and ran.lane_moves == 0, ran


ADDS = r"""
extern "C" __global__ void adds(const float* a, float* f, double* d, int* i, int mode) {
    int t = threadIdx.x;
    if (mode == 1) atomicAdd(f, a[t]);
    if (mode == 2) atomicAdd(d, (double)a[t]);
    atomicAdd(i, 1);  // an integer ticket decides no bits of a sum
}
"""


@pytest.mark.parametrize("mode, counted", [(0, 0), (1, 32), (2, 32)])
def test_each_launch_counts_the_float_atomic_adds_that_ran(mode: int, counted: int) -> None:
    """deterministic-sum's rule (no float atomics) read from what ran, without NVRTC: float and
    double atomicAdds count, integer ones and a branch no thread takes do not."""
    cp = cupy_module.make()
    a = cp.asarray(np.ones(32, dtype=np.float32))
    f, d = cp.zeros(1, dtype=np.float32), cp.zeros(1, dtype=np.float64)
    i = cp.zeros(1, dtype=np.int32)
    kernel = cp.RawKernel(ADDS, "adds")
    kernel((1,), (32,), (a, f, d, i, np.int32(mode)))
    assert kernel.ran.float_atomic_adds == counted, kernel.ran
    assert int(cp.asnumpy(i)[0]) == 32


BUILTINS = r"""
extern "C" __global__ void builtins(const int* x, int* out, unsigned* counter, float* f) {
    int t = threadIdx.x;
    int lane = t % warpSize, warp = t / warpSize;
    int v = x[t];
    int hi = __reduce_max_sync(0xffffffffu, v), lo = __reduce_min_sync(0xffffffffu, v);
    unsigned uhi = __reduce_max_sync(0xffffffffu, (unsigned)(v + 100));
    unsigned ulo = __reduce_min_sync(0xffffffffu, (unsigned)(v + 100));
    __nanosleep(100);
    if (lane == 0) {
        out[4 * warp] = hi; out[4 * warp + 1] = lo;
        out[4 * warp + 2] = (int)uhi; out[4 * warp + 3] = (int)ulo;
    }
    atomicInc(counter, 40u);  // wraps to 0 after 40: 64 increments leave 23
    if (t == 0) {
        unsigned bits = __float_as_uint(1.5f);
        f[0] = __uint_as_float(bits + 1u) - 1.5f;  // one ulp of 1.5
        int2 p = make_int2(3, 4); uint4 q = make_uint4(1u, 2u, 3u, 4u); uint2 r = make_uint2(5u, 6u);
        f[1] = (float)(p.x * p.y + (int)(q.x + q.y + q.z + q.w) + (int)(r.x + r.y) + warpSize);
    }
}
"""


def test_warp_size_and_the_simple_built_ins() -> None:
    """warpSize, __reduce_max/min_sync (signed and unsigned), atomicInc, __nanosleep,
    __float_as_uint / __uint_as_float and the int2 / uint2 / uint4 vector types compile and
    behave as in CUDA."""
    cp = cupy_module.make()
    host = np.array([(7 * i) % 23 - 11 for i in range(64)], dtype=np.int32)
    x = cp.asarray(host)
    out = cp.full(8, -999, dtype=np.int32)
    counter = cp.zeros(1, dtype=np.uint32)
    f = cp.zeros(2, dtype=np.float32)
    cp.RawKernel(BUILTINS, "builtins")((1,), (64,), (x, out, counter, f))
    want = []
    for w in host.reshape(2, 32):
        want += [w.max(), w.min(), w.max() + 100, w.min() + 100]
    assert cp.asnumpy(out).tolist() == want
    assert int(cp.asnumpy(counter)[0]) == 64 % 41
    assert cp.asnumpy(f)[0] == np.spacing(np.float32(1.5))
    assert cp.asnumpy(f)[1] == 12 + 10 + 11 + 32


def test_the_fake_records_copies_between_host_and_device_and_fuse_compiles_only_elementwise():
    """Inside a traced call a copy between host and device is in the record under CUPTI's name
    (kernel_trace counts it against the call, as on a GPU); a fused body may not hide NumPy's
    work (np.bincount, np.cumsum, a copy to the host), as CuPy cannot compile it."""
    cp = cupy_module.make()
    a = cp.asarray(np.arange(8, dtype=np.float32))
    out = cp.zeros(8, dtype=np.float32)
    trace = cp.__gpulab_trace__
    with trace.call() as names:
        np.copyto(out, np.asarray(a) + np.float32(1))
    assert names == [cupy_module.HTOD]
    with trace.call() as names:
        host = cp.asnumpy(a)
        out[...] = host
    assert names[:2] == [cupy_module.DTOH, cupy_module.HTOD]
    with trace.call() as names:
        float(a[0]), a.get()
    assert names == [cupy_module.DTOH, cupy_module.DTOH]
    with trace.call() as names:  # CuPy's ndarray.set: a copy from the host, as a GPU records it
        out.set(np.arange(8, dtype=np.float32) * 3)
    assert names == [cupy_module.HTOD] and float(cp.asnumpy(out)[7]) == 21
    with pytest.raises(ValueError, match="Shape or dtype mismatch"):
        out.set(np.zeros(3, dtype=np.float32))
    with trace.call() as names:
        assert cp.asarray(a) is a and cp.asarray(np.ones(3)) is not None
        out.fill(0)  # a zero fill is a memset on a GPU: allocation, in the trace by that name
    assert names == [cupy_module.HTOD, "memset"]
    with trace.call() as names:  # NumPy's in-place methods are CuPy kernels on a GPU
        out.put([0], np.float32(5))
        out.flat[1:3] = np.ones(2, dtype=np.float32)
        out.fill(2)
    assert names == ["cupy_put", cupy_module.HTOD, "cupy_copy", "cupy_copy__float_float32"]
    with trace.call() as names:  # NumPy's methods that compute past the ufuncs (dot-reduction's
        # wrong/ndarray-dot-method.py), and a read into bytes
        a.dot(a), a.argmax(), a.take([1]), a.nonzero(), a.tobytes()
    assert names == ["cupy_dot", "cupy_argmax", "cupy_take", "cupy_nonzero", cupy_module.DTOH]
    with trace.call() as names:  # a scalar assigned is CuPy's fill, a list a copy from the host
        out[1] = 0
        out[2:4] = 3
        out[4:6] = [1.0, 2.0]
    assert names == ["memset", "cupy_copy__float_float32", cupy_module.HTOD, "cupy_copy"]
    with trace.call() as names:  # an index array is CuPy's gather (broadcast-outer's
        # wrong/broadcast-by-gather.py); a host one is copied over first
        index = cp.asarray(np.arange(2))  # a copy from the host, once
        out[np.arange(2)], out[1:3], out[index]
    assert names == [cupy_module.HTOD, cupy_module.HTOD, "cupy_take", "cupy_take"]
    with trace.call() as names:  # a copy or a cast is CuPy's copy kernel (transpose-tiled's
        # wrong/transposed-by-copy.py)
        out.copy(), out.astype(np.float64)
    assert names == ["cupy_copy", "cupy_copy"]
    fused = cp.fuse(kernel_name="relu_sum")(
        lambda x, y: cp.maximum(x * np.float32(2) + y, np.float32(0)).sum()
    )
    with trace.call() as names:
        assert float(cp.asnumpy(fused(a, a))) == 3 * 28
    assert names == [cupy_module.DTOH]  # the fused kernel's own steps are not the library's
    for body, what in [
        (lambda x: np.bincount(x), "numpy.bincount"),
        (lambda x: np.cumsum(x), "numpy.cumsum"),
        (lambda x: cp.asnumpy(x), "a copy to the host"),
        (lambda x: x[1:], "indexing"),
    ]:
        with pytest.raises(TypeError, match=f"cupy.fuse cannot compile {what}"):
            cp.fuse(kernel_name="body")(body)(a)


STILL = r"""
extern "C" __global__ void still(const float* a, float* out) {
    int t = threadIdx.x;
    out[t] = __shfl_xor_sync(0xffffffffu, a[t], 0) + __shfl_sync(0xffffffffu, a[t], t);
}
"""


def test_a_shuffle_that_hands_each_lane_its_own_value_moves_nothing() -> None:
    """An xor by 0 and an index naming the lane itself run, and their values are used, but no
    lane reads another's: a red team passed warp-argmax's shuffle rule with the first."""
    cp = cupy_module.make()
    a = cp.asarray(np.arange(32, dtype=np.float32))
    out = cp.zeros(32, dtype=np.float32)
    kernel = cp.RawKernel(STILL, "still")
    kernel((1,), (32,), (a, out))
    assert np.array_equal(cp.asnumpy(out), 2 * np.arange(32, dtype=np.float32))
    assert kernel.ran.lane_moves == 0, kernel.ran


WALK = r"""
extern "C" __global__ void walk(const float* a, float* out, int n) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        for (int i = 0; i < n; ++i) out[i] = a[i];
    }
}
"""


def test_the_busiest_thread_counts_its_own_block_only() -> None:
    """One thread walking the array touches every value; spread over blocks, each thread of each
    block counts its own accesses, not the sum over blocks of the threads of its index."""
    cp = cupy_module.make()
    n = 4096
    a = cp.asarray(np.arange(n, dtype=np.float32))
    out = cp.zeros(n, dtype=np.float32)
    walker = cp.RawKernel(WALK, "walk")
    walker((1,), (256,), (a, out, np.int32(n)))
    assert walker.ran.busiest_thread == 2 * n, walker.ran
    spread = cp.RawKernel(OOB, "copy")
    spread((n // 256,), (256,), (a, out, np.int32(n), np.int32(0)))
    assert spread.ran.busiest_thread <= 2, spread.ran


CLAMPED = r"""
extern "C" __global__ void clamped(const float* a, float* out, int n) {
    int i = min((int)(blockIdx.x * blockDim.x + threadIdx.x), n - 1);
    out[i] = a[i];
}
"""


def test_global_stores_are_counted_in_bytes() -> None:
    """A guarded copy stores its output once; a clamped index lets the spare threads store again."""
    cp = cupy_module.make()
    n = 1000
    a = cp.asarray(np.arange(n, dtype=np.float32))
    out = cp.zeros(n, dtype=np.float32)
    guarded = cp.RawKernel(OOB, "copy")
    guarded((4,), (256,), (a, out, np.int32(n), np.int32(0)))
    assert guarded.ran.global_written == 4 * n, guarded.ran
    clamped = cp.RawKernel(CLAMPED, "clamped")
    clamped((4,), (256,), (a, out, np.int32(n)))
    assert clamped.ran.global_written == 4 * 1024, clamped.ran
    # the loads are counted through each array the launch was handed, in argument order
    (a_lo, _, a_read), (_, _, out_read) = clamped.ran.region_reads
    assert a_read == 4 * 1024 and out_read == 0 and a_lo <= a.ctypes.data, clamped.ran
    assert clamped.ran.global_read == a_read
    # neighbouring lanes' accesses compared: a copy's loads and stores lie 4 bytes apart
    assert guarded.ran.load_near == guarded.ran.load_pairs > 0, guarded.ran
    assert guarded.ran.store_near == guarded.ran.store_pairs > 0, guarded.ran
    scattered = cp.RawKernel(SCATTER, "scatter")
    scattered((1,), (64,), (a, out))
    assert scattered.ran.store_pairs == 62 and scattered.ran.store_near == 0, scattered.ran
    assert scattered.ran.load_near == scattered.ran.load_pairs == 62, scattered.ran


SCATTER = r"""
extern "C" __global__ void scatter(const float* a, float* out) {
    int i = threadIdx.x;
    out[(i % 8) * 8 + i / 8] = a[i];  // a transpose of 8 x 8: each lane's store a row apart
}
"""


TEMPLATE = r"""
template <typename T, int SCALE>
__global__ void __launch_bounds__(64) scaled(const T* a, T* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] * (T)SCALE + (T)OFFSET;
}
"""


def test_raw_module_instances_of_a_template_and_macros_from_options() -> None:
    # a correct first-kernel written as a template instantiated through name_expressions, and
    # conv2d with its filter size given as -DK=..., were refused on the emulator (no extern "C"
    # kernel of that name; an undeclared macro) while CuPy runs both on a GPU
    cp = cupy_module.make()
    a = cp.asarray(np.arange(100, dtype=np.float32))
    for opts, offset in (
        (("-DOFFSET=1",), 1),
        (("-D", "OFFSET=2"), 2),
        (("--define-macro=OFFSET",), 1),
    ):
        mod = cp.RawModule(code=TEMPLATE, options=opts, name_expressions=("scaled<float, 3>",))
        kernel = mod.get_function("scaled<float, 3>")
        assert kernel.name == "scaled<float, 3>"  # the name the trace records, as on a GPU
        out = cp.full(100, np.nan, dtype=np.float32)
        kernel((2,), (64,), (a, out, np.int32(100)))
        assert np.array_equal(out, np.arange(100) * 3 + offset)
    # a template CuPy was not asked to instantiate is no kernel of the module, as on a GPU
    with pytest.raises(cuda.EmulatorError):
        cp.RawModule(code=TEMPLATE, options=("-DOFFSET=1",)).get_function("scaled<float, 3>")
    out = cp.full(4, np.nan, dtype=np.float32)
    cp.RawKernel(
        'extern "C" __global__ void k(float* o) { o[threadIdx.x] = K; }', "k", options=("-DK=7",)
    )((1,), (4,), (out,))
    assert np.array_equal(out, np.full(4, 7.0))


MATCH = r"""
extern "C" __global__ void match(const int* x, unsigned* any, unsigned* all, int* pred) {
    int t = threadIdx.x;
    any[t] = __match_any_sync(0xffffffffu, x[t]);
    int p = -1;
    all[t] = __match_all_sync(0xffffffffu, 4, &p);  // every lane holds the same value
    pred[t] = p;
    if (t < 16) {  // half the warp, the values apart: no match of all
        int q = -1;
        all[32 + t] = __match_all_sync(0x0000ffffu, (long long)x[t], &q);
        pred[32 + t] = q;
    }
}
"""


def test_match_any_and_match_all_group_lanes_by_value() -> None:
    """__match_any_sync hands each lane the mask of the lanes holding its value (a histogram's
    warp-aggregated atomics use it); __match_all_sync the mask when every lane named agrees,
    else 0, with the predicate set to match."""
    cp = cupy_module.make()
    host = np.array([i % 3 for i in range(32)], dtype=np.int32)
    any_ = cp.zeros(32, dtype=np.uint32)
    all_ = cp.zeros(48, dtype=np.uint32)
    pred = cp.full(48, -1, dtype=np.int32)
    cp.RawKernel(MATCH, "match")((1,), (32,), (cp.asarray(host), any_, all_, pred))
    want = [sum(1 << j for j in range(32) if host[j] == host[i]) for i in range(32)]
    assert cp.asnumpy(any_).tolist() == want
    assert cp.asnumpy(all_)[:32].tolist() == [0xFFFFFFFF] * 32
    assert cp.asnumpy(pred)[:32].tolist() == [1] * 32
    assert cp.asnumpy(all_)[32:].tolist() == [0] * 16
    assert cp.asnumpy(pred)[32:].tolist() == [0] * 16
