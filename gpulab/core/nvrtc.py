"""Compile a kernel source with NVRTC to a cubin, its PTX and ptxas's report, with no GPU.

NVRTC (libnvrtc, the `nvidia-cuda-nvrtc` wheel, GPULAB_NVRTC or the library path) compiles for a
real architecture (`-arch=sm_90`) without a device. One compile gives all three: the cubin
(cubin.py reads registers, shared and local memory from it), the PTX with `-lineinfo` (ptx.py
reads the instructions and the source line of each) and ptxas's `-v` log, the only place that
says how many bytes a kernel spills.

Compiles are cached by a hash of the source, options, architecture and NVRTC version: in memory,
and as JSON under the data dir (`explain-cache/`), so `gpulab ex explain` on an unchanged file
answers without compiling.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import ctypes.util
import glob
import hashlib
import json
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpulab.core import datadir

CACHE_VERSION = 1
_LOCK = threading.Lock()
_MEMORY: dict[str, Compiled] = {}
_LIB: list[Any] = []  # [CDLL or None] once looked for


class NvrtcMissing(RuntimeError):
    """No libnvrtc on this machine."""


@dataclass
class PtxasInfo:
    """ptxas's -v figures for one kernel."""

    registers: int | None = None
    barriers: int | None = None
    smem: int = 0
    stack_frame: int = 0
    spill_stores: int = 0
    spill_loads: int = 0


@dataclass
class Compiled:
    """NVRTC's output for one source: ok, the log, the PTX and the cubin."""

    ok: bool
    arch: str
    log: str
    ptx: str = ""
    cubin: bytes = b""
    ptxas: dict[str, PtxasInfo] = field(default_factory=dict)
    version: str = ""
    cached: str = ""  # "", "memory" or "disk"


def library() -> Any:
    """libnvrtc as a ctypes CDLL, or None."""
    if _LIB:
        return _LIB[0]
    candidates = [os.environ.get("GPULAB_NVRTC", "")]
    try:
        import nvidia.cuda_nvrtc as wheel

        for root in wheel.__path__:
            candidates += sorted(glob.glob(os.path.join(root, "lib", "libnvrtc.so*")))
    except ImportError:
        pass
    candidates.append(ctypes.util.find_library("nvrtc") or "")
    lib = None
    for path in candidates:
        if path and "builtins" not in path and ".alt." not in path:
            try:
                lib = ctypes.CDLL(path)
                break
            except OSError:
                continue
    _LIB.append(lib)
    return lib


def version() -> str:
    """NVRTC's version as major.minor, or empty without the library."""
    lib = library()
    if lib is None:
        return ""
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return f"{major.value}.{minor.value}"


_ENTRY = re.compile(r"(?:Compiling entry function|Function properties for) '?([\w$.]+)'?")
_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_ptxas_log(log: str) -> dict[str, PtxasInfo]:
    """ptxas -v lines, by kernel name."""
    out: dict[str, PtxasInfo] = {}
    current: PtxasInfo | None = None
    for line in log.splitlines():
        m = _ENTRY.search(line)
        if m:
            current = out.setdefault(m.group(1), PtxasInfo())
            continue
        if current is None:
            continue
        m = _FRAME.search(line)
        if m:
            current.stack_frame, current.spill_stores, current.spill_loads = map(int, m.groups())
            continue
        m = _USED.search(line)
        if m:
            current.registers = int(m.group(1))
            current.barriers = int(m.group(2)) if m.group(2) else 0
            current.smem = int(m.group(3)) if m.group(3) else 0
    return out


def _cache_dir() -> Path | None:
    try:
        return datadir.resolve() / "explain-cache"
    except Exception:  # noqa: BLE001 - no usable data dir: the memory cache still works
        return None


def _key(source: str, arch: str, options: tuple[str, ...], ver: str) -> str:
    text = json.dumps([CACHE_VERSION, source, arch, list(options), ver])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _load(path: Path) -> Compiled | None:
    try:
        data = json.loads(path.read_text())
        return Compiled(
            ok=data["ok"],
            arch=data["arch"],
            log=data["log"],
            ptx=data["ptx"],
            cubin=base64.b64decode(data["cubin"]),
            ptxas={k: PtxasInfo(**v) for k, v in data["ptxas"].items()},
            version=data["version"],
            cached="disk",
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store(path: Path, c: Compiled) -> None:
    data = {
        "ok": c.ok,
        "arch": c.arch,
        "log": c.log,
        "ptx": c.ptx,
        "cubin": base64.b64encode(c.cubin).decode(),
        "ptxas": {k: vars(v) for k, v in c.ptxas.items()},
        "version": c.version,
    }
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(path)


def compile_source(
    source: str,
    arch: str = "sm_90",
    options: tuple[str, ...] = (),
    *,
    name: str = "kernel.cu",
    disk: bool = True,
) -> Compiled:
    """Compile for `arch` (sm_XX) with the learner's own options; NvrtcMissing without NVRTC."""
    lib = library()
    if lib is None:
        raise NvrtcMissing(
            "NVRTC is not installed: `pip install nvidia-cuda-nvrtc-cu12` (or set GPULAB_NVRTC)"
        )
    ver = version()
    key = _key(source, arch, options, ver)
    with _LOCK:
        hit = _MEMORY.get(key)
    if hit is not None:
        hit.cached = "memory"
        return hit
    cache = _cache_dir() if disk else None
    if cache is not None:
        found = _load(cache / f"{key}.json")
        if found is not None:
            with _LOCK:
                _MEMORY[key] = found
            return found
    compiled = _compile(lib, source, arch, options, name)
    compiled.version = ver
    with _LOCK:
        _MEMORY[key] = compiled
    if cache is not None:
        _store(cache / f"{key}.json", compiled)
    return compiled


def _compile(lib: Any, source: str, arch: str, options: tuple[str, ...], name: str) -> Compiled:
    prog = ctypes.c_void_p()
    lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None)
    opts = [f"-arch={arch}", "-lineinfo", "-Xptxas", "-v", *options]
    argv = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    try:
        status = lib.nvrtcCompileProgram(prog, len(opts), argv)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value + 1)
        lib.nvrtcGetProgramLog(prog, buf)
        log = buf.value.decode(errors="replace")
        if status != 0:
            return Compiled(ok=False, arch=arch, log=log)
        ptx = ""
        if lib.nvrtcGetPTXSize(prog, ctypes.byref(size)) == 0:
            buf = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetPTX(prog, buf)
            ptx = buf.raw.rstrip(b"\0").decode(errors="replace")
        cubin = b""
        if lib.nvrtcGetCUBINSize(prog, ctypes.byref(size)) == 0:
            buf = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetCUBIN(prog, buf)
            cubin = buf.raw
        return Compiled(
            ok=True, arch=arch, log=log, ptx=ptx, cubin=cubin, ptxas=parse_ptxas_log(log)
        )
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def clear_memory_cache() -> None:
    """Forget every compilation cached in this process."""
    with _LOCK:
        _MEMORY.clear()
