"""A CPU stand-in for CuPy's RawKernel, for testing kernel exercises where there is no GPU.

The CUDA C source is compiled with the host C++ compiler behind a small prelude (threadIdx,
blockIdx, `__shared__`, `__syncthreads`, atomics) and run block by block. The threads of a block
are fibers (ucontext) switched only at `__syncthreads()`: every thread runs up to its next barrier,
in thread order, before any goes past it. That makes a race deterministic: a thread that reads a
neighbour's shared value without a barrier reads it before the neighbour wrote it, which is the
outcome a real GPU shows only some of the time. Shared arrays are `static`, so a block sees what
the previous block left in them, like a real SM's uninitialised shared memory.

Warps: 32 consecutive threads of a block; a shuffle (`__shfl_*_sync`) or `__syncwarp()` waits
until every live lane of the warp reached it, then hands each lane its source lane's value.
What it is not: a GPU. No warp-synchronous code without a shuffle, no concurrency between
blocks, no timing. It exists so that references, known-wrong solutions and launch wrappers can be
tested in CI; the real check runs on a GPU.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

_PRELUDE = r"""
#include <ucontext.h>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>
#define DYN_SMEM_BYTES (227 * 1024)  // an H100's most per block: `extern __shared__` arrays
struct dim3 {
    unsigned int x, y, z;
    dim3(unsigned int a = 1, unsigned int b = 1, unsigned int c = 1) : x(a), y(b), z(c) {}
};
typedef dim3 uint3;
static dim3 threadIdx, blockIdx, blockDim, gridDim;
namespace emu {
static ucontext_t sched;
static std::vector<ucontext_t> ctx;
static std::vector<char> done;
// What a fiber waits at: 0 nothing (it runs), 1 the block's barrier, 2 its warp's barrier (a
// shuffle or __syncwarp). A warp's barrier opens once every live lane of the warp waits there,
// the block's once every live thread of the block does.
static std::vector<char> wait;
static std::vector<unsigned long long> shfl_in, shfl_out;
static std::vector<unsigned> shfl_src;
static int error;  // 1: the lanes of one warp wait at different barriers (divergence)
static std::vector<char> stacks;
static int cur;
static std::function<void()> body;
static const size_t STACK = 64 * 1024;
static void entry() { body(); done[cur] = 1; }
static bool release(unsigned nt) {
    bool any = false;
    for (unsigned w = 0; w < nt; w += 32) {
        unsigned end = w + 32 < nt ? w + 32 : nt;
        bool all = true, some = false;
        for (unsigned t = w; t < end; ++t) {
            if (done[t]) continue;
            all = all && wait[t] == 2;
            some = some || wait[t] == 2;
        }
        if (!some || !all) continue;
        for (unsigned t = w; t < end; ++t) {
            if (done[t]) continue;
            unsigned s = shfl_src[t];  // a lane that left the kernel gives back the caller's own
            shfl_out[t] = s < nt && !done[s] && wait[s] == 2 ? shfl_in[s] : shfl_in[t];
        }
        for (unsigned t = w; t < end; ++t) if (!done[t]) wait[t] = 0;
        any = true;
    }
    if (any) return true;
    bool block = true, live = false;
    for (unsigned t = 0; t < nt; ++t) {
        if (done[t]) continue;
        live = true;
        block = block && wait[t] == 1;
    }
    if (live && !block) error = 1;  // a warp split between barriers: let them all go on
    for (unsigned t = 0; t < nt; ++t) wait[t] = 0;
    return live;
}
static void launch(dim3 g, dim3 b, bool barriers, std::function<void()> f) {
    gridDim = g; blockDim = b; body = f;
    unsigned nt = b.x * b.y * b.z;
    if (!barriers) {  // no __syncthreads: each thread runs to its end, no fibers needed
        for (unsigned bz = 0; bz < g.z; ++bz) for (unsigned by = 0; by < g.y; ++by)
        for (unsigned bx = 0; bx < g.x; ++bx) {
            blockIdx = dim3(bx, by, bz);
            for (unsigned t = 0; t < nt; ++t) {
                threadIdx = dim3(t % b.x, (t / b.x) % b.y, t / (b.x * b.y));
                f();
            }
        }
        return;
    }
    ctx.resize(nt); done.assign(nt, 0); stacks.resize(nt * STACK);
    wait.assign(nt, 0); shfl_in.assign(nt, 0); shfl_out.assign(nt, 0); shfl_src.assign(nt, 0);
    for (unsigned bz = 0; bz < g.z; ++bz) for (unsigned by = 0; by < g.y; ++by)
    for (unsigned bx = 0; bx < g.x; ++bx) {
        blockIdx = dim3(bx, by, bz);
        for (unsigned t = 0; t < nt; ++t) {
            getcontext(&ctx[t]);
            ctx[t].uc_stack.ss_sp = &stacks[t * STACK];
            ctx[t].uc_stack.ss_size = STACK;
            ctx[t].uc_link = &sched;
            makecontext(&ctx[t], entry, 0);
            done[t] = 0;
            wait[t] = 0;
        }
        bool live = true;
        while (live) {
            for (unsigned t = 0; t < nt; ++t) {
                if (done[t] || wait[t]) continue;
                cur = (int)t;
                threadIdx = dim3(t % b.x, (t / b.x) % b.y, t / (b.x * b.y));
                swapcontext(&sched, &ctx[t]);
            }
            live = release(nt);
        }
    }
}
}
extern "C" int emu_take_error() { int e = emu::error; emu::error = 0; return e; }
static void __syncthreads() {
    emu::wait[emu::cur] = 1;
    swapcontext(&emu::ctx[emu::cur], &emu::sched);
}
namespace emu {
// A shuffle: this lane's value goes in, the lane `src` (of this block's threads) gives its own.
template <class T> static T exchange(T v, unsigned src) {
    static_assert(sizeof(T) <= 8, "a shuffle moves at most 8 bytes");
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    shfl_in[cur] = bits;
    shfl_src[cur] = src;
    wait[cur] = 2;
    swapcontext(&ctx[cur], &sched);
    T r;
    std::memcpy(&r, &shfl_out[cur], sizeof(T));
    return r;
}
// the first lane of this lane's group of `width` (a power of two up to 32)
static unsigned segment(int width) { return (unsigned)cur & ~(unsigned)(width - 1); }
}
#define warpSize 32
template <class T> static T __shfl_sync(unsigned, T v, int lane, int width = 32) {
    return emu::exchange(v, emu::segment(width) + ((unsigned)lane & (unsigned)(width - 1)));
}
template <class T> static T __shfl_down_sync(unsigned, T v, unsigned d, int width = 32) {
    unsigned l = (unsigned)emu::cur & (unsigned)(width - 1);
    return emu::exchange(v, l + d < (unsigned)width ? (unsigned)emu::cur + d : (unsigned)emu::cur);
}
template <class T> static T __shfl_up_sync(unsigned, T v, unsigned d, int width = 32) {
    unsigned l = (unsigned)emu::cur & (unsigned)(width - 1);
    return emu::exchange(v, l >= d ? (unsigned)emu::cur - d : (unsigned)emu::cur);
}
template <class T> static T __shfl_xor_sync(unsigned, T v, int m, int width = 32) {
    return emu::exchange(v, emu::segment(width) + ((((unsigned)emu::cur & (unsigned)(width - 1)) ^ (unsigned)m) & (unsigned)(width - 1)));
}
static void __syncwarp(unsigned = 0xffffffffu) { emu::exchange(0, (unsigned)emu::cur); }
template <class T> static T __ldg(const T* p) { return *p; }
static inline void __threadfence() {}  // blocks never run at once here
#define __expf(x) expf(x)  // glibc declares an __expf of its own, which it does not export
static inline int atomicCAS(int* p, int cmp, int v) { int old = *p; if (old == cmp) *p = v; return old; }
static inline unsigned atomicCAS(unsigned* p, unsigned cmp, unsigned v) {
    unsigned old = *p; if (old == cmp) *p = v; return old;
}
static inline int atomicExch(int* p, int v) { int old = *p; *p = v; return old; }
static inline unsigned atomicExch(unsigned* p, unsigned v) { unsigned old = *p; *p = v; return old; }
static inline float atomicExch(float* p, float v) { float old = *p; *p = v; return old; }
static inline int atomicMax(int* p, int v) { int old = *p; if (v > old) *p = v; return old; }
#define __launch_bounds__(...)
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))  // anywhere in a declaration, as nvcc allows
struct float2 { float x, y; };
struct __attribute__((aligned(16))) float4 { float x, y, z, w; };
struct __attribute__((aligned(16))) int4 { int x, y, z, w; };
static inline float2 make_float2(float x, float y) { return {x, y}; }
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
static inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
namespace emu { alignas(16) static unsigned char dyn_smem[DYN_SMEM_BYTES]; }
static inline float atomicAdd(float* p, float v) {
    float old = *p; *p = old + v; return old;  // blocks never run at once here
}
static inline int atomicAdd(int* p, int v) { int old = *p; *p = old + v; return old; }
static inline unsigned int atomicAdd(unsigned int* p, unsigned int v) {
    unsigned int old = *p; *p = old + v; return old;
}
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    unsigned long long old = *p; *p = old + v; return old;
}
static inline float atomicMax(float* p, float v) { float old = *p; if (v > old) *p = v; return old; }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
static inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
static inline float __fdividef(float a, float b) { return a / b; }
static inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
"""

# C scalar types a kernel parameter may have, and the NumPy dtype CuPy must be handed for it.
_SCALARS: dict[str, np.dtype] = {
    "int": np.dtype(np.int32),
    "unsigned int": np.dtype(np.uint32),
    "unsigned": np.dtype(np.uint32),
    "long long": np.dtype(np.int64),
    "long long int": np.dtype(np.int64),
    "unsigned long long": np.dtype(np.uint64),
    "float": np.dtype(np.float32),
    "double": np.dtype(np.float64),
}
_DYNAMIC_SHARED = re.compile(
    r"extern\s+__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?(\w+)\s+(\w+)\s*\[\s*\]\s*;"
)
_SIGNATURE = re.compile(
    r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(([^)]*)\)',
    re.S,
)
_CACHE: dict[str, ctypes.CDLL] = {}
_DYN_SMEM_BYTES = 227 * 1024  # DYN_SMEM_BYTES of the prelude


class EmulatorError(RuntimeError):
    """The source did not compile on the host, or a launch broke a rule CuPy would not check."""


def compiler() -> str | None:
    """The C++ compiler the emulator builds kernels with ($CXX or g++), or None when absent."""
    return shutil.which(os.environ.get("CXX", "g++"))


def kernel_params(source: str, name: str) -> list[str]:
    """The C types of `name`'s parameters, names and `__restrict__` dropped."""
    for found, params in _SIGNATURE.findall(source):
        if found != name:
            continue
        types = []
        for p in (x.strip() for x in params.split(",") if x.strip()):
            p = p.replace("__restrict__", " ")
            if "*" in p:
                types.append(p[: p.rindex("*") + 1].strip())
            else:
                types.append(" ".join(p.split()[:-1]).replace("const ", "").strip())
        return types
    raise EmulatorError(f'no extern "C" __global__ kernel named {name!r} in the source')


def _tag(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def _unit(source: str) -> str:
    """One source as a C++ unit: in its own namespace (so several sources that name their
    kernels alike build into one library), its macros undefined after it, and a C launcher per
    kernel, `emu_launch_<tag>_<name>(grid, block, args)`."""
    tag = _tag(source)
    body = re.sub(r'extern\s+"C"\s+(__global__)', r"\1", source)
    # `extern __shared__ T name[];` (dynamic shared memory, sized by the launch): a pointer to
    # one static buffer, which like static shared arrays keeps what the last block left there.
    body = _DYNAMIC_SHARED.sub(
        lambda m: (
            f"{m.group(1)}* const {m.group(2)} = reinterpret_cast<{m.group(1)}*>(emu::dyn_smem);"
        ),
        body,
    )
    macros = sorted(set(re.findall(r"^\s*#\s*define\s+(\w+)", source, re.M)))
    launchers = []
    starts = [m.start() for m in _SIGNATURE.finditer(source)] + [len(source)]
    for k, (name, _) in enumerate(_SIGNATURE.findall(source)):
        chunk = source[starts[k] : starts[k + 1]]
        # fibers where threads wait for each other: barriers, warp shuffles, device functions
        waits = ("__syncthreads", "_sync(")
        fibers = any(w in chunk for w in waits) or "__device__" in source
        barriers = "true" if fibers else "false"
        types = kernel_params(source, name)
        call = ", ".join(f"*({t}*)args[{i}]" for i, t in enumerate(types))
        launchers.append(
            f'extern "C" void emu_launch_{tag}_{name}(unsigned gx, unsigned gy, unsigned gz, '
            f"unsigned bx, unsigned by, unsigned bz, void** args) {{\n"
            f"  emu::launch(dim3(gx, gy, gz), dim3(bx, by, bz), {barriers}, "
            f"[=] {{ emu_{tag}::{name}({call}); }});\n}}\n"
        )
    undef = "".join(f"#undef {m}\n" for m in macros)
    return f'namespace emu_{tag} {{\n#line 1 "kernel.cu"\n{body}\n}}\n{undef}' + "".join(launchers)


def prebuild(sources: list[str]) -> None:
    """Compile every source not built yet into one library: one compiler run for a whole test
    session instead of one per source (the prelude's headers dominate the compile time)."""
    todo = sorted({s for s in sources if _tag(s) not in _CACHE})
    if not todo:
        return
    lib = _compile(_PRELUDE + "".join(_unit(s) for s in todo))
    for s in todo:
        _CACHE[_tag(s)] = lib


def _compile(text: str) -> ctypes.CDLL:
    cxx = compiler()
    if cxx is None:
        raise EmulatorError("no host C++ compiler (g++) to emulate the kernel with")
    key = hashlib.sha256(text.encode()).hexdigest()[:24]
    out_dir = Path(tempfile.gettempdir()) / "gpulab-cuda-emu"
    out_dir.mkdir(exist_ok=True)
    lib = out_dir / f"{key}.so"
    if not lib.exists():
        src = out_dir / f"{key}.{os.getpid()}.cpp"
        src.write_text(text)
        tmp = out_dir / f"{key}.{os.getpid()}.so"
        proc = subprocess.run(
            [cxx, "-std=c++17", "-O1", "-shared", "-fPIC", "-w", str(src), "-o", str(tmp)],
            capture_output=True,
            text=True,
        )
        src.unlink(missing_ok=True)
        if proc.returncode != 0:
            raise EmulatorError("host compile failed:\n" + proc.stderr[-3000:])
        tmp.replace(lib)
    return ctypes.CDLL(str(lib))


def _build(source: str) -> ctypes.CDLL:
    if _tag(source) not in _CACHE:
        prebuild([source])
    return _CACHE[_tag(source)]


def _dims(v: Any) -> tuple[int, int, int]:
    t = tuple(int(x) for x in (v if isinstance(v, tuple | list) else (v,)))
    if not 1 <= len(t) <= 3 or any(x < 1 for x in t):
        raise EmulatorError(f"grid and block must be 1 to 3 positive sizes, got {v!r}")
    return (t + (1, 1))[:3]  # type: ignore[return-value]


class RawKernel:
    """`cupy.RawKernel(source, name)` on the CPU: `kernel(grid, block, args)`."""

    def __init__(self, code: str, name: str, options: tuple[str, ...] = (), **_: Any) -> None:
        self.code, self.name = code, name
        self.params = kernel_params(code, name)
        self._fn: Any = None

    @property
    def shared_size_bytes(self) -> int:
        """Nonzero when the source declares static shared memory (the emulator cannot size it
        as a compiler would; a check only asks whether there is any)."""
        code = re.sub(r"//[^\n]*|/\*.*?\*/", "", self.code, flags=re.S)
        return 1 if re.search(r"(?<!extern )__shared__", code) else 0

    def __call__(
        self, grid: Any, block: Any, args: tuple, shared_mem: int = 0, stream: Any = None
    ) -> None:
        if self._fn is None:
            self._fn = getattr(_build(self.code), f"emu_launch_{_tag(self.code)}_{self.name}")
        g, b = _dims(grid), _dims(block)
        if not 0 <= int(shared_mem) <= _DYN_SMEM_BYTES:
            raise EmulatorError(
                f"shared_mem={shared_mem} bytes of dynamic shared memory; a block gets at most "
                f"{_DYN_SMEM_BYTES}"
            )
        if b[0] * b[1] * b[2] > 1024:
            raise EmulatorError(f"{b[0] * b[1] * b[2]} threads per block; a GPU allows 1024")
        if len(args) != len(self.params):
            raise EmulatorError(f"{self.name} takes {len(self.params)} arguments, got {len(args)}")
        keep, ptrs = [], []
        for i, (arg, ctype) in enumerate(zip(args, self.params, strict=True)):
            if "*" in ctype:
                if not isinstance(arg, np.ndarray):
                    raise EmulatorError(f"argument {i} of {self.name} must be an array")
                val: Any = ctypes.c_void_p(arg.ctypes.data)
            else:
                want = _SCALARS.get(ctype)
                if want is None:
                    raise EmulatorError(f"the emulator does not know the C type {ctype!r}")
                if not isinstance(arg, np.generic) or arg.dtype != want:
                    got = arg.dtype.name if isinstance(arg, np.generic) else type(arg).__name__
                    raise EmulatorError(
                        f"argument {i} of {self.name} is a {got} but the kernel takes {ctype}: "
                        f"pass np.{want.name}(...)"
                    )
                val = ctypes.create_string_buffer(arg.tobytes(), want.itemsize)
            keep.append(val)
            ptrs.append(ctypes.cast(ctypes.pointer(val), ctypes.c_void_p))
        argv = (ctypes.c_void_p * max(1, len(ptrs)))(*ptrs)
        self._fn(*g, *b, argv)
        lib = _build(self.code)
        if lib.emu_take_error():
            raise EmulatorError(
                f"{self.name}: the lanes of a warp waited at different barriers (a shuffle or "
                "__syncwarp some lanes of the warp never reached)"
            )
