"""Theoretical occupancy, worked out the way the CUDA occupancy calculator does, with no GPU.

The rules are those of `cuda_occupancy.h` (`cudaOccMaxActiveBlocksPerMultiprocessor`) for a
kernel with the default cache and carveout preference, which is what
`cuOccupancyMaxActiveBlocksPerMultiprocessor` answers for a CuPy kernel:

- warps: a block takes ceil(threads / 32) of the SM's warp slots;
- registers: a warp gets regs x 32 rounded up to 256; each of the SM's 4 sub-partitions holds
  floor(16384 / that) warps, and a block fits when its warps fit; a block whose registers,
  counted as if its warps were rounded up to a multiple of 4, exceed 64K cannot launch;
- shared memory: static + dynamic + the driver's 1 KB per block, rounded up to 128 bytes, out
  of the largest carveout (228 KB on sm_90);
- blocks: at most 32 a SM on sm_80 and sm_90 (24 on sm_89, 16 on sm_86).

The GPU test (tests/test_explain_gpu.py) checks it against the driver for a set of kernels.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from gpulab.explain.arch import Arch

LIMITERS = ("warps", "registers", "shared memory", "blocks per SM")


@dataclass
class Occupancy:
    """Blocks and warps per SM for one launch, and what limits them."""

    block: int  # threads per block
    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    limiter: str  # one of LIMITERS ("" when nothing fits)
    limits: dict[str, int] = field(default_factory=dict)  # blocks per SM by each rule
    why_none: str = ""  # why not even one block fits

    @property
    def fraction(self) -> float:
        """Active warps over the SM's warp slots."""
        return self.warps_per_sm / self.max_warps_per_sm if self.max_warps_per_sm else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The occupancy as JSON-ready data."""
        return {**asdict(self), "fraction": round(self.fraction, 4)}


def _round_up(x: int, unit: int) -> int:
    return unit * math.ceil(x / unit) if unit else x


def compute(
    arch: Arch,
    block: int,
    regs: int,
    smem_static: int = 0,
    smem_dynamic: int = 0,
    *,
    max_threads: int | None = None,
) -> Occupancy:
    """Blocks and warps an SM holds for a kernel of `regs` registers a thread and that much
    shared memory, launched with `block` threads; `max_threads` is the kernel's own limit
    (`__launch_bounds__`, or what its registers allow)."""
    warps_per_block = math.ceil(block / arch.warp) if block > 0 else 0
    limits: dict[str, int] = {}
    why = ""
    cap = min(arch.max_threads_per_block, max_threads or arch.max_threads_per_block)
    if block <= 0 or block > cap:
        why = f"{block} threads is more than this kernel can launch ({cap})"
        limits["warps"] = 0
    else:
        limits["warps"] = arch.max_warps_per_sm // warps_per_block

    per_warp = _round_up(regs * arch.warp, arch.reg_unit)
    assumed = per_warp * _round_up(warps_per_block, arch.sub_partitions)
    if regs > arch.max_regs_per_thread + 1 or assumed > arch.regs_per_block:
        limits["registers"] = 0
        why = why or f"{regs} registers x {block} threads is more than a block's 64K registers"
    elif per_warp > 0 and warps_per_block > 0:
        per_part = (arch.regs_per_sm // arch.sub_partitions) // per_warp
        limits["registers"] = per_part * arch.sub_partitions // warps_per_block
    else:
        limits["registers"] = arch.max_blocks_per_sm

    used = smem_static + smem_dynamic + arch.reserved_smem_per_block
    allocated = _round_up(used, arch.smem_unit)
    # The per-block cap assumes the learner opted in (cudaFuncSetAttribute) when a launch asks
    # for more than 48 KB: without it such a launch fails, and the check would have said so.
    cap_smem = arch.smem_per_block_optin + arch.reserved_smem_per_block
    if allocated > cap_smem:
        limits["shared memory"] = 0
        why = why or (
            f"{smem_static + smem_dynamic} bytes of shared memory is more than a block may have"
        )
    else:
        # With the default carveout preference the calculator offers the largest carveout.
        limits["shared memory"] = arch.smem_per_sm // allocated if allocated else 1 << 30

    limits["blocks per SM"] = arch.max_blocks_per_sm
    blocks = max(0, min(limits.values()))
    limiter = ""
    if blocks > 0:
        # Name the rule that binds; on a tie, the one the learner can most easily change.
        for name in ("registers", "shared memory", "blocks per SM", "warps"):
            if limits[name] == blocks:
                limiter = name
                break
    return Occupancy(
        block=block,
        blocks_per_sm=blocks,
        warps_per_sm=blocks * warps_per_block,
        max_warps_per_sm=arch.max_warps_per_sm,
        limiter=limiter,
        limits=limits,
        why_none=why if blocks == 0 else "",
    )


def max_threads_for_regs(arch: Arch, regs: int) -> int:
    """The largest block (a multiple of 32) a kernel of `regs` registers a thread can launch:
    what CuPy's `max_threads_per_block` says for a kernel without `__launch_bounds__`."""
    if regs <= 0:
        return arch.max_threads_per_block
    per_warp = _round_up(regs * arch.warp, arch.reg_unit)
    warps = arch.max_threads_per_block // arch.warp
    while warps > 0 and per_warp * _round_up(warps, arch.sub_partitions) > arch.regs_per_block:
        warps -= 1
    return warps * arch.warp


@dataclass
class Waves:
    """How a grid's blocks fill the GPU: full waves and the tail."""

    blocks: int  # blocks in the grid
    per_wave: int  # blocks the whole GPU holds at once (SMs x blocks per SM)
    sms: int

    @property
    def waves(self) -> float:
        """Blocks over blocks per wave (1.0 fills the GPU once)."""
        return self.blocks / self.per_wave if self.per_wave else 0.0

    @property
    def full_waves(self) -> int:
        """Waves in which every SM is full."""
        return self.blocks // self.per_wave if self.per_wave else 0

    @property
    def tail(self) -> int:
        """Blocks in the last, partial wave (0 when the grid is whole waves)."""
        return self.blocks % self.per_wave if self.per_wave else 0

    @property
    def busy_sms(self) -> int:
        """SMs with at least one block in the first wave (blocks spread one per SM first)."""
        return min(self.sms, self.blocks)

    @property
    def efficiency(self) -> float:
        """Share of the slots the waves offer that blocks use: blocks / (ceil(waves) x per wave)."""
        if not self.per_wave or not self.blocks:
            return 0.0
        return self.blocks / (math.ceil(self.blocks / self.per_wave) * self.per_wave)

    def to_dict(self) -> dict[str, Any]:
        """The waves as JSON-ready data."""
        return {
            **asdict(self),
            "waves": round(self.waves, 3),
            "tail": self.tail,
            "busy_sms": self.busy_sms,
            "efficiency": round(self.efficiency, 4),
        }
