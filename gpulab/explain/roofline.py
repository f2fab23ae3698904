"""The learner's graded figure as a point on this GPU's roofline.

Arithmetic intensity (FLOP per byte of memory traffic) is a fact of the exercise, declared in its
exercise.md (gpulab.exercises.intensity): the bytes are the ones its check counts for the
figure, the FLOPs the arithmetic the statement asks for. The roof is this GPU's calibrated
ceilings (gpulab.core.peaks): the bandwidth the exercise is graded against in GB/s (the
device-to-device copy, or the host-to-device copy for a transfer) and cuBLAS's matmul in TFLOP/s
(in the dtype the exercise names, else fp32); the ridge is where they meet.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gpulab.exercises.exercise_format import SPEED_METRICS
from gpulab.exercises.intensity import Intensity


@dataclass(frozen=True)
class Roof:
    """This GPU's two roofs: the bandwidth a figure is graded against and the matmul ceiling."""

    bandwidth_gbs: float
    compute_tflops: float
    bandwidth_name: str = "copy"  # copy, h2d or d2h
    compute_name: str = "matmul:fp32"


@dataclass
class Point:
    """One graded figure on the roofline: its work, bytes and the device's ceilings."""

    exercise: str
    metric: str  # GB/s or TFLOP/s
    figure: float  # the graded figure, in `metric`
    flops: float
    bytes: float
    counted: str
    bandwidth_gbs: float  # the bandwidth ceiling
    compute_tflops: float  # the matmul ceiling
    compute_name: str  # matmul:fp32
    bandwidth_name: str = "copy"  # or h2d, d2h: the bandwidth the figure is graded against

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
            "bandwidth_ceiling": self.bandwidth_name,
        }


def point(
    exercise_id: str,
    metric: str,
    figure: float,
    roof: Roof,
    intensity: Intensity | None,
) -> Point | None:
    """The roofline Point of an exercise's figure, or None when the exercise declares no
    intensity or is not graded by speed."""
    if intensity is None or metric not in SPEED_METRICS:
        return None
    return Point(
        exercise=exercise_id,
        metric=metric,
        figure=figure,
        flops=intensity.flops,
        bytes=intensity.bytes,
        counted=intensity.counted,
        bandwidth_gbs=roof.bandwidth_gbs,
        compute_tflops=roof.compute_tflops,
        compute_name=roof.compute_name,
        bandwidth_name=roof.bandwidth_name,
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
