"""A CPU stand-in for CuPy's RawKernel, for testing kernel exercises where there is no GPU.

The CUDA C source is compiled with the host C++ compiler behind a small prelude (threadIdx,
blockIdx, `__shared__`, `__syncthreads`, atomics) and run block by block. The threads of a block
are fibers (ucontext) switched only at `__syncthreads()`: every thread runs up to its next barrier,
in thread order, before any goes past it. That makes a race deterministic: a thread that reads a
neighbour's shared value without a barrier reads it before the neighbour wrote it, which is the
outcome a real GPU shows only some of the time. Shared arrays are `static`, so a block sees what
the previous block left in them, like a real SM's uninitialised shared memory.

Warps: threads 32k..32k+31 of a block are a warp. A warp operation (`__shfl_*_sync`,
`__syncwarp`, `__ballot_sync`, `__reduce_add_sync`, cooperative groups' tile shuffles and
`cg::reduce`) is a meeting point like a barrier, for the lanes its mask names only: every lane
named must arrive at a warp operation before any goes on, and the rules a GPU leaves undefined
are errors here (a lane calling with a mask that leaves it out, a lane named in the mask that has
exited or waits at `__syncthreads()`, reading a lane outside the mask). Between meeting points a
thread runs alone, so warp-synchronous code that leans on lockstep (a last-warp unroll through
shared memory without `__syncwarp()`) reads stale values every time, as independent thread
scheduling allows since Volta. `__half` is `_Float16` (`cuda_fp16.h` basics).

What it is not: a GPU. No concurrency between blocks (though `shuffled_blocks()` runs them in a
random order, so a result that depends on the order of atomics differs from run to run), no
timing. It exists so that references, known-wrong solutions and launch wrappers can be tested in
CI; the real check runs on a GPU.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

_PRELUDE = r"""
#include <ucontext.h>
#include <cmath>
#include <cstdio>
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
enum { RUN = 0, BAR = 1, WARP = 2, DONE = 3 };
enum { W_SYNC, W_IDX, W_UP, W_DOWN, W_XOR, W_BALLOT, W_ANY, W_ALL, W_ADD };
static const char* const WNAME[] = {"__syncwarp", "__shfl_sync", "__shfl_up_sync",
    "__shfl_down_sync", "__shfl_xor_sync", "__ballot_sync", "__any_sync", "__all_sync",
    "__reduce_add_sync"};
static ucontext_t sched;
static std::vector<ucontext_t> ctx;
static std::vector<char> state;
static std::vector<char> stacks;
static std::vector<unsigned> wmask;
static std::vector<int> wkind, warg, wwidth;
static std::vector<unsigned long long> wval, wres;
static int cur;
static unsigned nthreads;
static char err[600];
static std::function<void()> body;
static const size_t STACK = 64 * 1024;
static void entry() { body(); state[cur] = DONE; }
static void fail(const char* msg) { if (!err[0]) snprintf(err, sizeof err, "%s", msg); }
static unsigned long long warp_op(int kind, unsigned mask, unsigned long long v, int arg, int w) {
    int t = cur;
    state[t] = WARP; wkind[t] = kind; wmask[t] = mask; wval[t] = v; warg[t] = arg; wwidth[t] = w;
    swapcontext(&ctx[t], &sched);
    return wres[t];
}
// Lane `i`'s source lane for a shuffle of `kind` (-1: its own value, as CUDA gives past a segment).
static int source_lane(int kind, int i, int arg, int w) {
    if (w < 1 || w > 32 || (w & (w - 1))) w = 32;
    int seg = i / w * w, j = i % w;
    if (kind == W_IDX) return seg + ((arg % w) + w) % w;
    if (kind == W_UP) return j - arg < 0 ? -1 : i - arg;
    if (kind == W_DOWN) return j + arg >= w ? -1 : i + arg;
    int s = i ^ arg;
    return (s < 0 || s / w != i / w) ? -1 : s;
}
// Release warp `base`'s waiting lanes if every lane their mask names has arrived; false if not.
static bool release(unsigned base) {
    unsigned end = base + 32 < nthreads ? base + 32 : nthreads;
    int first = -1;
    char msg[400];
    for (unsigned t = base; t < end; ++t) {
        if (state[t] != WARP) continue;
        unsigned lane = t - base;
        if (!((wmask[t] >> lane) & 1u)) {
            snprintf(msg, sizeof msg, "thread %u (lane %u of warp %u) called %s with mask 0x%08x, "
                "which leaves that lane out: undefined on a GPU", t, lane, base / 32,
                WNAME[wkind[t]], wmask[t]);
            fail(msg);
            return false;
        }
        if (first < 0) first = (int)t;
    }
    if (first < 0) return false;
    unsigned m = wmask[first];
    int kind = wkind[first];
    for (unsigned lane = 0; lane < 32; ++lane) {
        if (!((m >> lane) & 1u) || base + lane >= end) continue;
        unsigned t = base + lane;
        if (state[t] == DONE) {
            snprintf(msg, sizeof msg, "lane %u of warp %u called %s with mask 0x%08x, but lane "
                "%u, named in the mask, had already returned: undefined on a GPU",
                (unsigned)first - base, base / 32, WNAME[kind], m, lane);
            fail(msg);
            return false;
        }
        if (state[t] != WARP) return false;  // not here yet
        if (wmask[t] != m || wkind[t] != kind) {
            snprintf(msg, sizeof msg, "lanes %u and %u of warp %u meet at different warp "
                "operations (%s mask 0x%08x, %s mask 0x%08x): undefined on a GPU",
                (unsigned)first - base, lane, base / 32, WNAME[kind], m, WNAME[wkind[t]],
                wmask[t]);
            fail(msg);
            return false;
        }
    }
    unsigned long long vote = 0, all = 1, sum = 0;
    for (unsigned lane = 0; lane < 32; ++lane) {
        if (!((m >> lane) & 1u) || base + lane >= end) continue;
        unsigned long long v = wval[base + lane];
        vote |= (v != 0ull) << lane;
        all &= v != 0ull;
        sum += v;
    }
    for (unsigned lane = 0; lane < 32; ++lane) {
        if (!((m >> lane) & 1u) || base + lane >= end) continue;
        unsigned t = base + lane;
        switch (kind) {
            case W_SYNC: break;
            case W_BALLOT: wres[t] = vote; break;
            case W_ANY: wres[t] = vote != 0; break;
            case W_ALL: wres[t] = all; break;
            case W_ADD: wres[t] = sum & 0xffffffffull; break;
            default: {
                int s = source_lane(kind, (int)lane, warg[t], wwidth[t]);
                if (s < 0) { wres[t] = wval[t]; break; }
                if (!((m >> s) & 1u) || base + s >= end) {
                    snprintf(msg, sizeof msg, "lane %u of warp %u reads lane %d through %s, but "
                        "the mask 0x%08x leaves lane %d out: its value is undefined on a GPU",
                        lane, base / 32, s, WNAME[kind], m, s);
                    fail(msg);
                    return false;
                }
                wres[t] = wval[base + s];
            }
        }
        state[t] = RUN;
    }
    return true;
}
static void launch(dim3 g, dim3 b, bool barriers, const unsigned* order, std::function<void()> f) {
    gridDim = g; blockDim = b; body = f;
    unsigned nt = b.x * b.y * b.z;
    unsigned nb = g.x * g.y * g.z;
    nthreads = nt;
    err[0] = 0;
    if (!barriers) {  // no __syncthreads: each thread runs to its end, no fibers needed
        for (unsigned k = 0; k < nb; ++k) {
            unsigned id = order ? order[k] : k;
            blockIdx = dim3(id % g.x, (id / g.x) % g.y, id / (g.x * g.y));
            for (unsigned t = 0; t < nt; ++t) {
                threadIdx = dim3(t % b.x, (t / b.x) % b.y, t / (b.x * b.y));
                f();
            }
        }
        return;
    }
    ctx.resize(nt); state.assign(nt, RUN); stacks.resize(nt * STACK);
    wmask.assign(nt, 0); wkind.assign(nt, 0); warg.assign(nt, 0); wwidth.assign(nt, 32);
    wval.assign(nt, 0); wres.assign(nt, 0);
    for (unsigned k = 0; k < nb; ++k) {
        unsigned id = order ? order[k] : k;
        blockIdx = dim3(id % g.x, (id / g.x) % g.y, id / (g.x * g.y));
        for (unsigned t = 0; t < nt; ++t) {
            getcontext(&ctx[t]);
            ctx[t].uc_stack.ss_sp = &stacks[t * STACK];
            ctx[t].uc_stack.ss_size = STACK;
            ctx[t].uc_link = &sched;
            makecontext(&ctx[t], entry, 0);
            state[t] = RUN;
        }
        for (;;) {
            for (unsigned t = 0; t < nt; ++t) {
                if (state[t] != RUN) continue;
                cur = (int)t;
                threadIdx = dim3(t % b.x, (t / b.x) % b.y, t / (b.x * b.y));
                swapcontext(&sched, &ctx[t]);
            }
            if (err[0]) return;
            bool moved = false;
            for (unsigned w = 0; w < nt; w += 32) moved = release(w) || moved;
            if (err[0]) return;
            if (moved) continue;
            bool bar = false, warp = false;
            for (unsigned t = 0; t < nt; ++t) {
                bar = bar || state[t] == BAR;
                warp = warp || state[t] == WARP;
            }
            if (warp) {
                fail("a warp operation waits for lanes that wait at __syncthreads() or never "
                     "come: a deadlock on a GPU");
                return;
            }
            if (!bar) break;
            for (unsigned t = 0; t < nt; ++t) if (state[t] == BAR) state[t] = RUN;
        }
    }
}
}
extern "C" const char* emu_last_error() { return emu::err; }
static void __syncthreads() { emu::state[emu::cur] = emu::BAR; swapcontext(&emu::ctx[emu::cur], &emu::sched); }
template <class T> static inline unsigned long long emu_bits(T v) {
    static_assert(sizeof(T) <= 8, "a shuffle moves at most 8 bytes");
    unsigned long long b = 0; std::memcpy(&b, &v, sizeof(T)); return b;
}
template <class T> static inline T emu_from(unsigned long long b) { T v; std::memcpy(&v, &b, sizeof(T)); return v; }
static inline void __syncwarp(unsigned m = 0xffffffffu) { emu::warp_op(emu::W_SYNC, m, 0, 0, 32); }
template <class T> static inline T __shfl_sync(unsigned m, T v, int src, int w = 32) {
    return emu_from<T>(emu::warp_op(emu::W_IDX, m, emu_bits(v), src, w));
}
template <class T> static inline T __shfl_up_sync(unsigned m, T v, unsigned d, int w = 32) {
    return emu_from<T>(emu::warp_op(emu::W_UP, m, emu_bits(v), (int)d, w));
}
template <class T> static inline T __shfl_down_sync(unsigned m, T v, unsigned d, int w = 32) {
    return emu_from<T>(emu::warp_op(emu::W_DOWN, m, emu_bits(v), (int)d, w));
}
template <class T> static inline T __shfl_xor_sync(unsigned m, T v, int d, int w = 32) {
    return emu_from<T>(emu::warp_op(emu::W_XOR, m, emu_bits(v), d, w));
}
static inline unsigned __ballot_sync(unsigned m, int p) { return (unsigned)emu::warp_op(emu::W_BALLOT, m, p != 0, 0, 32); }
static inline int __any_sync(unsigned m, int p) { return (int)emu::warp_op(emu::W_ANY, m, p != 0, 0, 32); }
static inline int __all_sync(unsigned m, int p) { return (int)emu::warp_op(emu::W_ALL, m, p != 0, 0, 32); }
static inline unsigned __reduce_add_sync(unsigned m, unsigned v) { return (unsigned)emu::warp_op(emu::W_ADD, m, v, 0, 32); }
static inline int __reduce_add_sync(unsigned m, int v) { return (int)(unsigned)emu::warp_op(emu::W_ADD, m, (unsigned)v, 0, 32); }
static inline unsigned __activemask() {  // the lanes of this warp that have not returned
    unsigned base = emu::cur / 32 * 32, m = 0;
    for (unsigned l = 0; l < 32 && base + l < emu::nthreads; ++l) if (emu::state[base + l] != emu::DONE) m |= 1u << l;
    return m;
}
static inline void __threadfence() {}
static inline void __threadfence_block() {}
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
namespace cooperative_groups {
struct thread_block {
    unsigned thread_rank() const { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
    unsigned size() const { return blockDim.x * blockDim.y * blockDim.z; }
    unsigned num_threads() const { return size(); }
    dim3 group_index() const { return blockIdx; }
    dim3 thread_index() const { return threadIdx; }
    dim3 group_dim() const { return blockDim; }
    void sync() const { __syncthreads(); }
};
static inline thread_block this_thread_block() { return thread_block(); }
static inline void sync(const thread_block& b) { b.sync(); }
template <unsigned N, class P = void> struct thread_block_tile {
    thread_block_tile() = default;
    template <class Q> thread_block_tile(const thread_block_tile<N, Q>&) {}
    static unsigned rank() { return thread_block().thread_rank(); }
    unsigned thread_rank() const { return rank() % N; }
    static constexpr unsigned size() { return N; }
    static constexpr unsigned num_threads() { return N; }
    unsigned meta_group_rank() const { return rank() / N; }
    unsigned meta_group_size() const { return (thread_block().size() + N - 1) / N; }
    unsigned mask() const {
        return N == 32 ? 0xffffffffu : ((1u << N) - 1u) << (rank() % 32 / N * N);
    }
    void sync() const { __syncwarp(mask()); }
    template <class T> T shfl(T v, int src) const { return __shfl_sync(mask(), v, src, N); }
    template <class T> T shfl_up(T v, unsigned d) const { return __shfl_up_sync(mask(), v, d, N); }
    template <class T> T shfl_down(T v, unsigned d) const { return __shfl_down_sync(mask(), v, d, N); }
    template <class T> T shfl_xor(T v, int d) const { return __shfl_xor_sync(mask(), v, d, N); }
    unsigned ballot(int p) const { return __ballot_sync(mask(), p) >> (rank() % 32 / N * N); }
    int any(int p) const { return __any_sync(mask(), p); }
    int all(int p) const { return __all_sync(mask(), p); }
};
template <unsigned N, class P> static inline thread_block_tile<N, P> tiled_partition(const P&) { return {}; }
template <unsigned N, class P> static inline void sync(const thread_block_tile<N, P>& g) { g.sync(); }
template <class T> struct plus { T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { T operator()(T a, T b) const { return a < b ? a : b; } };
template <class T> struct greater { T operator()(T a, T b) const { return a > b ? a : b; } };
template <unsigned N, class P, class T, class Op>
static inline T reduce(const thread_block_tile<N, P>& g, T v, Op op) {
    for (unsigned o = N / 2; o > 0; o >>= 1) v = op(v, g.shfl_xor(v, (int)o));
    return v;
}
}
struct __half {
    _Float16 v;
    __half() = default;
    __half(float f) : v((_Float16)f) {}
    operator float() const { return (float)v; }
};
static inline __half __float2half(float f) { return __half(f); }
static inline __half __float2half_rn(float f) { return __half(f); }
static inline float __half2float(__half h) { return (float)h.v; }
static inline __half __hadd(__half a, __half b) { return __half((float)a.v + (float)b.v); }
static inline __half __hmul(__half a, __half b) { return __half((float)a.v * (float)b.v); }
static inline __half __hfma(__half a, __half b, __half c) { return __half((float)a.v * (float)b.v + (float)c.v); }
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
static inline int atomicMax(int* p, int v) { int old = *p; if (v > old) *p = v; return old; }
static inline int atomicCAS(int* p, int cmp, int v) { int old = *p; if (old == cmp) *p = v; return old; }
static inline unsigned atomicCAS(unsigned* p, unsigned cmp, unsigned v) {
    unsigned old = *p; if (old == cmp) *p = v; return old;
}
static inline int atomicExch(int* p, int v) { int old = *p; *p = v; return old; }
static inline unsigned atomicExch(unsigned* p, unsigned v) { unsigned old = *p; *p = v; return old; }
static inline float atomicExch(float* p, float v) { float old = *p; *p = v; return old; }
template <class T> static inline T __ldg(const T* p) { return *p; }
#define __launch_bounds__(...)
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
static inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
static inline float __fdividef(float a, float b) { return a / b; }
// The fast-math intrinsics: the host's accurate functions (the emulator checks logic, not ulps)
// (macros: glibc declares functions of these names for its own use)
#define __expf(x) std::exp((float)(x))
#define __logf(x) std::log((float)(x))
#define __sinf(x) std::sin((float)(x))
#define __cosf(x) std::cos((float)(x))
#define __powf(a, b) std::pow((float)(a), (float)(b))
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
# Headers a GPU compile finds and the prelude stands in for (cooperative groups, __half).
_HEADERS = re.compile(r"^\s*#\s*include\s*<(cooperative_groups(?:/\w+)?\.h|cuda_fp16\.h)>", re.M)
# What makes a kernel's threads meet (fibers needed): barriers, warp operations, device functions.
_MEETS = re.compile(
    r"__syncthreads|__syncwarp|__shfl|__ballot_sync|__any_sync|__all_sync|__reduce_\w+_sync|"
    r"__activemask|cooperative_groups|\bcg::|__device__"
)
_SHARED_ARRAY = re.compile(
    r"(?<!extern )__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?((?:(?:volatile|const|unsigned|"
    r"signed|long|short)\s+)*\w+)\s+(\w+)\s*((?:\[[^\]]+\]\s*)*);"
)
_SIZES = {
    "char": 1,
    "short": 2,
    "__half": 2,
    "int": 4,
    "unsigned": 4,
    "float": 4,
    "long": 8,
    "double": 8,
    "float2": 8,
    "float4": 16,
    "int4": 16,
}
_shuffle: list[np.random.Generator] = []  # set by shuffled_blocks()
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
    body = _HEADERS.sub("", source)  # the prelude has what they declare; lines keep their numbers
    body = re.sub(r'extern\s+"C"\s+(__global__)', r"\1", body)
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
        barriers = "true" if _MEETS.search(chunk) or "__device__" in source else "false"
        types = kernel_params(source, name)
        call = ", ".join(f"*({t}*)args[{i}]" for i, t in enumerate(types))
        launchers.append(
            f'extern "C" void emu_launch_{tag}_{name}(unsigned gx, unsigned gy, unsigned gz, '
            f"unsigned bx, unsigned by, unsigned bz, const unsigned* order, void** args) {{\n"
            f"  emu::launch(dim3(gx, gy, gz), dim3(bx, by, bz), {barriers}, order, "
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
    x, y, z = (*t, 1, 1)[:3]
    return (x, y, z)


class RawKernel:
    """`cupy.RawKernel(source, name)` on the CPU: `kernel(grid, block, args)`."""

    def __init__(self, code: str, name: str, options: tuple[str, ...] = (), **_: Any) -> None:
        self.code, self.name = code, name
        self.params = kernel_params(code, name)
        self._fn: Any = None

    @property
    def shared_size_bytes(self) -> int:
        """Bytes of static shared memory the kernel declares, as a compiler would count them
        where the sizes are constants and macros (1 when an array's size is beyond this reading,
        so a check asking whether there is any still gets yes)."""
        return static_shared_bytes(self.code, self.name)

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
        order = None
        if _shuffle:
            blocks = g[0] * g[1] * g[2]
            perm = _shuffle[-1].permutation(blocks).astype(np.uint32)
            order = perm.ctypes.data_as(ctypes.c_void_p)
            keep.append(perm)
        self._fn(*g, *b, order, argv)
        lib = _build(self.code)
        lib.emu_last_error.restype = ctypes.c_char_p
        error = lib.emu_last_error()
        if error:
            raise EmulatorError(f"{self.name}: {error.decode()}")


@contextmanager
def shuffled_blocks(seed: int = 0) -> Iterator[None]:
    """Launches inside run their blocks in a random order, a new one each launch: a result that
    depends on which block's atomicAdd comes first (a float sum) then differs from run to run,
    as it does on a GPU."""
    _shuffle.append(np.random.default_rng(seed))
    try:
        yield
    finally:
        _shuffle.pop()


def _constant(expr: str, macros: dict[str, str]) -> int | None:
    """An array size written with integer constants and object-like macros, or None."""
    for _ in range(8):
        expanded = re.sub(
            r"\b[A-Za-z_]\w*\b", lambda m: f"({macros.get(m.group(0), m.group(0))})", expr
        )
        if expanded == expr:
            break
        expr = expanded
    expr = re.sub(r"\b(\d+)[uUlL]+\b", r"\1", expr)
    if not re.fullmatch(r"[\d\s()+\-*/%<>]*", expr):
        return None
    try:
        value = eval(expr.replace("/", "//"), {"__builtins__": {}})  # digits and operators only
    except Exception:  # noqa: BLE001 - not a constant this reading can work out
        return None
    return int(value) if isinstance(value, int) and value >= 0 else None


def static_shared_bytes(code: str, name: str) -> int:
    """Static shared memory of kernel `name` (its own text, and any `__device__` helpers)."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", code, flags=re.S)
    macros = dict(re.findall(r"^\s*#\s*define\s+(\w+)[ \t]+([^\n]+)$", code, re.M))
    starts = [(m.start(), m.group(1)) for m in _SIGNATURE.finditer(code)]
    text = code
    for k, (start, found) in enumerate(starts):
        if found == name:
            end = starts[k + 1][0] if k + 1 < len(starts) else len(code)
            text = code[:start] if "__device__" in code[:start] else ""
            text += code[start:end]
    total, unknown = 0, False
    for ctype, _, dims in _SHARED_ARRAY.findall(text):
        words = [w for w in ctype.split() if w not in ("volatile", "const", "signed")]
        size = _SIZES.get(words[-1] if words else "int", 0)
        if "short" in words:
            size = 2
        elif words.count("long") == 2:
            size = 8
        count = 1
        for dim in re.findall(r"\[([^\]]+)\]", dims):
            value = _constant(dim, macros)
            if value is None:
                unknown = True
                break
            count *= value
        if not size:
            unknown = True
        else:
            total += size * count
    if total == 0 and (unknown or re.search(r"(?<!extern )__shared__", text)):
        return 1
    return total
