"""Check for conv2d: a 2-D convolution (blur, sharpen, edge) as a CuPy RawKernel.

The filter is applied as a correlation, like torch's conv2d and cupyx.scipy.ndimage.correlate:
out[r, c] = sum over i, j of k[i, j] * image[r + i - K//2, c + j - K//2], zero outside the image.
Several kernels are not symmetric (Sobel, random 5 x 5 and 7 x 7), so a flipped kernel fails.
Every filter size the statement allows is tested: 1, 3, 5 and 7 (MAX_K).

The image and the kernel sit in guarded buffers and must be unchanged after every call; `out` is a
view in the middle of a poisoned buffer (gpulab/exercises/kernel_checks.py), and every timed call
is checked against cupyx.scipy.ndimage.correlate.

The reference is float64. A float32 sum of K*K products is off by at most about K*K eps times
the sum of |k| |image| over the window, and edge filters cancel to near zero, so a relative
tolerance alone would reject correct kernels: the absolute tolerance is 8 K*K eps times
sum(|k|) max(|image|), a bound of every window's sum, far below the error of any missing or
misplaced term.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gpulab.exercises import api
from gpulab.exercises import kernel_checks as kc

ENTRY = "conv2d"
# The work must be done by a kernel the learner's file compiles and launches: the statement asks
# for the kernel and its launch (an ElementwiseKernel lets CuPy write the pixel's index, the
# guard and the grid; a red team passed with one)
OWN_KERNEL = ("RawKernel", "RawModule")

EPS32 = 2.0**-24
SIZES = (1, 3, 5, 7)  # every K the statement allows

BOX = np.full((3, 3), 1.0 / 9.0)
SHARPEN = np.array([[0.0, -1.0, 0.0], [-1.0, 5.0, -1.0], [0.0, -1.0, 0.0]])
SOBEL_X = np.array([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]])
LAPLACE = np.array([[1.0, 1.0, 1.0], [1.0, -8.0, 1.0], [1.0, 1.0, 1.0]])
_G = np.array([1.0, 4.0, 6.0, 4.0, 1.0])
GAUSS5 = np.outer(_G, _G) / 256.0

# (height, width, filter name): tiny, odd, around a warp, wider than tall and taller than wide,
# smaller than the filter; K = 1, 3, 5 and 7.
PLAN = (
    (1, 1, "sharpen"),
    (2, 3, "sobel-x"),
    (3, 2, "random-5x5"),
    (5, 4, "random-7x7"),
    (31, 33, "sobel-x"),
    (33, 31, "gauss-5x5"),
    (17, 65, "random-1x1"),
    (64, 1023, "laplace"),
    (1025, 67, "random-5x5"),
    (129, 97, "random-7x7"),
    (257, 255, "box-blur"),
)


def _filter(name: str, rng: np.random.Generator) -> np.ndarray:
    if name.startswith("random-"):
        k = int(name.removeprefix("random-").partition("x")[0])
        w = rng.uniform(0.25, 1.0, (k, k)) * rng.choice([-1.0, 1.0], (k, k))
        return w  # never zero: a dropped weight always shows
    return {
        "box-blur": BOX,
        "sharpen": SHARPEN,
        "sobel-x": SOBEL_X,
        "laplace": LAPLACE,
        "gauss-5x5": GAUSS5,
    }[name]


def _image(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    # Pixel values of both signs, 0.1 to 2, one in 100 scaled by 50; never zero.
    img = rng.random((h, w), dtype=np.float32) * np.float32(1.9) + np.float32(0.1)
    img *= (rng.integers(0, 2, (h, w), dtype=np.int8) * 2 - 1).astype(np.float32)
    img[rng.random((h, w), dtype=np.float32) < 0.01] *= np.float32(50.0)
    return img


def big_shape(ctx: api.Context, arrays: int = 2) -> tuple[int, int]:
    """A wide, odd-sized image of about the device-filling pixel count (image + out)."""
    n = ctx.big(4, arrays=arrays)
    h = max(1, int(math.sqrt(n / 2))) | 1
    return h, max(1, n // h) | 1


def cases(ctx: api.Context) -> list[api.Case]:
    out = []
    # Half the filling size: the float64 reference takes K*K passes over it on the CPU.
    plan = (*PLAN, (*big_shape(ctx, arrays=4), "sharpen"))
    for at, (h, w, name) in enumerate(plan):
        k = _filter(name, ctx.rng).astype(np.float32)
        note = " (fills the device)" if at == len(plan) - 1 else ""
        out.append(
            api.Case(
                f"{h} x {w} image, {name} filter{note}",
                {"image": _image(ctx.rng, h, w), "kernel": k},
            )
        )
    return out


def correlate(image: np.ndarray, kernel: np.ndarray, rows: int = 16) -> np.ndarray:
    """The float64 'same'-size correlation with zeros outside the image, in bands of `rows`
    rows so the K*K passes over each band stay in the CPU's cache."""
    k = kernel.astype(np.float64)
    kh, kw = k.shape
    h, w = image.shape
    pad = np.zeros((h + kh - 1, w + kw - 1))
    pad[kh // 2 : kh // 2 + h, kw // 2 : kw // 2 + w] = image
    out = np.empty((h, w))
    for r0 in range(0, h, rows):
        r1 = min(h, r0 + rows)
        band = out[r0:r1]
        band[...] = 0.0
        for i in range(kh):
            for j in range(kw):
                band += k[i, j] * pad[r0 + i : r1 + i, j : j + w]
    return out


def expected(case: api.Case, ctx: api.Context) -> dict[str, Any]:
    image, kernel = case.args["image"], case.args["kernel"]
    # An upper bound of the largest window sum of |k| |image|, without a second correlation.
    scale = float(np.abs(kernel.astype(np.float64)).sum() * np.abs(image).max())
    return {"out": correlate(image, kernel), "atol": 8 * kernel.size * EPS32 * scale}


def run(fn: Any, case: api.Case, ctx: api.Context) -> np.ndarray:
    image, kernel = case.args["image"], case.args["kernel"]
    return kc.run_guarded(fn, [image, kernel], image.shape, np.float32, names=("image", "kernel"))


def compare(want: dict, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    return kc.compare_guarded(want["out"], got, atol=want["atol"])


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp
    from cupyx.scipy import ndimage

    h, w = big_shape(ctx)
    kernel = SHARPEN.astype(np.float32)

    def setup(i: int) -> tuple:
        image = kc.device_rng(ctx, i).random((h, w), dtype=cp.float32) + np.float32(0.5)
        return image, cp.asarray(kernel), cp.empty((h, w), dtype=cp.float32)

    def library(io: tuple) -> None:
        ndimage.correlate(io[0], io[1], output=io[2], mode="constant", cval=0.0)

    return kc.spec(
        fn,
        setup,
        library,
        "cupyx.scipy.ndimage.correlate",
        2 * 4.0 * h * w,
        atol=1e-5,  # a sharpened pixel can cancel to near 0: float32 sums in another order
        note=f"{h} x {w} float32 image, 3 x 3 sharpen: the image read once, out written once",
    )
