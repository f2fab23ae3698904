"""What an SM of each architecture holds: the numbers the occupancy rules and the caps need.

From NVIDIA's occupancy calculator (`cuda_occupancy.h`, CUDA 12/13) and the CUDA C Programming
Guide's table of compute capabilities. `sms` is the SM count of the card named in `card`, used
only when neither a launch record nor the GPU itself says how many SMs there are (and then every
figure that needs it is tagged "estimated"); its datasheet bandwidth and FP32 rate likewise stand
in only where the calibration has no measured ceiling (A100 40 GB for sm_80).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KB = 1024


@dataclass(frozen=True)
class Arch:
    """One GPU architecture's limits: threads, blocks, warps, registers and shared memory per SM."""

    name: str  # sm_90
    major: int
    minor: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    smem_per_sm: int  # bytes: the largest carveout
    smem_per_block_optin: int  # bytes a block may have with cudaFuncSetAttribute
    carveouts_kb: tuple[int, ...]  # the shared-memory sizes an SM can be configured with
    fp32_lanes_per_sm: int  # FP32 FMA lanes: a warp FFMA takes 32 / (lanes / 4) issue slots
    sms: int
    card: str
    bandwidth_gbs: float  # the card's datasheet DRAM bandwidth
    fp32_tflops: float  # the card's datasheet FP32 (non-tensor) TFLOP/s at boost clock
    regs_per_sm: int = 65536
    regs_per_block: int = 65536
    max_regs_per_thread: int = 255  # what ptxas gives a thread (the calculator's check is 256)
    reg_unit: int = 256  # registers are given to a warp in units of 256
    sub_partitions: int = 4  # an SM's register file is split across 4 schedulers
    max_threads_per_block: int = 1024
    smem_per_block: int = 48 * KB  # without opting in
    reserved_smem_per_block: int = 1 * KB  # the driver's, on every block since sm_80
    smem_unit: int = 128  # shared memory is given to a block in units of 128 bytes
    warp: int = 32
    smem_bytes_per_clock: int = 128  # 32 banks x 4 bytes: one wavefront a clock per SM

    @property
    def max_warps_per_sm(self) -> int:
        """Warp slots per SM."""
        return self.max_threads_per_sm // self.warp

    @property
    def cc(self) -> str:
        """The compute capability as text, e.g. 9.0."""
        return f"{self.major}.{self.minor}"


ARCHS: dict[str, Arch] = {
    a.name: a
    for a in (
        Arch(
            "sm_80", 8, 0, 2048, 32, 164 * KB, 163 * KB,
            (0, 8, 16, 32, 64, 100, 132, 164), 64, 108, "A100", 1555.0, 19.5,
        ),
        Arch(
            "sm_86", 8, 6, 1536, 16, 100 * KB, 99 * KB,
            (0, 8, 16, 32, 64, 100), 128, 82, "RTX 3090", 936.0, 35.6,
        ),
        Arch(
            "sm_89", 8, 9, 1536, 24, 100 * KB, 99 * KB,
            (0, 8, 16, 32, 64, 100), 128, 128, "RTX 4090", 1008.0, 82.6,
        ),
        Arch(
            "sm_90", 9, 0, 2048, 32, 228 * KB, 227 * KB,
            (0, 8, 16, 32, 64, 100, 132, 164, 196, 228), 128, 132, "H100 SXM", 3350.0, 66.9,
        ),
    )
}  # fmt: skip

DEFAULT = "sm_90"

# SM counts of cards a learner is likely to have, by a word of the name NVML or the calibration
# reports ("NVIDIA H100 80GB HBM3" is the SXM part; PCIe and NVL say so).
_CARDS = (
    (r"H100.*PCIe", 114),
    (r"H100 NVL", 132),
    (r"H100", 132),
    (r"H200", 132),
    (r"GH200", 132),
    (r"H800", 132),
    (r"A100", 108),
    (r"A800", 108),
    (r"A30\b", 56),
    (r"A10\b", 72),
    (r"A40\b", 84),
    (r"L40S", 142),
    (r"L40\b", 142),
    (r"L4\b", 58),
    (r"RTX 4090", 128),
    (r"RTX 4080", 76),
    (r"RTX 3090", 82),
    (r"RTX 3080", 68),
)


def get(name: str | None) -> Arch:
    """The Arch for `sm_90`, `90`, `9.0` or `compute_90`; ValueError names the known ones."""
    key = (name or DEFAULT).strip().lower().replace("compute_", "sm_").replace(".", "")
    if key.isdigit():
        key = "sm_" + key
    if key not in ARCHS:
        known = ", ".join(ARCHS)
        raise ValueError(f"unknown architecture {name!r}: one of {known}")
    return ARCHS[key]


def sms_for_card(card: str) -> int | None:
    """The SM count of a card by its name, or None when the name is not one we know."""
    for pattern, sms in _CARDS:
        if re.search(pattern, card, re.I):
            return sms
    return None
