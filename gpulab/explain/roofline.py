"""The learner's graded figure as a point on this GPU's roofline.

Arithmetic intensity (FLOP per byte of DRAM traffic) is declared per exercise: the bytes are the
ones its check counts for the figure (`work` in check.py's TimingSpec, whose note says "4 bytes
read + 4 written per element"), the FLOPs are the arithmetic the statement asks for. A check.py
may declare its own as `INTENSITY = (flops, bytes, "what is counted")` per element (read with
`ast`, never imported); the table below covers the kernel track. The roof is this GPU's
calibrated ceilings (gpulab.core.peaks): the device-to-device copy in GB/s and cuBLAS's fp32
matmul in TFLOP/s (or the dtype the exercise names); the ridge is where they meet.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# exercise id -> (FLOPs, bytes, what is counted), per element of the output unless it says.
INTENSITY: dict[str, tuple[float, float, str]] = {
    "first-kernel": (2, 12, "saxpy: a multiply and an add; 8 bytes read + 4 written"),
    "map-add-ten": (1, 8, "one add; 4 bytes read + 4 written"),
    "zip-add": (1, 12, "one add; 8 bytes read + 4 written"),
    "guards": (1, 8, "a compare-and-scale; 4 bytes read + 4 written"),
    "map-2d": (1, 8, "one add; 4 bytes read + 4 written"),
    "broadcast-outer": (1, 4, "one add; 4 bytes written (the inputs are tiny)"),
    "grid-stride": (2, 12, "a multiply and an add; 8 bytes read + 4 written"),
    "stencil-shared": (6, 8, "6 adds (a 7-wide window); 4 bytes read + 4 written"),
    "dot-reduction": (2, 8, "a multiply and an add; 8 bytes read"),
    "histogram": (1, 4, "one integer add (counted as an operation); 4 bytes read"),
    "scan": (1, 8, "one add; 4 bytes read + 4 written"),
    "transpose-tiled": (0, 8, "no arithmetic; 4 bytes read + 4 written"),
    "matmul-tiled": (2 * 4096**3, 3 * 4 * 4096**2, "2 n^3 FLOPs, n = 4096; a, b and out once"),
    "softmax-rows": (5, 8, "max, subtract, exp, sum, divide; 4 bytes read + 4 written"),
    "conv1d": (14, 8, "7 multiply-adds (K = 7); 4 bytes read + 4 written"),
    "elementwise-fused": (3, 12, "multiply, add, max; 8 bytes read + 4 written"),
    "reduction-kernel": (2, 4, "a multiply and an add; 4 bytes read"),
}


@dataclass
class Point:
    """One graded figure on the roofline: its work, bytes and the device's ceilings."""

    exercise: str
    metric: str  # GB/s or TFLOP/s
    figure: float  # the graded figure, in `metric`
    flops: float
    bytes: float
    counted: str
    bandwidth_gbs: float  # the copy ceiling
    compute_tflops: float  # the matmul ceiling
    compute_name: str  # matmul:fp32

    @property
    def intensity(self) -> float:
        """FLOPs per byte."""
        return self.flops / self.bytes if self.bytes else math.inf

    @property
    def ridge(self) -> float:
        """FLOP per byte where the memory roof meets the compute roof."""
        return self.compute_tflops * 1e12 / (self.bandwidth_gbs * 1e9)

    @property
    def bound(self) -> str:
        """memory or compute: the side of the ridge the point is on."""
        return "memory" if self.intensity < self.ridge else "compute"

    @property
    def achieved_flops(self) -> float:
        """The figure as FLOP/s."""
        if self.metric == "TFLOP/s":
            return self.figure * 1e12
        return self.figure * 1e9 * self.intensity

    @property
    def achieved_gbs(self) -> float:
        """The figure as GB/s."""
        if self.metric == "GB/s":
            return self.figure
        return self.figure * 1e12 / self.intensity / 1e9 if self.intensity else 0.0

    def roof_flops(self, intensity: float | None = None) -> float:
        """The roof at `intensity` (the point's own by default), FLOP/s."""
        ai = self.intensity if intensity is None else intensity
        return min(self.compute_tflops * 1e12, ai * self.bandwidth_gbs * 1e9)

    @property
    def of_roof(self) -> float:
        """The figure as a fraction of the roof at its intensity."""
        if self.metric == "GB/s" and self.bound == "memory":
            return self.figure / self.bandwidth_gbs
        roof = self.roof_flops()
        return self.achieved_flops / roof if roof else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The point as JSON-ready data."""
        return {
            "exercise": self.exercise,
            "metric": self.metric,
            "figure": self.figure,
            "intensity_flop_per_byte": self.intensity,
            "counted": self.counted,
            "ridge_flop_per_byte": self.ridge,
            "bound": self.bound,
            "of_roof": self.of_roof,
            "bandwidth_gbs": self.bandwidth_gbs,
            "compute_tflops": self.compute_tflops,
            "compute_ceiling": self.compute_name,
        }


def declared(exercise_id: str, check_path: Path | None = None) -> tuple[float, float, str] | None:
    """(FLOPs, bytes, what) for an exercise: its check.py's INTENSITY, else the table."""
    if check_path is not None and check_path.is_file():
        try:
            tree = ast.parse(check_path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError):
            tree = None
        for node in tree.body if tree else ():
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "INTENSITY"
            ):
                try:
                    value = ast.literal_eval(node.value)
                    return float(value[0]), float(value[1]), str(value[2])
                except (ValueError, TypeError, IndexError, SyntaxError):
                    break
    return INTENSITY.get(exercise_id)


def point(
    exercise_id: str,
    metric: str,
    figure: float,
    bandwidth_gbs: float,
    compute_tflops: float,
    *,
    compute_name: str = "matmul:fp32",
    check_path: Path | None = None,
) -> Point | None:
    """The roofline Point of an exercise's figure, or None when the exercise declares no work and
    bytes."""
    found = declared(exercise_id, check_path)
    if found is None or metric not in ("GB/s", "TFLOP/s"):
        return None
    flops, nbytes, counted = found
    return Point(
        exercise_id,
        metric,
        figure,
        flops,
        nbytes,
        counted,
        bandwidth_gbs,
        compute_tflops,
        compute_name,
    )


def plot(p: Point, width: int = 64, height: int = 14) -> list[str]:
    """A log-log text roofline: the roof in '-' and '/', the ridge '|', the figure '*'."""
    lo_x = min(1 / 16, p.intensity / 2 if p.intensity > 0 else 1 / 16)
    hi_x = max(p.ridge * 8, p.intensity * 2 if math.isfinite(p.intensity) else 1024)
    peak = p.compute_tflops * 1e12
    lo_y = max(1.0, min(p.roof_flops(lo_x), p.achieved_flops or peak) / 4)
    hi_y = peak * 1.5

    def col(x: float) -> int:
        return round(
            (math.log(x) - math.log(lo_x)) / (math.log(hi_x) - math.log(lo_x)) * (width - 1)
        )

    def row(y: float) -> int:
        y = min(max(y, lo_y), hi_y)
        frac = (math.log(y) - math.log(lo_y)) / (math.log(hi_y) - math.log(lo_y))
        return height - 1 - round(frac * (height - 1))

    grid = [[" "] * width for _ in range(height)]
    for c in range(width):
        x = math.exp(math.log(lo_x) + c / (width - 1) * (math.log(hi_x) - math.log(lo_x)))
        grid[row(p.roof_flops(x))][c] = "-" if x >= p.ridge else "/"
    rc = col(p.ridge)
    for r in range(row(peak) + 1, height):
        if grid[r][rc] == " ":
            grid[r][rc] = "|"
    if p.achieved_flops > 0 and math.isfinite(p.intensity) and p.intensity > 0:
        grid[row(p.achieved_flops)][min(width - 1, max(0, col(p.intensity)))] = "*"
    labels = {0: _si(hi_y), row(peak): _si(peak), height - 1: _si(lo_y)}
    lines = [f"{labels.get(r, ''):>9} {''.join(grid[r])}" for r in range(height)]
    axis = f"{_num(lo_x)} FLOP/B".ljust(width // 2) + f"{_num(hi_x)} FLOP/B".rjust(width // 2)
    lines.append(" " * 10 + axis)
    lines.append(
        f"{'':10}* your figure (AI {_num(p.intensity)})  | ridge at {_num(p.ridge)} FLOP/B"
    )
    return lines


def _si(flops: float) -> str:
    for unit, scale in (("TFLOP/s", 1e12), ("GFLOP/s", 1e9), ("MFLOP/s", 1e6)):
        if flops >= scale:
            return f"{flops / scale:.3g} {unit[0]}F/s"
    return f"{flops:.3g} F/s"


def _num(x: float) -> str:
    if not math.isfinite(x):
        return "inf"
    return f"{x:.3g}"
