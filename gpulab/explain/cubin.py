"""A kernel's resources, read from the cubin NVRTC wrote: registers, shared and local memory.

A cubin is an ELF file. For each kernel `k` ptxas writes:

- `.nv.info` (for the whole file): per function, EIATTR_REGCOUNT (0x2f) and EIATTR_FRAME_SIZE
  (0x11, the per-thread stack frame in local memory: spills and arrays the compiler could not
  keep in registers), each as (symbol index, value);
- `.nv.info.k`: EIATTR_MAX_THREADS (0x05, from `__launch_bounds__`), EIATTR_MAXREG_COUNT (0x1b,
  the register cap ptxas worked under) and EIATTR_CBANK_PARAM_SIZE (0x19, bytes of parameters);
- `.nv.shared.k`, a NOBITS section as large as the kernel's static shared memory. From sm_90
  on it also holds the 1 KB the driver reserves per block (the `.nv.reservedSmem` symbols say
  so), which is subtracted: CuPy's `shared_size_bytes` does not count it.

Each attribute record is (format byte, attribute byte, value): format 1 has no value, 2 one
byte, 3 a 16-bit value, 4 a 16-bit size then that many bytes. Reading the ELF ourselves needs no
extra wheel (cuobjdump's `--dump-resource-usage` prints the same numbers) and takes microseconds.
Spill bytes are not in the cubin: they come from ptxas's `-v` log (nvrtc.py).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

EIATTR_MAX_THREADS = 0x05
EIATTR_FRAME_SIZE = 0x11
EIATTR_MAXREG_COUNT = 0x1B
EIATTR_CBANK_PARAM_SIZE = 0x19
EIATTR_REGCOUNT = 0x2F
SHT_SYMTAB = 2
RESERVED_SMEM = 1024


class CubinError(ValueError):
    """Not a cubin this reader understands."""


@dataclass
class Resources:
    """What ptxas gave one kernel: registers, stack, shared memory and launch bounds."""

    kernel: str
    registers: int = 0
    local_bytes: int = 0  # stack frame per thread
    shared_static: int = 0
    max_threads: int | None = None  # from __launch_bounds__
    maxreg: int | None = None  # the register cap ptxas worked under
    param_bytes: int | None = None


def _sections(data: bytes) -> list[tuple[str, int, int, int, int]]:
    """(name, type, offset, size, link) of every section."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise CubinError("not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    raw = []
    for i in range(shnum):
        name, typ, _flags, _addr, offset, size, link, _info, _al, _es = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize
        )
        raw.append((name, typ, offset, size, link))
    str_off = raw[shstrndx][2]
    return [(_cstr(data, str_off + n), t, o, s, ln) for n, t, o, s, ln in raw]


def _cstr(data: bytes, at: int) -> str:
    end = data.index(b"\0", at)
    return data[at:end].decode("utf-8", "replace")


def _records(data: bytes, offset: int, size: int) -> list[tuple[int, bytes | int | None]]:
    out: list[tuple[int, bytes | int | None]] = []
    p, end = offset, offset + size
    while p + 2 <= end:
        fmt, attr = data[p], data[p + 1]
        if fmt == 4:
            (n,) = struct.unpack_from("<H", data, p + 2)
            out.append((attr, data[p + 4 : p + 4 + n]))
            p += 4 + n
        elif fmt == 3:
            out.append((attr, struct.unpack_from("<H", data, p + 2)[0]))
            p += 4
        elif fmt == 2:
            out.append((attr, data[p + 2]))
            p += 4
        elif fmt == 1:
            out.append((attr, None))
            p += 4
        else:
            raise CubinError(f"unknown .nv.info record format {fmt}")
    return out


def _symbols(data: bytes, secs: list[tuple[str, int, int, int, int]]) -> list[str]:
    for _name, typ, off, size, link in secs:
        if typ == SHT_SYMTAB:
            str_off = secs[link][2]
            return [
                _cstr(data, str_off + struct.unpack_from("<I", data, off + i)[0])
                for i in range(0, size, 24)
            ]
    return []


def read(data: bytes) -> dict[str, Resources]:
    """Resources of every kernel in the cubin, by name (the mangled name for C++ kernels)."""
    secs = _sections(data)
    symbols = _symbols(data, secs)
    reserved = any(s.startswith((".nv.reservedSmem", "__nv_reservedSMEM")) for s in symbols)
    kernels: dict[str, Resources] = {}
    for name, _typ, _off, _size, _link in secs:
        if name.startswith(".text."):
            k = name[len(".text.") :]
            kernels[k] = Resources(k)
    for name, _typ, off, size, _link in secs:
        if name == ".nv.info":
            for attr, value in _records(data, off, size):
                if attr in (EIATTR_REGCOUNT, EIATTR_FRAME_SIZE) and isinstance(value, bytes):
                    sym, val = struct.unpack_from("<II", value)
                    k = symbols[sym] if sym < len(symbols) else ""
                    if k in kernels:
                        if attr == EIATTR_REGCOUNT:
                            kernels[k].registers = val
                        else:
                            kernels[k].local_bytes = val
        elif name.startswith(".nv.info."):
            k = name[len(".nv.info.") :]
            if k not in kernels:
                continue
            for attr, value in _records(data, off, size):
                if attr == EIATTR_MAX_THREADS and isinstance(value, bytes):
                    x, y, z = struct.unpack_from("<III", value)
                    kernels[k].max_threads = x * y * z
                elif attr == EIATTR_MAXREG_COUNT and isinstance(value, int):
                    kernels[k].maxreg = value
                elif attr == EIATTR_CBANK_PARAM_SIZE and isinstance(value, int):
                    kernels[k].param_bytes = value
        elif name.startswith(".nv.shared.") and not name.startswith(".nv.shared.reserved"):
            k = name[len(".nv.shared.") :]
            if k in kernels:
                kernels[k].shared_static = max(0, size - (RESERVED_SMEM if reserved else 0))
    return kernels
