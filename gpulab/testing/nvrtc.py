"""Compile CUDA C the way CuPy's RawKernel does (NVRTC), without a GPU, to catch syntax errors.

NVRTC needs no device to compile. It is found through GPULAB_NVRTC (a path to libnvrtc.so), the
`nvidia-cuda-nvrtc` wheel, or the system's library path; failing that, `nvcc --ptx` is used, which
is a little more permissive (it includes the host headers). `available()` says whether either is.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

ARCH = "compute_90"  # Hopper: what the lead's H100 runs


def _library() -> ctypes.CDLL | None:
    candidates = [os.environ.get("GPULAB_NVRTC", "")]
    try:
        import nvidia.cuda_nvrtc as wheel

        for root in wheel.__path__:
            candidates += sorted(glob.glob(os.path.join(root, "lib", "libnvrtc.so*")))
    except ImportError:
        pass
    candidates.append(ctypes.util.find_library("nvrtc") or "")
    for path in candidates:
        if path and "builtins" not in path and "alt" not in path:
            try:
                return ctypes.CDLL(path)
            except OSError:
                continue
    return None


def available() -> str | None:
    """ "nvrtc", "nvcc" or None."""
    if _library() is not None:
        return "nvrtc"
    return "nvcc" if shutil.which("nvcc") else None


_COOPERATIVE = re.compile(r"#\s*include\s*<cooperative_groups")


def needs_toolkit_headers(source: str) -> bool:
    """Whether the source includes a CUDA header NVRTC does not carry (CuPy finds the toolkit's
    on a GPU machine), and none is installed here."""
    return _COOPERATIVE.search(source) is not None and not include_dirs()


def include_dirs() -> list[str]:
    """The CUDA toolkit's include folders found here (CUDA_PATH, /usr/local/cuda, nvidia wheels)."""
    roots = [os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
    try:
        import nvidia

        for base in nvidia.__path__:
            roots += glob.glob(os.path.join(base, "*")) + glob.glob(os.path.join(base, "*", "*"))
    except ImportError:
        pass
    found = []
    for root in roots:
        inc = os.path.join(root, "include")
        if root and os.path.isfile(os.path.join(inc, "cooperative_groups.h")) and _matches(inc):
            found.append(inc)
            if os.path.isdir(os.path.join(inc, "cccl")):  # CUDA 13 keeps cuda/std/ there
                found.append(os.path.join(inc, "cccl"))
    return found


def _matches(include: str) -> bool:
    """Whether the headers are of the NVRTC's own CUDA major version (13's do not parse in 12's)."""
    lib = _library()
    header = Path(include) / "cuda.h"
    if lib is None or not header.is_file():
        return False
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    found = re.search(r"#define\s+CUDA_VERSION\s+(\d+)", header.read_text(errors="replace"))
    return found is not None and int(found.group(1)) // 1000 == major.value


def compile_errors(source: str, name: str = "kernel.cu") -> str | None:
    """None when the source compiles for the H100; else the compiler's log."""
    lib = _library()
    if lib is not None:
        prog = ctypes.c_void_p()
        lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None)
        # C++11 is the oldest CuPy uses; cooperative groups' headers (CUDA 13's libcu++) want 17,
        # which such a kernel asks for in its RawKernel options
        std = b"-std=c++17" if _COOPERATIVE.search(source) else b"-std=c++11"
        opts = [f"--gpu-architecture={ARCH}".encode(), std]
        opts += [f"-I{d}".encode() for d in include_dirs()]
        argv = (ctypes.c_char_p * len(opts))(*opts)
        status = lib.nvrtcCompileProgram(prog, len(opts), argv)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value + 1)
        lib.nvrtcGetProgramLog(prog, log)
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
        return None if status == 0 else log.value.decode(errors="replace")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / name
        src.write_text(source)
        proc = subprocess.run(
            ["nvcc", "--ptx", f"-arch={ARCH}", "-std=c++11", str(src), "-o", str(src) + ".ptx"],
            capture_output=True,
            text=True,
        )
        return None if proc.returncode == 0 else proc.stderr
