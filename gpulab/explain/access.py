"""How one warp's 32 threads touch memory, from an address's thread-to-thread coefficients.

A warp is 32 consecutive threads of a block, threadIdx.x fastest: with a (16, 16) block, lanes
0-15 have threadIdx.y = ty and lanes 16-31 ty + 1. For each lane the address offset from lane 0
is cx*tx + cy*ty + cz*tz (bytes; blockDim is replaced by the launch's block). A coefficient that
is a run-time value (`4*cols`) puts the lanes it separates in different places, assumed far
apart (it is a row length, not 1).

- Global memory moves 32-byte sectors: a warp request costs the distinct sectors its lanes
  touch; the ideal is the bytes it uses, packed (4 sectors for 32 floats). Lane 0 is assumed to
  start a sector (true for `blockIdx.x * blockDim.x + threadIdx.x` with a block of 8 or more).
- Shared memory has 32 banks of 4 bytes: a request takes as many wavefronts as the most
  distinct 4-byte words any one bank must deliver (the same word to many lanes is a broadcast,
  free); the ideal is the distinct words / 32, rounded up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpulab.explain.ptx import ZERO, Poly, Val, const, padd, pconst, pformat, psplit, psubst

SECTOR = 32
BANKS = 32


@dataclass
class Pattern:
    """How one warp's lanes touch memory: sectors (global) or wavefronts (shared) against the
    ideal."""

    lanes: int
    stride_x: str  # the thread-to-thread step along x, as text ("4", "4*cols")
    units: int  # sectors (global) or wavefronts (shared)
    ideal: int
    symbolic: bool  # a run-time stride separates lanes
    broadcast: bool  # every lane the same address

    @property
    def efficiency(self) -> float:
        """The ideal transactions over those made (1.0 is perfect)."""
        return self.ideal / self.units if self.units else 1.0


def lane_ids(block: tuple[int, ...], lanes: int) -> list[tuple[int, int, int]]:
    """(threadIdx.x, .y, .z) of the block's first `lanes` threads, x fastest."""
    bx = block[0] if block else 1
    by = block[1] if len(block) > 1 else 1
    out = []
    for t in range(lanes):
        out.append((t % bx, (t // bx) % by, t // (bx * by)))
    return out


def lane_offsets(addr: Val, block: tuple[int, ...], lanes: int = 32) -> list[Poly] | None:
    """Each lane's offset from lane 0's address, as a polynomial; None when not known."""
    if not addr.known:
        return None
    dims = {f"blockDim.{a}": (block[i] if i < len(block) else 1) for i, a in enumerate("xyz")}
    coefs = [psubst(c, dims) for c in (addr.cx, addr.cy, addr.cz)]
    if any(c is None for c in coefs):
        return None
    out = []
    for tx, ty, tz in lane_ids(block, lanes):
        terms: dict[tuple[str, ...], int] = {}
        for c, t in zip(coefs, (tx, ty, tz), strict=True):
            for m, k in c or ():
                terms[m] = terms.get(m, 0) + k * t
        out.append(tuple(sorted((m, k) for m, k in terms.items() if k)))
    return out


def _groups(offsets: list[Poly]) -> dict[Poly, list[int]]:
    groups: dict[Poly, list[int]] = {}
    for off in offsets:
        symbolic, c = psplit(off)
        groups.setdefault(symbolic, []).append(c)
    return groups


def global_pattern(addr: Val, width: int, block: tuple[int, ...]) -> Pattern | None:
    """The warp's global-memory pattern for an address, or None when it cannot be worked out."""
    lanes = min(32, math.prod(block) if block else 32)
    offsets = lane_offsets(addr, block, lanes)
    if offsets is None:
        return None
    groups = _groups(offsets)
    sectors = 0
    used = 0
    for consts in groups.values():
        touched: set[int] = set()
        bytes_: set[int] = set()
        for c in consts:
            touched.update(range((c) // SECTOR, (c + width - 1) // SECTOR + 1))
            bytes_.update(range(c, c + width))
        sectors += len(touched)
        used += len(bytes_)
    ideal = max(1, math.ceil(used / SECTOR))
    return Pattern(
        lanes,
        _stride_text(addr, block),
        sectors,
        ideal,
        symbolic=len(groups) > 1,
        broadcast=len(set(offsets)) == 1,
    )


def joint_pattern(accesses: list[tuple[Val, int]], block: tuple[int, ...]) -> Pattern | None:
    """The warp's global-memory pattern of several (address, width) accesses issued together
    whose addresses differ by constants (a thread's neighbouring elements, one instruction
    each): the sectors of all of them against the bytes of all of them, as L1 serves a sector
    one instruction fetched to the next. None when they are not such a group."""
    first = accesses[0][0]
    lanes = min(32, math.prod(block) if block else 32)
    rows: list[Poly] = []
    widths: list[int] = []
    for addr, width in accesses:
        delta = pconst(padd(addr.base, first.base, -1))
        offsets = lane_offsets(addr, block, lanes)
        if delta is None or offsets is None or addr[1:] != first[1:]:
            return None
        rows += [padd(o, const(delta)) or ZERO for o in offsets]
        widths += [width] * len(offsets)
    groups: dict[Poly, list[tuple[int, int]]] = {}
    for off, width in zip(rows, widths, strict=True):
        symbolic, c = psplit(off)
        groups.setdefault(symbolic, []).append((c, width))
    sectors = used = 0
    for items in groups.values():
        touched: set[int] = set()
        bytes_: set[int] = set()
        for c, width in items:
            touched.update(range(c // SECTOR, (c + width - 1) // SECTOR + 1))
            bytes_.update(range(c, c + width))
        sectors += len(touched)
        used += len(bytes_)
    return Pattern(
        lanes,
        _stride_text(first, block),
        sectors,
        max(1, math.ceil(used / SECTOR)),
        symbolic=len(groups) > 1,
        broadcast=len(set(rows)) == 1,
    )


def shared_pattern(addr: Val, width: int, block: tuple[int, ...]) -> Pattern | None:
    """The warp's shared-memory bank pattern for an address, or None when it cannot be worked
    out."""
    lanes = min(32, math.prod(block) if block else 32)
    offsets = lane_offsets(addr, block, lanes)
    if offsets is None:
        return None
    groups = _groups(offsets)
    if len(groups) > 1:
        return None  # a run-time stride in a shared address: banks unknown
    words: set[int] = set()
    for c in next(iter(groups.values())):
        words.update(range(c // 4, (c + width - 1) // 4 + 1))
    per_bank: dict[int, int] = {}
    for w in words:
        per_bank[w % BANKS] = per_bank.get(w % BANKS, 0) + 1
    wavefronts = max(per_bank.values()) if per_bank else 1
    ideal = max(1, math.ceil(len(words) / BANKS))
    return Pattern(
        lanes,
        _stride_text(addr, block),
        wavefronts,
        ideal,
        symbolic=False,
        broadcast=len(set(offsets)) == 1,
    )


def _stride_text(addr: Val, block: tuple[int, ...]) -> str:
    dims = {f"blockDim.{a}": (block[i] if i < len(block) else 1) for i, a in enumerate("xyz")}
    return pformat(psubst(addr.cx, dims))


def stride_elements(addr: Val, width: int, block: tuple[int, ...]) -> str:
    """The x step in elements of `width` bytes, as text: "1", "cols", "33"."""
    dims = {f"blockDim.{a}": (block[i] if i < len(block) else 1) for i, a in enumerate("xyz")}
    cx = psubst(addr.cx, dims)
    if cx is None:
        return "?"
    k = pconst(cx)
    if k is not None:
        return str(k // width) if k % width == 0 else f"{k} bytes"
    if all(c % width == 0 for _, c in cx):
        return pformat(tuple((m, c // width) for m, c in cx))
    return pformat(cx) + " bytes"
