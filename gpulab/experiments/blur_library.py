"""Blur's library contenders on the GPU: cupyx.scipy.ndimage and a separable torch blur.

The lessons quote both, so both are measured, on the same image, borders and weights as the
other contenders, and judged against the same copy ceiling:
- cupyx: gaussian_filter for the gaussian (sigma = r / 2, truncate = 2, so its radius is r and
  its weights are ours), uniform_filter for the box; sharpen and edge through their identities
  (2x - gaussian, x - box), as the CPU reference computes them.
- torch separable: a row pass and a column pass of depthwise conv2d with the 1-D taps (clamped
  borders by F.pad(replicate)), 2(2r+1) multiply-adds a pixel instead of the 2-D conv's (2r+1)^2.
"""

from __future__ import annotations

from typing import Any

from gpulab.experiments import backends
from gpulab.experiments.base import Context
from gpulab.experiments.blur_filters import weights_1d


def _base(kind: str) -> str:
    """The separable filter each kernel is built on."""
    return {"sharpen": "gaussian", "edge": "box"}.get(kind, kind)


def _combine(kind: str, x: Any, smooth: Any) -> Any:
    if kind == "sharpen":
        return 2 * x - smooth
    if kind == "edge":
        return x - smooth
    return smooth


def run_cupyx(ctx: Context, planes: Any, kind: str, radius: int) -> tuple[Any, Any, dict]:
    """Filter `planes` with cupyx.scipy.ndimage on the GPU: (output, timing, extra row fields)."""
    import cupy as cp
    from cupyx.scipy import ndimage

    base = _base(kind)
    with cp.cuda.Device(ctx.device_index):
        x = cp.asarray(planes)
        if base == "gaussian":
            sigma = radius / 2.0

            def smooth() -> Any:
                # Axis 0 is the colour plane: never blurred across.
                return ndimage.gaussian_filter(
                    x, sigma=(0.0, sigma, sigma), mode="nearest", truncate=radius / sigma
                )

            impl = "cupyx.scipy.ndimage.gaussian_filter"
        else:
            size = 2 * radius + 1

            def smooth() -> Any:
                return ndimage.uniform_filter(x, size=(1, size, size), mode="nearest")

            impl = "cupyx.scipy.ndimage.uniform_filter"

        def call() -> Any:
            return _combine(kind, x, smooth())

        out = cp.asnumpy(call())
        timing, kw = backends.sustained_timing(ctx, call, "cupy")
    if kind != base:
        impl += f" ({'2x - it' if kind == 'sharpen' else 'x - it'})"
    return timing, out, {"impl": impl, "regime": backends.regime(kw)}


def run_torch_separable(ctx: Context, planes: Any, kind: str, radius: int) -> tuple[Any, Any, dict]:
    """Filter `planes` with two 1-D torch convolutions: (output, timing, extra row fields)."""
    import torch
    import torch.nn.functional as F

    dev = torch.device(ctx.torch_device)
    x = torch.from_numpy(planes).to(dev)[None]  # (1, C, H, W)
    c = x.shape[1]
    taps = torch.from_numpy(weights_1d(_base(kind), radius)).to(dev)
    w_row = taps.view(1, 1, 1, -1).expand(c, 1, 1, taps.numel()).contiguous()
    w_col = taps.view(1, 1, -1, 1).expand(c, 1, taps.numel(), 1).contiguous()
    r = radius

    def call() -> Any:
        rows = F.conv2d(F.pad(x, (r, r, 0, 0), mode="replicate"), w_row, groups=c)
        smooth = F.conv2d(F.pad(rows, (0, 0, r, r), mode="replicate"), w_col, groups=c)
        return _combine(kind, x, smooth)

    saved = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False  # fp32 means fp32: TF32 would miss 1e-5
    try:
        out = call()[0].cpu().numpy()
        timing, kw = backends.sustained_timing(ctx, call, "torch-cuda")
    finally:
        torch.backends.cudnn.allow_tf32 = saved
    return (
        timing,
        out,
        {
            "impl": "two depthwise conv2d passes (1 x 2r+1, then 2r+1 x 1)",
            "regime": backends.regime(kw),
        },
    )
