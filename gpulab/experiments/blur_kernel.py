"""Blur's own CuPy kernel (kernels/blur.cu): its tile shape, compilation and launches.

GPU-only (CuPy is imported when a kernel is built): the experiment's contender, the GPU tests
and bench/tune_kernels.py all launch it through `BlurKernel`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpulab.experiments.blur_filters import SEPARABLE, weights_1d, weights_2d

KERNEL_PATH = Path(__file__).with_name("kernels") / "blur.cu"


REG_TILE = (128, 32)  # blur_sep_reg: 32 threads across (four columns each) x 8 down
REG_MAX_RADIUS = 4  # past it the register window grows and blur_sep_v4 is faster (R=7: 1.4x)
REG_MIN_BLOCKS = 6  # __launch_bounds__ minimum: 40 registers, six blocks an SM


def tile_for(radius: int, variant: str = "") -> tuple[int, int]:
    """Output tile (width, height) per block. blur_sep_reg, 4K RGB fp32 5x5 on an H100
    (.scratch tuning, three interleaved rounds): (128, 32) with 6 blocks/SM 77.4 us = 0.861 of
    the 2989 GB/s calibrated copy, 0.986 of a copy of the same image; (128, 40) 80.4 us;
    (128, 32) at 5 blocks/SM 84.0 us; blur_sep_v4 (128, 16) 88.0 us. The others from
    bench/tune_kernels.py on an H200 (4K RGB): r=2 sep_v4: (128, 16) 0.081 ms, (64, 32) 0.082,
    (64, 16) 0.092; r=7: (64, 32) 0.124 ms, (128, 16) 0.130. Wide tiles at large radii would
    pass the 48 KB static shared-memory limit."""
    if variant == "blur_sep_reg":
        return REG_TILE
    return (128, 16) if radius <= 4 else (64, 32)


def variant_for(kind: str, radius: int, width: int) -> str:
    """Which kernel runs `kind` at `radius` on an image `width` wide: 2-D, separable, or separable
    with vector loads (the register variant at small radii)."""
    if kind not in SEPARABLE:
        return "blur_2d"
    if width % 4:
        return "blur_sep"
    return "blur_sep_reg" if radius <= REG_MAX_RADIUS else "blur_sep_v4"


class BlurKernel:
    """Our CuPy kernel, compiled once per (radius, tile) and cached for the process."""

    _modules: dict[tuple[int, int, int], Any] = {}

    def __init__(self, radius: int, tile: tuple[int, int] | None = None) -> None:
        import cupy

        self.cupy = cupy
        self.radius = radius
        self.fixed_tile = tile  # a tuning run's tile for every variant; else each its own
        self.tile = tile or tile_for(radius)

    def module(self, tile: tuple[int, int]) -> Any:
        """The compiled CuPy module for this radius and tile shape, built once per process."""
        key = (self.radius, *tile)
        if key not in BlurKernel._modules:
            opts = (
                "-std=c++17",
                f"-DR={self.radius}",
                f"-DTW={tile[0]}",
                f"-DTH={tile[1]}",
                f"-DMINB={REG_MIN_BLOCKS if tuple(tile) == REG_TILE else 1}",
            )
            code = KERNEL_PATH.read_text()
            BlurKernel._modules[key] = self.cupy.RawModule(code=code, options=opts)
        return BlurKernel._modules[key]

    def variant(self, kind: str, width: int) -> str:
        """Which kernel runs `kind` on an image `width` wide: 2-D, separable, or separable with
        vector loads."""
        return variant_for(kind, self.radius, width)

    def launcher(self, src, dst, kind: str, variant: str | None = None):
        """A zero-argument callable that launches one filter pass (src, dst: (C, H, W) float32)."""
        cp = self.cupy
        channels, height, width = src.shape
        name = variant or self.variant(kind, width)
        w = weights_1d(kind, self.radius) if name != "blur_2d" else weights_2d(kind, self.radius)
        w_dev = cp.asarray(w.ravel())
        tile = self.fixed_tile or tile_for(self.radius, name)
        if name == "blur_sep_reg" and tuple(tile) != REG_TILE:
            raise ValueError(f"blur_sep_reg runs on {REG_TILE} tiles, not {tile}")
        self.tile = tile
        fn = self.module(tile).get_function(name)
        grid = (-(-width // tile[0]), -(-height // tile[1]), channels)
        args = (src, dst, w_dev, cp.int32(width), cp.int32(height))

        def launch() -> None:
            fn(grid, (256,), args)

        return launch
