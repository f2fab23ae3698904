"""Check for conv2d: a 2-D convolution (blur, sharpen, edge) as a CuPy RawKernel.

The filter is applied as a correlation, like torch's conv2d and cupyx.scipy.ndimage.correlate:
out[r, c] = sum over i, j of k[i, j] * image[r + i - K//2, c + j - K//2], zero outside the image.
Several kernels are not symmetric (Sobel, a random 5 x 5), so a flipped kernel fails.

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

ENTRY = "conv2d"
OWN_KERNEL = True  # the work must be done by a kernel the learner's file compiles

EPS32 = 2.0**-24
GUARD = 64 * 1024

BOX = np.full((3, 3), 1.0 / 9.0)
SHARPEN = np.array([[0.0, -1.0, 0.0], [-1.0, 5.0, -1.0], [0.0, -1.0, 0.0]])
SOBEL_X = np.array([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]])
LAPLACE = np.array([[1.0, 1.0, 1.0], [1.0, -8.0, 1.0], [1.0, 1.0, 1.0]])
_G = np.array([1.0, 4.0, 6.0, 4.0, 1.0])
GAUSS5 = np.outer(_G, _G) / 256.0

# (height, width, filter name): tiny, odd, around a warp, wider than tall and taller than wide.
PLAN = (
    (1, 1, "sharpen"),
    (2, 3, "sobel-x"),
    (3, 2, "random-5x5"),
    (31, 33, "sobel-x"),
    (33, 31, "gauss-5x5"),
    (64, 1023, "laplace"),
    (1025, 67, "random-5x5"),
    (257, 255, "box-blur"),
)


def _filter(name: str, rng: np.random.Generator) -> np.ndarray:
    if name == "random-5x5":
        return rng.uniform(-1.0, 1.0, (5, 5))
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
    import cupy as cp

    h, w = case.args["image"].shape
    n = h * w
    with cp.cuda.Device(ctx.device_index):
        image = cp.asarray(case.args["image"])
        kernel = cp.asarray(case.args["kernel"])
        buf = api.poison(n + GUARD, np.float32, xp=cp)
        out = buf[:n].reshape(h, w)
        fn(image, kernel, out)
        cp.cuda.Device().synchronize()  # a launch error or a bad address surfaces here
        tail = cp.isnan(buf[n:])
        if not bool(tail.all()):
            past = int(cp.argmax(~tail))
            raise api.CheckError(
                f"the kernel wrote past the end of out (at flat index {n + past}; out is "
                f"{h} x {w}, {n} elements): check both the row and the column against the bounds"
            )
        same = cp.array_equal(image, cp.asarray(case.args["image"])) and cp.array_equal(
            kernel, cp.asarray(case.args["kernel"])
        )
        if not bool(same):
            raise api.CheckError("conv2d changed its image or kernel: write only into out")
        return cp.asnumpy(out)


def compare(want: dict, got: np.ndarray, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    return api.compare_arrays(want["out"], got, dtype=np.float32, atol=want["atol"])


def timing(fn: Any, ctx: api.Context) -> api.TimingSpec:
    import cupy as cp
    from cupyx.scipy import ndimage

    h, w = big_shape(ctx)
    kernel = SHARPEN.astype(np.float32)

    def setup(i: int) -> Any:
        with cp.cuda.Device(ctx.device_index):
            g = cp.random.default_rng(ctx.seed + i)
            image = g.random((h, w), dtype=cp.float32) + 0.5
            return image, cp.asarray(kernel), cp.full((h, w), cp.nan, dtype=cp.float32)

    def verify(inputs: Any) -> str | None:
        image, k, out = inputs
        want = ndimage.correlate(image, k, mode="constant", cval=0.0)
        if not bool(cp.allclose(out, want, rtol=1e-5, atol=1e-5)):
            return "out does not hold the filtered image after the timed calls"
        return None

    return api.TimingSpec(
        setup=setup,
        learner=lambda s: fn(*s),
        library=lambda s: ndimage.correlate(s[0], s[1], output=s[2], mode="constant", cval=0.0),
        library_name="cupyx.scipy.ndimage.correlate",
        work=2 * 4.0 * h * w,
        metric="GB/s",
        ceiling="copy",
        sync="cupy",
        note=f"{h} x {w} float32 image, 3 x 3 sharpen: the image read once, out written once",
        verify=verify,
    )
