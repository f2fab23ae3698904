"""Blur's images: the built-in and synthetic test cards, loading a file, and the display form.

The image parameter's checks live here too: they run wherever params are validated (the CLI,
the form, the runner), before anything is loaded. Kept apart from the filters and the run:
reading and drawing pictures is its own job (PIL, decoding errors, the edge filter's scaling).
"""

from __future__ import annotations

from pathlib import Path

from gpulab.core.files import image_problem
from gpulab.experiments.base import ExperimentError

IMAGES_DIR = Path(__file__).with_name("images")
BUILTIN = {"testcard": IMAGES_DIR / "testcard.png"}
SYNTHETIC_DEFAULT = (3840, 2160)


def check_image(spec: str) -> str | None:
    """The image parameter's check, made wherever params are validated (CLI, form, runner):
    a built-in name, or a file that exists, can be read and has a decodable header."""
    if spec in ("synthetic", *BUILTIN):
        return None

    return image_problem(spec)


def check_side(value: int) -> str | None:
    """width and height: 0 (the image's own) or 16 pixels at least."""
    return "is too small (16 at least, or 0 for the image's own)" if 0 < value < 16 else None


def synthetic_image(width: int, height: int):
    """A procedural test card (H, W, 3) float32 in [0, 1]: bars, rings, a checkerboard, lines."""
    import numpy as np

    u = (np.arange(width, dtype=np.float32) + 0.5) / width
    v = (np.arange(height, dtype=np.float32) + 0.5) / height
    uu, vv = u[None, :], v[:, None]
    img = np.empty((height, width, 3), dtype=np.float32)
    img[..., 0] = uu * (1 - 0.5 * vv)
    img[..., 1] = vv * (0.8 + 0.2 * uu)
    img[..., 2] = 1 - 0.7 * uu
    bars = np.array(
        [[1, 1, 1], [1, 1, 0], [0, 1, 1], [0, 1, 0], [1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 0, 0]],
        dtype=np.float32,
    )
    top = int(height * 0.3)
    idx = np.minimum((u * len(bars)).astype(int), len(bars) - 1)
    img[:top] = bars[idx][None, :, :]
    # Rings on the right: fine detail a blur smooths out and an edge filter lights up.
    cy, cx = 0.65 * height, 0.72 * width
    yy, xx = np.ogrid[top:height, 0:width]
    rr = np.sqrt((yy - cy) ** 2 + (xx - cx) ** 2, dtype=np.float32) / min(width, height)
    rings = (np.sin(rr * 90.0) > 0).astype(np.float32)
    mask = rr < 0.3
    for c, tint in enumerate((1.0, 0.85, 0.3)):
        plane = img[top:, :, c]
        plane[mask] = rings[mask] * tint
    # A checkerboard bottom-left and a grid of one-pixel lines.
    cell = max(2, height // 27)
    checker = (((yy // cell) + (xx // cell)) % 2).astype(np.float32)
    region = (xx < width * 0.35) & (yy > height * 0.55)
    for c in range(3):
        plane = img[top:, :, c]
        plane[region] = checker[region]
    step = max(8, width // 32)
    img[:, ::step] = 1.0
    img[top::step, :] = 1.0
    return img


def load_image(spec: str, width: int, height: int):
    """(H, W, 3) float32 in [0, 1] from 'synthetic', a built-in name or a PNG/JPEG path."""
    import numpy as np

    if spec == "synthetic":
        w = width or SYNTHETIC_DEFAULT[0]
        h = height or SYNTHETIC_DEFAULT[1]
        return synthetic_image(w, h)
    from PIL import Image, UnidentifiedImageError

    path = BUILTIN.get(spec, Path(spec).expanduser())
    if not path.exists():
        raise ExperimentError(
            f"image '{spec}' not found (use 'synthetic', 'testcard' or a PNG/JPEG path)"
        )
    try:
        with Image.open(path) as im:
            im = im.convert("RGB")
            if width or height:
                im = im.resize((width or im.width, height or im.height), Image.Resampling.BICUBIC)
            arr = np.asarray(im, dtype=np.float32) / 255.0
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise ExperimentError(f"image '{spec}' could not be read: {exc}") from None
    if arr.shape[0] < 8 or arr.shape[1] < 8:
        raise ExperimentError(f"image '{spec}' is {arr.shape[1]}x{arr.shape[0]}: too small")
    return np.ascontiguousarray(arr)


def to_display(planes, kind: str):
    """(3, H, W) float -> (H, W, 3) uint8 for PNG and the terminal."""
    import numpy as np

    img: np.ndarray = np.moveaxis(np.asarray(planes, dtype=np.float32), 0, -1)
    if kind == "edge":
        mag = np.abs(img)
        scale = float(np.percentile(mag, 99.5)) or 1.0
        img = mag / scale
    return (np.clip(img, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
