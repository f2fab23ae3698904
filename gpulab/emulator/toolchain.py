"""The host C++ compiler the CUDA emulator builds kernels with, and the flags that make it call
the emulator's memory check on every load and store.

Light on purpose (no NumPy): the doctor and the inventory ask whether the emulator can run here
from processes that import nothing heavy.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

CANDIDATES = ("g++", "clang++")
FIX = (
    "install a C++ compiler: sudo apt install g++ (Debian, Ubuntu), sudo dnf install gcc-c++ "
    "(Fedora), xcode-select --install (macOS); or name one in $CXX"
)


def compiler() -> str | None:
    """The compiler's path: $CXX when set, else g++, else clang++; None when there is none."""
    wanted = os.environ.get("CXX", "").strip()
    for name in [wanted] if wanted else CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def absent() -> str:
    """What is missing for the emulator to build kernels here ("" when nothing is)."""
    if compiler() is not None:
        return ""
    wanted = os.environ.get("CXX", "").strip()
    return f"$CXX ({wanted}) is not found" if wanted else "no C++ compiler (g++ or clang++)"


def missing() -> str:
    """Why the emulator cannot build kernels here ("" when it can), in one line with the fix."""
    why = absent()
    return f"{why}: {FIX}" if why else ""


@functools.cache
def _is_clang(cxx: str) -> bool:
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "clang" in os.path.basename(cxx)
    return "clang" in out.stdout.lower()


def checking_flags(cxx: str) -> list[str]:
    """ThreadSanitizer's instrumentation: a call before every load and store (`__tsan_read4(addr)`,
    `__tsan_write8(addr)`, ...), which the emulator's runtime defines; none at function entry and
    exit, and no runtime linked. (AddressSanitizer's would check a location once where a thread
    reads and then writes it; a race check needs both.)"""
    if _is_clang(cxx):
        params = ["-mllvm", "-tsan-instrument-func-entry-exit=0", "-mllvm"]
        params += ["-tsan-instrument-atomics=0", "-mllvm", "-tsan-instrument-memintrinsics=0"]
    else:
        params = ["--param", "tsan-instrument-func-entry-exit=0"]
    return ["-fsanitize=thread", *params]
