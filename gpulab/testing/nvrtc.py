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


def compile_errors(source: str, name: str = "kernel.cu") -> str | None:
    """None when the source compiles for the H100; else the compiler's log."""
    lib = _library()
    if lib is not None:
        prog = ctypes.c_void_p()
        lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None)
        opts = [f"--gpu-architecture={ARCH}".encode(), b"-std=c++11"]  # the oldest CuPy uses
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
