"""Blur's own CuPy kernel (kernels/blur.cu): its tile shape, compilation and launches.

GPU-only (CuPy is imported when a kernel is built): the experiment's contender, the GPU tests
and bench/tune_kernels.py all launch it through `BlurKernel`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpulab.experiments.blur_filters import SEPARABLE, weights_1d, weights_2d

KERNEL_PATH = Path(__file__).with_name("kernels") / "blur.cu"


def tile_for(radius: int) -> tuple[int, int]:
    """Output tile (width, height) per block, from bench/tune_kernels.py on an H200 (4K RGB):
    r=2 sep_v4: (128, 16) 0.081 ms, (64, 32) 0.082, (64, 16) 0.092; r=7: (64, 32) 0.124 ms,
    (128, 16) 0.130. Wide tiles at large radii would pass the 48 KB static shared-memory limit."""
    return (128, 16) if radius <= 4 else (64, 32)


class BlurKernel:
    """Our CuPy kernel, compiled once per (radius, tile) and cached for the process."""

    _modules: dict[tuple[int, int, int], Any] = {}

    def __init__(self, radius: int, tile: tuple[int, int] | None = None) -> None:
        import cupy

        self.cupy = cupy
        self.radius = radius
        self.tile = tile or tile_for(radius)
        key = (radius, *self.tile)
        if key not in BlurKernel._modules:
            opts = ("-std=c++17", f"-DR={radius}", f"-DTW={self.tile[0]}", f"-DTH={self.tile[1]}")
            BlurKernel._modules[key] = cupy.RawModule(code=KERNEL_PATH.read_text(), options=opts)
        self.module = BlurKernel._modules[key]

    def variant(self, kind: str, width: int) -> str:
        if kind not in SEPARABLE:
            return "blur_2d"
        return "blur_sep_v4" if width % 4 == 0 else "blur_sep"

    def launcher(self, src, dst, kind: str, variant: str | None = None):
        """A zero-argument callable that launches one filter pass (src, dst: (C, H, W) float32)."""
        cp = self.cupy
        channels, height, width = src.shape
        name = variant or self.variant(kind, width)
        w = weights_1d(kind, self.radius) if name != "blur_2d" else weights_2d(kind, self.radius)
        w_dev = cp.asarray(w.ravel())
        fn = self.module.get_function(name)
        grid = (-(-width // self.tile[0]), -(-height // self.tile[1]), channels)
        args = (src, dst, w_dev, cp.int32(width), cp.int32(height))

        def launch() -> None:
            fn(grid, (256,), args)

        return launch
