"""The CUDA emulator's reach: every shared array a kernel declares is watched (several in one
declaration, one at file scope), and what the kernel's source can touch is only what a GPU
kernel could (no runtime bookkeeping, no host memory, no copy past the checks, no launch past
the trace)."""

from __future__ import annotations

import numpy as np
import pytest

from gpulab.emulator import cuda, cupy_module, toolchain

pytestmark = pytest.mark.skipif(toolchain.compiler() is None, reason="no host C++ compiler")

# Two arrays in one declaration, and one at file scope: each a shared array of its own, which a
# neighbour's slot read without a barrier between races on
TWO_IN_ONE = r"""
extern "C" __global__ void k(const float* a, float* out) {
    __shared__ float s[64], r[2][64];
    int t = threadIdx.x;
    s[t] = a[t];
    r[1][t] = a[t] * 2.0f;
    SYNC
    out[t] = s[(t + 1) % 64] + r[1][(t + 1) % 64];
}
"""
FILE_SCOPE = r"""
#define N 64
__shared__ float tile[N];

extern "C" __global__ void k(const float* a, float* out) {
    int t = threadIdx.x;
    tile[t] = a[t];
    SYNC
    out[t] = tile[(t + 1) % N];
}
"""


def _run(source: str, sync: str) -> tuple[np.ndarray, cuda.RawKernel]:
    cp = cupy_module.make()
    a = cp.asarray(np.arange(64, dtype=np.float32))
    out = cp.empty(64, dtype=np.float32)
    kernel = cp.RawKernel(source.replace("SYNC", sync), "k")
    kernel((1,), (64,), (a, out))
    return out, kernel


@pytest.mark.parametrize("source", [TWO_IN_ONE, FILE_SCOPE], ids=["one-declaration", "file-scope"])
def test_every_shared_array_is_counted_and_race_checked(source: str) -> None:
    out, kernel = _run(source, "__syncthreads();")
    want = np.roll(np.arange(64, dtype=np.float32), -1)
    assert np.array_equal(out, want * 3 if source is TWO_IN_ONE else want)
    assert kernel.ran is not None and kernel.ran.shared_touches >= 128
    assert kernel.ran.shared_shares > 0
    with pytest.raises(cuda.EmulatorError, match="shared-memory race on (s|tile)\\[1\\]"):
        _run(source, "")


def test_static_shared_bytes_count_each_declarator_and_file_scope_arrays_used() -> None:
    assert cuda.static_shared_bytes(TWO_IN_ONE, "k") == 64 * 4 + 2 * 64 * 4
    assert cuda.static_shared_bytes(FILE_SCOPE, "k") == 64 * 4
    unused = FILE_SCOPE.replace("tile[t] = a[t];", "").replace("tile[(t + 1) % N]", "a[t]")
    assert cuda.static_shared_bytes(unused, "k") == 0


def _kernel(source: str, name: str = "k") -> tuple[object, cuda.RawKernel]:
    cp = cupy_module.make()
    return cp, cp.RawKernel(source, name)


def test_kernel_source_cannot_name_the_runtime_even_through_macros() -> None:
    forged = r"""
#define CAT(a, b) a##b
extern "C" __global__ void k(float* out) {
#ifndef __CUDA_ARCH__
    CAT(em, u)::shared_touches += 4;
#endif
    out[threadIdx.x] = 1.0f;
}
"""
    cp, kernel = _kernel(forged)
    with pytest.raises(
        cuda.EmulatorError, match="names the emulator's runtime \\(emu::shared_touches"
    ):
        kernel((1,), (32,), (cp.zeros(32, dtype=np.float32),))
    # code kept from NVRTC (`#ifndef __CUDACC__`) is kept from the emulator too
    hidden = forged.replace("__CUDA_ARCH__", "__CUDACC__")
    cp, kernel = _kernel(hidden)
    kernel((1,), (32,), (cp.zeros(32, dtype=np.float32),))


MEMCPY = r"""
extern "C" __global__ void k(const float* a, float* out, int n) {
    if (threadIdx.x != 0) return;
    float buf[64];
    memcpy(buf, a, n * sizeof(float));
    memcpy(out, buf, n * sizeof(float));
}
"""


def test_memcpy_is_checked_and_counted_as_the_loads_it_replaces() -> None:
    cp, kernel = _kernel(MEMCPY)
    a = cp.asarray(np.arange(64, dtype=np.float32))
    out = cp.zeros(64, dtype=np.float32)
    kernel((1,), (32,), (a, out, np.int32(64)))
    assert np.array_equal(out, np.arange(64))
    assert kernel.ran is not None and kernel.ran.busiest_thread == 128
    small = cp.zeros(16, dtype=np.float32)
    with pytest.raises(cuda.EmulatorError, match="out-of-bounds write"):
        kernel((1,), (32,), (a, small, np.int32(64)))


def test_an_address_outside_every_device_allocation_is_host_memory() -> None:
    cp, kernel = _kernel(
        r"""
extern "C" __global__ void k(unsigned long long host, float* out) {
    out[threadIdx.x] = ((const float*)host)[threadIdx.x];
}"""
    )
    out = cp.zeros(32, dtype=np.float32)
    host = np.ones(32, dtype=np.float32)
    with pytest.raises(cuda.EmulatorError, match="read memory outside the device.*host memory"):
        kernel((1,), (32,), (np.uint64(host.__array_interface__["data"][0]), out))
    device = cp.ones(32, dtype=np.float32)  # a device allocation's address is device memory
    kernel((1,), (32,), (np.uint64(device.__array_interface__["data"][0]), out))
    assert np.array_equal(out, np.ones(32))


def test_every_launch_is_in_the_trace_whoever_makes_it() -> None:
    cp, kernel = _kernel('extern "C" __global__ void k(float* out) { out[threadIdx.x] = 1.0f; }')
    ew = cp.ElementwiseKernel("float32 x", "float32 y", "y = x")
    out = cp.zeros(32, dtype=np.float32)
    with cp.__gpulab_trace__.call() as names:
        kernel((1,), (32,), (out,))
        ew(out, out)
    assert names == ["k", "kernel"]
    from gpulab.exercises import kernel_trace  # deferred: the grader's side, read here only

    assert kernel_trace.foreign(names, ["k", "ElementwiseKernel"]) == []
    assert kernel_trace.foreign(names, ["k"]) == ["kernel"]


def test_the_launch_hooks_cannot_be_emptied_in_place() -> None:
    """A list of hooks could be cleared through a name built at run time (`getattr(cuda,
    "ON_LA" + "UNCH").clear()`), which no snapshot of the module's names sees; a tuple cannot,
    and rebinding it is a change of the module's names, which the Guard puts back."""
    hooks = getattr(cuda, "ON_LA" + "UNCH")
    assert cupy_module._record in hooks
    with pytest.raises(AttributeError):
        hooks.clear()
    from gpulab.exercises.sandbox import Guard  # deferred: the grader's side, read here only

    guard = Guard()
    cuda.ON_LAUNCH = ()
    assert "gpulab.emulator.cuda.ON_LAUNCH" in guard.restore()
    assert cupy_module._record in cuda.ON_LAUNCH


# reduction-kernel's wrong/row-by-host-vector-loads.py: one thread walking a row through AVX
# masked loads, which ThreadSanitizer's instrumentation never counts
VECTOR_BUILTIN = r"""
typedef float v8f __attribute__((vector_size(32)));
typedef int v8i __attribute__((vector_size(32)));
__attribute__((target("avx2"))) __device__ float first(const float* p) {
    v8i all = {-1, -1, -1, -1, -1, -1, -1, -1};
    return __builtin_ia32_maskloadps256((const v8f*)p, all)[0];
}
extern "C" __global__ void k(const float* a, float* out) { out[threadIdx.x] = first(a); }
"""
VECTOR_HEADER = r"""
#include <immintrin.h>
extern "C" __global__ void k(const float* a, float* out) { out[threadIdx.x] = a[0]; }
"""


@pytest.mark.parametrize(
    ("source", "named"),
    [(VECTOR_BUILTIN, "__builtin_ia32_maskloadps256"), (VECTOR_HEADER, "immintrin.h")],
    ids=["builtin", "header"],
)
def test_the_host_cpus_vector_instructions_are_refused(source: str, named: str) -> None:
    cp, kernel = _kernel(source)
    a = cp.asarray(np.arange(64, dtype=np.float32))
    with pytest.raises(cuda.EmulatorError, match=f"host CPU's vector instructions \\({named}"):
        kernel((1,), (32,), (a, cp.zeros(32, dtype=np.float32)))


# reduction-kernel's wrong/row-copied-by-std-copy.py: the host's standard library (which the
# emulator's kernels see through its runtime's headers) copying a row past every count
STD_COPY = r"""
extern "C" __global__ void k(const float* a, float* out) {
    float buf[32];
    std::copy(a, a + 32, &buf[0]);
    out[threadIdx.x] = buf[threadIdx.x];
}
"""
BCOPY = r"""
extern "C" __global__ void k(const float* a, float* out) {
    float buf[32];
    __builtin_bcopy(a, buf, sizeof buf);
    out[threadIdx.x] = buf[threadIdx.x];
}
"""


@pytest.mark.parametrize(
    ("source", "named"),
    [
        (STD_COPY, "standard library \\(std::copy"),
        (STD_COPY.replace("std::copy", "using namespace std; copy"), "namespace std"),
        (BCOPY, "calls __builtin_bcopy"),
    ],
    ids=["std-copy", "using-namespace-std", "builtin-bcopy"],
)
def test_the_hosts_library_copies_are_refused(source: str, named: str) -> None:
    cp, kernel = _kernel(source)
    a = cp.asarray(np.arange(64, dtype=np.float32))
    with pytest.raises(cuda.EmulatorError, match=named):
        kernel((1,), (32,), (a, cp.zeros(32, dtype=np.float32)))


# The host compiler's atomic builtins: a histogram counting with `__sync_fetch_and_add` failed
# here with an undefined sanitizer symbol (an OSError), and NVRTC refuses it ("identifier
# "__sync_fetch_and_add" is undefined"); so would a one-thread walk loading by `__atomic_load_n`
@pytest.mark.parametrize(
    ("statement", "named"),
    [
        ("__sync_fetch_and_add(&out[a[threadIdx.x] & 31], 1);", "__sync_fetch_and_add"),
        (
            "__atomic_fetch_add(&out[a[threadIdx.x] & 31], 1, __ATOMIC_RELAXED);",
            "__atomic_fetch_add",
        ),
        (
            "out[threadIdx.x] = __atomic_load_n(&a[threadIdx.x], __ATOMIC_RELAXED);",
            "__atomic_load_n",
        ),
    ],
    ids=["sync", "atomic", "atomic-load"],
)
def test_the_host_compilers_atomic_builtins_are_refused(statement: str, named: str) -> None:
    source = 'extern "C" __global__ void k(const int* a, int* out) { ' + statement + " }"
    cp, kernel = _kernel(source)
    a = cp.asarray(np.arange(32, dtype=np.int32))
    with pytest.raises(cuda.EmulatorError, match=f"host compiler's atomic builtin {named} "):
        kernel((1,), (32,), (a, cp.zeros(32, dtype=np.int32)))
