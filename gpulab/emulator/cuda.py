"""CuPy's RawKernel on the CPU: CUDA C compiled with the host C++ compiler and run block by block.

The source is compiled behind a small runtime (runtime.h: threadIdx, blockIdx, `__shared__`,
`__syncthreads`, warps, atomics) and run block by block. The threads of a block are fibers
(ucontext) switched only at meeting points: every thread runs up to its next barrier, in thread
order, before any goes past it. That makes a race deterministic: a thread that reads a
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

Memory is checked as compute-sanitizer checks it (runtime.h says how): an access outside the
allocation an argument points into (memory.py keeps guard zones around each) and a shared-memory
read of a slot another thread wrote since the last `__syncthreads()` (or a write of one it read)
stop the launch with EmulatorError, one line naming the kernel, the block and thread, and the
array.

What it is not: a GPU. No concurrency between blocks (though `shuffled_blocks()` runs them in a
random order, so a result that depends on the order of atomics differs from run to run), no
timing. `gpulab ex check` runs the kernel exercises on it where CuPy cannot run (correctness
only), and the tests run references, known-wrong solutions and launch wrappers on it in CI.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpulab.emulator import memory, toolchain

_RUNTIME = Path(__file__).with_name("runtime.h")

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
# no _FORTIFY_SOURCE: its longjmp check refuses the jumps between fiber stacks (runtime.h)
_FLAGS = ["-std=c++17", "-O1", "-fPIC", "-w", "-U_FORTIFY_SOURCE"]
# Headers a GPU compile finds and runtime.h stands in for (cooperative groups, __half).
_HEADERS = re.compile(r"^\s*#\s*include\s*<(cooperative_groups(?:/\w+)?\.h|cuda_fp16\.h)>", re.M)
# What makes a kernel's threads meet (fibers needed): barriers, warp operations, device functions.
_MEETS = re.compile(
    r"__syncthreads|__syncwarp|__shfl|__ballot_sync|__any_sync|__all_sync|__reduce_\w+_sync|"
    r"__match_\w+_sync|"
    r"__activemask|cooperative_groups|\bcg::|__device__"
)
# A static `__shared__` declaration: its type, then one declarator or several
# (`__shared__ float As[16][16], Bs[16][16];` declares two arrays)
_SHARED_ARRAY = re.compile(
    r"(?<!extern )__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?((?:(?:volatile|const|unsigned|"
    r"signed|long|short)\s+)*\w+)\s+(\w+\s*(?:\[[^\]]+\]\s*)*(?:,\s*\w+\s*(?:\[[^\]]+\]\s*)*)*);"
)
_DECLARATOR = re.compile(r"(\w+)\s*((?:\[[^\]]+\]\s*)*)")
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
    "int2": 8,
    "uint2": 8,
    "uint4": 16,
}
_shuffle: list[np.random.Generator] = []  # set by shuffled_blocks()
# Called with each launch's kernel name whoever launches it (the learner's wrapper, or the
# library object behind it): the emulator's stand-in for CUPTI, which records every kernel
# that runs (gpulab.emulator.cupy_module records the names in an open trace). A tuple: a list
# could be emptied in place through a name built at run time, which no snapshot of the module's
# names sees; rebinding the name is what the Guard puts back and names
ON_LAUNCH: tuple[Any, ...] = ()
_DYN_SMEM_BYTES = 227 * 1024  # DYN_SMEM_BYTES of runtime.h


class EmulatorError(RuntimeError):
    """The source did not compile on the host, or a launch broke a rule CuPy would not check."""


def kernel_params(source: str, name: str) -> list[str]:
    """The C types of `name`'s parameters, names and `__restrict__` dropped."""
    return [ctype for ctype, _ in kernel_signature(source, name)]


def kernel_signature(source: str, name: str) -> list[tuple[str, str]]:
    """(C type, name) of each of `name`'s parameters, `__restrict__` dropped."""
    for found, params in _SIGNATURE.findall(source):
        if found != name:
            continue
        out = []
        for i, p in enumerate(x.strip() for x in params.split(",") if x.strip()):
            p = p.replace("__restrict__", " ")
            if "*" in p:
                star = p.rindex("*") + 1
                out.append((p[:star].strip(), p[star:].strip() or f"argument {i}"))
            else:
                words = p.split()
                ctype = " ".join(words[:-1]).replace("const ", "").strip()
                out.append((ctype, words[-1] if len(words) > 1 else f"argument {i}"))
        return out
    raise EmulatorError(f'no extern "C" __global__ kernel named {name!r} in the source')


def _tag(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def _declarators(decls: str) -> list[tuple[str, str]]:
    """(name, dimensions) of each declarator of a `__shared__` declaration's list."""
    return _DECLARATOR.findall(decls)


def _depth(text: str, at: int) -> int:
    """How many braces are open at `at`: 0 at namespace (file) scope."""
    return text.count("{", 0, at) - text.count("}", 0, at)


def _name_shared(body: str) -> str:
    """Each `__shared__` declaration followed, on its line, by what registers each array it
    declares with the runtime's race check under its own name: inside a function a call each
    thread makes as it passes; at file scope (one array for every block, as in a function) a
    constant whose initialiser registers it when the library is loaded, since no statement
    may follow a declaration there."""

    def add(m: re.Match[str]) -> str:
        names = [name for name, _ in _declarators(m.group(2))]
        if _depth(body, m.start()) <= 0:
            regs = "".join(
                f' static const bool emu_shared_{n} = (emu::name_shared({n}, "{n}"), true);'
                for n in names
            )
        else:
            regs = "".join(f' emu::name_shared({n}, "{n}");' for n in names)
        return m.group(0) + regs

    return _SHARED_ARRAY.sub(add, body)


def _unit(source: str) -> str:
    """One source as a C++ unit: in its own namespace (so several sources that name their
    kernels alike build into one library), its macros undefined after it, and a C launcher per
    kernel, `emu_launch_<tag>_<name>(grid, block, order, regions, dynamic bytes, args)`."""
    tag = _tag(source)
    body = _HEADERS.sub("", source)  # the runtime has what they declare; lines keep their numbers
    body = re.sub(r'extern\s+"C"\s+(__global__)', r"\1", body)
    body = _name_shared(body)
    # `extern __shared__ T name[];` (dynamic shared memory, sized by the launch): a pointer to
    # one static buffer, which like static shared arrays keeps what the last block left there.
    body = _DYNAMIC_SHARED.sub(
        lambda m: (
            f'{m.group(1)}* const {m.group(2)} = emu::dynamic_shared<{m.group(1)}>("{m.group(2)}");'
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
            f'extern "C" EMU_RAW void emu_launch_{tag}_{name}(unsigned gx, unsigned gy, '
            f"unsigned gz, unsigned bx, unsigned by, unsigned bz, const unsigned* order, "
            f"const emu::Region* rs, int nrs, unsigned long long dyn, void** args) {{\n"
            f"  emu::launch(dim3(gx, gy, gz), dim3(bx, by, bz), {barriers}, order, rs, nrs, dyn, "
            f"[=]() EMU_RAW {{ emu_{tag}::{name}({call}); }});\n}}\n"
        )
    undef = "".join(f"#undef {m}\n" for m in macros)
    return (
        f'namespace emu_{tag} {{\n{_KERNEL_PRELUDE}#line 1 "kernel.cu"\n{body}\n}}\n{undef}'
        f"{_KERNEL_POSTLUDE}" + "".join(launchers)
    )


# What NVRTC defines, so code kept from it (`#ifndef __CUDACC__`) is kept from the emulator too;
# and memcpy, memmove and memset as the kernel's namespace sees them: checked and counted as the
# loads and stores they stand for (runtime.h's span), where the C library's would copy past
# every check. Templates: an argument's class would otherwise bring the C library's in by ADL.
_KERNEL_PRELUDE = """#define __CUDACC__ 1
#define __CUDACC_RTC__ 1
template <class D, class S> EMU_RAW static inline void* memcpy(D* d, S* s, size_t n) {
    emu::span(s, n, false); emu::span(d, n, true); return ::memmove((void*)d, (const void*)s, n);
}
template <class D, class S> EMU_RAW static inline void* memmove(D* d, S* s, size_t n) {
    emu::span(s, n, false); emu::span(d, n, true); return ::memmove((void*)d, (const void*)s, n);
}
template <class D> EMU_RAW static inline void* memset(D* d, int v, size_t n) {
    emu::span(d, n, true); return ::memset((void*)d, v, n);
}
"""
_KERNEL_POSTLUDE = "#undef __CUDACC__\n#undef __CUDACC_RTC__\n"


# Read from the kernel's source as the compiler sees it (macros expanded, comments gone, so no
# token pasting hides them): names only the emulator has, which kernel code would reach its
# counters or the host's memory through; NVRTC refuses each.
_RUNTIME_NAME = re.compile(r"\b(?:emu|emu_\w+|EMU_\w+|__tsan_\w+)\b(?:\s*::\s*\w+)?")
_ASM = re.compile(r"\b(?:asm|__asm|__asm__)\b")
# The attributes that turn the emulator's per-access counting off for a function: a red team's
# scan and histogram walked the whole array on one thread inside a no_sanitize("thread")
# helper, so the busiest thread read as having touched nothing (the one-thread rules passed)
# (any spelling: g++ takes __no_sanitize__ and no_sanitize_thread as well)
_UNCOUNTED = re.compile(r"no_sanitize|disable_sanitizer_instrumentation|no_instrument_function")
_HOST_CALL = re.compile(
    r"(?:(?:::|\bstd\s*::)\s*)(?:memcpy|memmove|memset)\b|"
    r"\b__builtin_+(?:mem\w*|bcopy|bzero|str\w*|stp\w*|wmem\w*|wcs\w*)|"
    r"\b(?:bcopy|bzero|explicit_bzero|mempcpy|memccpy|wmemcpy|wmemmove|wmemset|wmempcpy|strcpy|"
    r"strncpy|stpcpy|stpncpy|strcat|strncat|strlcpy|strlcat|swab|fopen|fread|fwrite|mmap|"
    r"mprotect|munmap|syscall|dlopen|dlsym|popen|getenv|process_vm_readv|process_vm_writev)"
    r"\s*\("
)
# The host CPU's own vector instructions, by builtin or through its intrinsics header: a red team's
# reduction-kernel walked each row on one thread with `__builtin_ia32_maskloadps256` (and with
# immintrin.h's `_mm256_maskload_ps`), loads the instrumentation never sees, so the busiest
# thread read as having touched nothing; NVRTC knows neither
_TARGET_BUILTIN = re.compile(
    r"\b__builtin_(?:ia32|x86|neon|aarch64|arm|sve|altivec|vsx|ppc|s390|riscv|mips|loongarch)_\w*"
)
_INTRINSICS_HEADER = re.compile(
    r"(?:^|/)(?:\w*intrin\w*|arm_neon|arm_sve|arm_acle|arm_fp16|arm_bf16|altivec|riscv_vector|"
    r"lsxintrin|lasxintrin)\.h$"
)
# The host's C++ standard library, which the emulator's kernels see through its runtime's headers
# (NVRTC has none): a red team's reduction-kernel copied each row in chunks with `std::copy`, a
# memmove inside the library that no instrumentation counts, and one thread a row passed
_HOST_STD = re.compile(r"(?<![:\w])\s*std\s*::\s*\w+|\bnamespace\s+std\b")
# The host compiler's atomic builtins: NVRTC knows none of them (CUDA's are atomicAdd and its
# kin), and here they reached the sanitizer's atomic hooks, which the runtime does not define:
# a histogram counting with `__sync_fetch_and_add` failed with an undefined-symbol OSError
_HOST_ATOMIC = re.compile(r"\b__(?:atomic|sync|c11_atomic)_\w+")
_LITERAL = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
_MARKER = re.compile(r'^#\s+(\d+)\s+"([^"]*)"')
_REFUSED: dict[str, str] = {}  # a source's tag -> why the emulator will not build it


def _refusal(line: int, text: str) -> str:
    """Why one line of a kernel's preprocessed source is refused, or ""."""
    text = _LITERAL.sub('""', text)
    found = _RUNTIME_NAME.search(text)
    if found:
        name = re.sub(r"\s+", "", found.group(0))
        return (
            f"your CUDA C names the emulator's runtime ({name}, kernel source line {line}): "
            "kernel code cannot reach the emulator's counters or bookkeeping, and NVRTC knows "
            "no such name"
        )
    found = _UNCOUNTED.search(text)
    if found:
        return (
            f"your CUDA C turns off the instrumentation the emulator counts each thread's "
            f"memory accesses by ({found.group(0)}, kernel source line {line}): a GPU build has "
            "no use for it; leave it out"
        )
    found = _ASM.search(text)
    if found:
        return (
            f"your CUDA C has inline assembly (kernel source line {line}): the emulator cannot "
            "run PTX; check it on a GPU"
        )
    found = _TARGET_BUILTIN.search(text)
    if found:
        return _host_vector(found.group(0), line)
    found = _HOST_ATOMIC.search(text)
    if found:
        return (
            f"your CUDA C calls the host compiler's atomic builtin {found.group(0)} (kernel "
            f"source line {line}): NVRTC has none and a GPU build fails; use CUDA's atomics "
            "(atomicAdd, atomicCAS, atomicExch, ...)"
        )
    found = _HOST_STD.search(text)
    if found:
        name = re.sub(r"\s+", "", found.group(0))
        if name.startswith("namespace"):
            name = "namespace std"
        return (
            f"your CUDA C uses the host's C++ standard library ({name}, kernel source line "
            f"{line}): NVRTC has none, and on the emulator its copies would move memory past "
            "every count; write the loop in CUDA C"
        )
    found = _HOST_CALL.search(text)
    if found:
        name = re.sub(r"[\s(]+", "", found.group(0))
        return (
            f"your CUDA C calls {name} (kernel source line {line}), a host C library function "
            "device code cannot call: on the emulator it would move memory past every check; "
            "use memcpy, memset or a loop"
        )
    return ""


def _host_vector(name: str, line: int) -> str:
    """The refusal of the host CPU's vector instructions (_TARGET_BUILTIN, _INTRINSICS_HEADER)."""
    return (
        f"your CUDA C uses the host CPU's vector instructions ({name}, kernel source line "
        f"{line}): a GPU has none and NVRTC refuses them; on the emulator they would read "
        "memory past every count. Write the loads in CUDA C"
    )


def _scan(sources: list[str], flags: list[str], cxx: str) -> dict[str, str]:
    """Each refused source's tag and the one line saying why (_refusal), from one preprocessor
    run over the runtime and every source, each in the macro environment it is compiled in."""
    parts = [_RUNTIME.read_text(encoding="utf-8")]
    for i, source in enumerate(sources):
        macros = sorted(set(re.findall(r"^\s*#\s*define\s+(\w+)", source, re.M)))
        undef = "".join(f"#undef {m}\n" for m in macros)
        parts.append(
            f'namespace emu_scan_{i} {{\n{_KERNEL_PRELUDE}#line 1 "scan-{i}.cu"\n'
            f'{_HEADERS.sub("", source)}\n#line 1 "runtime.h"\n}}\n{undef}{_KERNEL_POSTLUDE}'
        )
    proc = subprocess.run(
        [cxx, *flags, "-E", "-x", "c++", "-"], input="".join(parts), capture_output=True, text=True
    )
    if proc.returncode != 0:
        return {}  # the compile that follows names what is wrong, in the kernel's lines
    refused: dict[str, str] = {}
    current, line = -1, 0
    for text in proc.stdout.splitlines():
        marker = _MARKER.match(text)
        if marker:
            header = _INTRINSICS_HEADER.search(marker.group(2))
            if current >= 0 and header and _tag(sources[current]) not in refused:
                # entered from the kernel's own lines (the line before this marker)
                refused[_tag(sources[current])] = _host_vector(
                    os.path.basename(marker.group(2)), max(1, line - 1)
                )
            line = int(marker.group(1))
            hit = re.fullmatch(r"scan-(\d+)\.cu", marker.group(2))
            current = int(hit.group(1)) if hit else -1
            continue
        if current >= 0:
            tag = _tag(sources[current])
            why = "" if tag in refused else _refusal(line, text)
            if why:
                refused[tag] = why
        line += 1
    return refused


def prebuild(sources: list[str]) -> None:
    """Compile every source not built yet into one library: one compiler run for a whole test
    session instead of one per source (the runtime's headers dominate the compile time). A
    source that reaches for what only the emulator has (_refusal) is left out, its reason kept
    for the launch that asks for it."""
    todo = sorted({s for s in sources if _tag(s) not in _CACHE and _tag(s) not in _REFUSED})
    if not todo:
        return
    cxx = toolchain.compiler()
    if cxx is None:
        raise EmulatorError(f"the CUDA emulator cannot build the kernel: {toolchain.missing()}")
    _REFUSED.update(_scan(todo, _FLAGS + toolchain.checking_flags(cxx), cxx))
    todo = [s for s in todo if _tag(s) not in _REFUSED]
    if not todo:
        return
    runtime = _RUNTIME.read_text(encoding="utf-8")
    lib = _compile(runtime + "".join(_unit(s) for s in todo))
    for s in todo:
        _CACHE[_tag(s)] = lib


def _cache_dir() -> Path:
    """Where built kernels are kept between processes (one folder per user)."""
    who = os.getuid() if hasattr(os, "getuid") else 0
    path = Path(tempfile.gettempdir()) / f"gpulab-cuda-emu-{who}"
    path.mkdir(exist_ok=True)
    return path


def _compile(text: str) -> ctypes.CDLL:
    """The library of `text`, with every load and store checked (toolchain.checking_flags):
    compiled with the instrumentation, linked without the TSan runtime (runtime.h stands in)."""
    cxx = toolchain.compiler()
    if cxx is None:
        raise EmulatorError(f"the CUDA emulator cannot build the kernel: {toolchain.missing()}")
    flags = _FLAGS + toolchain.checking_flags(cxx)
    key = hashlib.sha256((" ".join(flags) + text).encode()).hexdigest()[:24]
    out_dir = _cache_dir()
    lib = out_dir / f"{key}.so"
    if not lib.exists():
        src = out_dir / f"{key}.{os.getpid()}.cpp"
        obj = out_dir / f"{key}.{os.getpid()}.o"
        tmp = out_dir / f"{key}.{os.getpid()}.so"
        src.write_text(text)
        try:
            for cmd in (
                [cxx, *flags, "-c", str(src), "-o", str(obj)],
                [cxx, "-shared", str(obj), "-o", str(tmp)],
            ):
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if proc.returncode != 0:
                    raise EmulatorError(compile_error(proc.stderr))
        finally:
            src.unlink(missing_ok=True)
            obj.unlink(missing_ok=True)
        tmp.replace(lib)
    return ctypes.CDLL(str(lib))


_ERROR = re.compile(r"^kernel\.cu:(\d+):\d+: (?:fatal )?error: (.*)$", re.M)


def compile_error(log: str) -> str:
    """The compiler's log as one line: the first errors in the kernel's source, by line (the
    line of the CUDA C string, as NVRTC counts it), and what a missing name may mean here."""
    found = [(int(line), text.strip()) for line, text in _ERROR.findall(log)]
    if not found:
        last = [x for x in log.strip().splitlines() if x.strip()][-1:] or ["no message"]
        return f"the emulator's host C++ compiler failed: {last[0].strip()}"
    said = "; ".join(f"kernel source line {line}: {text}" for line, text in found[:2])
    more = f" (and {len(found) - 2} more)" if len(found) > 2 else ""
    hint = ""
    if any("was not declared" in text for _, text in found[:2]):
        hint = (
            "; a CUDA built-in the emulator does not provide compiles on a GPU, where CuPy "
            "checks it"
        )
    return f"your CUDA C does not compile (emulator, host C++ compiler): {said}{more}{hint}"


def _build(source: str) -> ctypes.CDLL:
    if _tag(source) not in _CACHE:
        prebuild([source])
    if _tag(source) in _REFUSED:
        raise EmulatorError(_REFUSED[_tag(source)])
    return _CACHE[_tag(source)]


class _Region(ctypes.Structure):
    """runtime.h's emu::Region: one pointer argument's allocation, guard zones and name."""

    _fields_ = [
        ("lo", ctypes.c_size_t),
        ("hi", ctypes.c_size_t),
        ("glo", ctypes.c_size_t),
        ("ghi", ctypes.c_size_t),
        ("ptr", ctypes.c_size_t),
        ("item", ctypes.c_ulonglong),
        ("name", ctypes.c_char_p),
    ]


def _dims(v: Any) -> tuple[int, int, int]:
    t = tuple(int(x) for x in (v if isinstance(v, tuple | list) else (v,)))
    if not 1 <= len(t) <= 3 or any(x < 1 for x in t):
        raise EmulatorError(f"grid and block must be 1 to 3 positive sizes, got {v!r}")
    x, y, z = (*t, 1, 1)[:3]
    return (x, y, z)


@dataclass(frozen=True)
class Ran:
    """What one launch did, counted as it ran (runtime.h): accesses to shared memory, and warp
    operations that moved values between lanes. A GPU's compiled code says what a kernel could
    do; these say what it did, so a shuffle or a shared array behind a branch no thread takes
    counts for nothing."""

    shared_touches: int
    lane_moves: int
    shared_shares: int = 0  # reads of bytes another thread wrote, and shared atomics
    float_atomic_adds: int = 0  # atomicAdd on float or double: the blocks' order decides the bits
    busiest_thread: int = 0  # the most global-memory accesses one thread of one block made
    global_written: int = 0  # bytes stored into global memory, atomics included
    global_read: int = 0  # bytes loaded from global memory, atomics included
    # (first byte, end, bytes loaded) of each pointer argument's allocation, in argument order
    region_reads: tuple[tuple[int, int, int], ...] = ()
    # neighbouring lanes' k-th global loads (and stores) compared, and how many of those pairs
    # lay within 16 bytes of each other: what a warp's one access coalesces into
    load_pairs: int = 0
    load_near: int = 0
    store_pairs: int = 0
    store_near: int = 0
    # bytes loaded from device memory in no argument's allocation (an address passed as a number)
    stray_read: int = 0


_DEFINE = re.compile(r"(?:-D|--define-macro=?)(\w+)(?:=(.*))?$", re.S)


def with_defines(code: str, options: Any) -> str:
    """`code` with the macros its compiler options define (`-DK=3`, `-D K=3`,
    `--define-macro=K=3`, as NVRTC reads them) defined in front of it, its lines still
    numbered from 1; the other options mean nothing to the host compiler."""
    opts = [str(o) for o in (options or ())]
    defines = []
    for i, opt in enumerate(opts):
        if opt in ("-D", "--define-macro") and i + 1 < len(opts):
            opt = "-D" + opts[i + 1]
        m = _DEFINE.match(opt.strip())
        if m:
            defines.append(f"#define {m.group(1)} {m.group(2) if m.group(2) is not None else 1}\n")
    return "".join(defines) + "#line 1\n" + code if defines else code


def _top_level_split(text: str) -> list[str]:
    """`text` split at the commas outside any <>, () or []."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "<(["
        depth -= ch in ">)]"
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


_TEMPLATE = re.compile(r"template\s*<([^{};]*?)>\s*__global__\s+void\s+")


def instantiate(code: str, expression: str) -> tuple[str, str] | None:
    """A template kernel's instantiation (`saxpy<float>`, what CuPy's RawModule takes among its
    `name_expressions`) as an `extern "C"` kernel the emulator can launch: (the code with a copy
    of the template's text under a C name, its parameters replaced by the expression's
    arguments; that C name), or None when `expression` names no template kernel of `code`."""
    m = re.fullmatch(r"\s*(\w+)\s*<(.*)>\s*", expression, re.S)
    if m is None:
        return None
    base, args = m.group(1), _top_level_split(m.group(2))
    for t in _TEMPLATE.finditer(code):
        head = re.match(rf"(?:__launch_bounds__\s*\([^)]*\)\s*)?{base}\s*\(", code[t.end() :])
        if head is None:
            continue
        names = [p.split("=")[0].split()[-1] for p in _top_level_split(t.group(1))]
        if len(names) < len(args):
            return None
        open_at = code.find("{", t.end())
        depth, end = 0, open_at
        for end in range(open_at, len(code)):
            depth += (code[end] == "{") - (code[end] == "}")
            if depth == 0:
                break
        text = code[t.end() : end + 1]
        for name, arg in zip(names, args, strict=False):
            text = re.sub(rf"\b{name}\b", arg.replace("\\", "\\\\"), text)
        symbol = f"{base}__instance_{_tag(expression)[:8]}"
        text = re.sub(rf"\b{base}(\s*\()", rf"{symbol}\1", text, count=1)
        return f'{code}\nextern "C" __global__ void {text}\n', symbol
    return None


class RawKernel:
    """`cupy.RawKernel(source, name)` on the CPU: `kernel(grid, block, args)`."""

    def __init__(self, code: str, name: str, options: tuple[str, ...] = (), **_: Any) -> None:
        code = with_defines(code, options)
        # `name` is what the trace records; `_symbol` the C kernel it launches (a template's
        # instance has one of its own: RawModule.get_function)
        self.code, self.name, self._symbol = code, name, name
        self.signature = kernel_signature(code, name)
        self.params = [ctype for ctype, _ in self.signature]
        self._fn: Any = None
        self.ran: Ran | None = None  # the last launch's counts

    @property
    def shared_size_bytes(self) -> int:
        """Bytes of static shared memory the kernel declares, as a compiler would count them
        where the sizes are constants and macros (1 when an array's size is beyond this reading,
        so a check asking whether there is any still gets yes)."""
        return static_shared_bytes(self.code, self._symbol)

    def __call__(
        self, grid: Any, block: Any, args: tuple, shared_mem: int = 0, stream: Any = None
    ) -> None:
        if self._fn is None:
            self._fn = getattr(_build(self.code), f"emu_launch_{_tag(self.code)}_{self._symbol}")
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
        keep: list[Any] = []
        ptrs = []
        regions = (_Region * max(1, len(args)))()
        count = 0
        for i, (arg, (ctype, pname)) in enumerate(zip(args, self.signature, strict=True)):
            if "*" in ctype:
                if not isinstance(arg, np.ndarray):
                    raise EmulatorError(f"argument {i} of {self.name} must be an array")
                val: Any = ctypes.c_void_p(arg.ctypes.data)
                lo, hi, glo, ghi = memory.bounds(arg)
                label = pname.encode()
                keep.append(label)
                regions[count] = _Region(lo, hi, glo, ghi, arg.ctypes.data, arg.itemsize, label)
                count += 1
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
        lib = _build(self.code)
        device = memory.device_spans()
        lib.emu_set_device(device.ctypes.data_as(ctypes.c_void_p), ctypes.c_int(device.size // 2))
        for hook in ON_LAUNCH:
            hook(self.name)
        self._fn(*g, *b, order, regions, count, ctypes.c_ulonglong(int(shared_mem)), argv)
        lib.emu_set_device(None, ctypes.c_int(0))
        lib.emu_last_error.restype = ctypes.c_char_p
        counters = (
            lib.emu_shared_touches,
            lib.emu_lane_moves,
            lib.emu_shared_shares,
            lib.emu_float_atomic_adds,
            lib.emu_busiest_thread,
            lib.emu_global_written,
            lib.emu_global_read,
        )
        for counter in counters:
            counter.restype = ctypes.c_ulonglong
        lib.emu_region_read.restype = ctypes.c_ulonglong
        reads = tuple(
            (int(regions[i].lo), int(regions[i].hi), int(lib.emu_region_read(ctypes.c_int(i))))
            for i in range(count)
        )
        touches, moves, shares, float_adds, busiest, written, read = (int(c()) for c in counters)
        pairs = (lib.emu_load_pairs, lib.emu_load_near, lib.emu_store_pairs, lib.emu_store_near)
        for counter in pairs:
            counter.restype = ctypes.c_ulonglong
        lp, ln, sp, sn = (int(c()) for c in pairs)
        lib.emu_stray_read.restype = ctypes.c_ulonglong
        stray = int(lib.emu_stray_read())
        self.ran = Ran(
            touches, moves, shares, float_adds, busiest, written, read, reads, lp, ln, sp, sn, stray
        )
        error = lib.emu_last_error()
        if error:
            raise EmulatorError(f"kernel {self.name}: {error.decode()}")


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
    spans = [(0, len(code))]  # the parts of `code` that are the kernel's
    for k, (start, found) in enumerate(starts):
        if found == name:
            end = starts[k + 1][0] if k + 1 < len(starts) else len(code)
            spans = [(0, start)] if "__device__" in code[:start] else []
            spans.append((start, end))
    text = "".join(code[lo:hi] for lo, hi in spans)
    total, unknown = 0, False
    for m in _SHARED_ARRAY.finditer(code):
        ctype = m.group(1)
        decls = _declarators(m.group(2))
        if _depth(code, m.start()) <= 0:
            # a file-scope array is the kernel's where its code (or a helper's) names it
            mine = any(lo <= m.start() < hi for lo, hi in spans)
            uses = {n: len(re.findall(rf"\b{n}\b", text)) - mine for n, _ in decls}
            decls = [(n, d) for n, d in decls if uses[n] > 0]
        elif not any(lo <= m.start() < hi for lo, hi in spans):
            continue
        words = [w for w in ctype.split() if w not in ("volatile", "const", "signed")]
        size = _SIZES.get(words[-1] if words else "int", 0)
        if "short" in words:
            size = 2
        elif words.count("long") == 2:
            size = 8
        for _, dims in decls:
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
