"""The emulator's device memory: each allocation sits between two guard zones that hold nothing
else, so an index past either end of an array lands in memory that can only be that array's, and
the runtime's access check (runtime.h) names the array and how far out the index went, as
compute-sanitizer does on a GPU. The zones are never written: a host allocation this size is
address space, not memory, until touched.

`bounds(a)` gives a launch what it checks each argument against: the allocation `a` points into
and the guard zones around it (for an array made elsewhere, its own buffer and no zones);
`device_spans()` every allocation, where a pointer the kernel was not handed (one read from an
array of pointers) may still point: any other address is outside the device.
"""

from __future__ import annotations

import weakref

import numpy as np

# Each side's zone: far enough that a row index times the wrong stride still lands in it for
# the emulator's sizes, and never less than the array itself.
GUARD_MIN_BYTES = 16 << 20
ALIGN = 256  # cudaMalloc's alignment: a kernel's vector loads may rely on it

# id(root buffer) -> (the buffer, where the data starts in it, the data's bytes)
_BLOCKS: dict[int, tuple[weakref.ref[np.ndarray], int, int]] = {}


def allocate(nbytes: int) -> np.ndarray:
    """`nbytes` of uninitialised bytes (uint8) between two guard zones, 256-byte aligned."""
    nbytes = max(0, int(nbytes))
    guard = max(GUARD_MIN_BYTES, nbytes)
    root = np.empty(guard + nbytes + guard + ALIGN, dtype=np.uint8)
    start = guard + (-(root.ctypes.data + guard) % ALIGN)
    key = id(root)
    _BLOCKS[key] = (weakref.ref(root), start, nbytes)
    weakref.finalize(root, _BLOCKS.pop, key, None)
    return root[start : start + nbytes]


def bounds(a: np.ndarray) -> tuple[int, int, int, int]:
    """(lo, hi, guard_lo, guard_hi): the addresses of the allocation `a` points into and of the
    guard zones around it; for an array not made here, its root buffer's and no zones."""
    root: object = a
    while isinstance(root, np.ndarray):
        hit = _BLOCKS.get(id(root))
        if hit is not None and hit[0]() is root:
            base = root.ctypes.data
            lo = base + hit[1]
            return lo, lo + hit[2], base, base + root.nbytes
        if not isinstance(root.base, np.ndarray):
            break
        root = root.base
    top = root if isinstance(root, np.ndarray) else a
    lo = top.ctypes.data
    return lo, lo + top.nbytes, lo, lo + top.nbytes


def device_spans() -> np.ndarray:
    """Every live allocation's data as sorted [lo, hi) address pairs (uint64, flat)."""
    spans = []
    for ref, start, nbytes in list(_BLOCKS.values()):
        root = ref()
        if root is not None and nbytes:
            lo = root.ctypes.data + start
            spans.append((lo, lo + nbytes))
    return np.array(sorted(spans), dtype=np.uint64).reshape(-1)
