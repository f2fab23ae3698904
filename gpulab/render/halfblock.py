"""Images in any terminal: one character cell shows two pixels with the upper half block '▀'.

The cell's foreground colour is the upper pixel and its background the lower one, so a cell
(about twice as tall as it is wide) holds two square pixels. Needs only rich and Pillow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.style import Style
from rich.text import Text

UPPER_HALF = "\u2580"


def _as_rgb8(image: Any):
    """(H, W, 3) uint8 from a path, a PIL image or an array (uint8, or float in [0, 1])."""
    import numpy as np
    from PIL import Image

    if isinstance(image, str | Path):
        with Image.open(image) as im:
            return np.asarray(im.convert("RGB"))
    if isinstance(image, Image.Image):
        return np.asarray(image.convert("RGB"))
    arr = np.asarray(image)
    if arr.ndim == 2:
        arr = np.repeat(arr[..., None], 3, axis=2)
    if arr.ndim == 3 and arr.shape[0] in (1, 3) and arr.shape[2] not in (1, 3):
        arr = np.moveaxis(arr, 0, -1)  # planar (C, H, W)
    if arr.shape[2] == 1:
        arr = np.repeat(arr, 3, axis=2)
    arr = arr[..., :3]
    if arr.dtype != np.uint8:
        arr = (np.clip(arr.astype(np.float32), 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    return arr


def fit(height: int, width: int, columns: int, max_rows: int | None = None) -> tuple[int, int]:
    """(pixel width, pixel height) for `columns` cells keeping the aspect; height is even."""
    cols = max(1, min(columns, width))
    px_h = max(2, round(height * cols / width))
    if max_rows is not None and px_h > 2 * max_rows:
        px_h = 2 * max_rows
        cols = max(1, round(width * px_h / height))
    px_h += px_h % 2
    return cols, px_h


def render(image: Any, width: int = 80, max_rows: int | None = None) -> Text:
    """A rich Text of `width` columns (fewer if the image is narrower) showing `image`."""
    import numpy as np
    from PIL import Image

    rgb = _as_rgb8(image)
    cols, px_h = fit(rgb.shape[0], rgb.shape[1], width, max_rows)
    small = np.asarray(Image.fromarray(rgb).resize((cols, px_h), Image.Resampling.BOX))
    text = Text(no_wrap=True, overflow="crop")
    for y in range(0, px_h, 2):
        top, bottom = small[y], small[y + 1]
        for x in range(cols):
            r1, g1, b1 = (int(v) for v in top[x])
            r2, g2, b2 = (int(v) for v in bottom[x])
            text.append(
                UPPER_HALF, Style(color=f"rgb({r1},{g1},{b1})", bgcolor=f"rgb({r2},{g2},{b2})")
            )
        if y + 2 < px_h:
            text.append("\n")
    return text


def side_by_side(left: Any, right: Any, width: int = 80, gap: int = 2) -> Text:
    """Two images next to each other, each (width - gap) / 2 columns, as one Text."""
    half = max(1, (width - gap) // 2)
    a = render(left, half).split("\n")
    b = render(right, half).split("\n")
    out = Text(no_wrap=True, overflow="crop")
    a_width = max((line.cell_len for line in a), default=0)
    for i in range(max(len(a), len(b))):
        if i < len(a):
            out.append_text(a[i])
            out.append(" " * (a_width - a[i].cell_len))
        else:
            out.append(" " * a_width)
        out.append(" " * gap)
        if i < len(b):
            out.append_text(b[i])
        if i + 1 < max(len(a), len(b)):
            out.append("\n")
    return out


def load(image: Any):
    """The image as (H, W, 3) uint8, for callers that render it more than once."""
    return _as_rgb8(image)


def crop_centre(rgb: Any, columns: int, rows: int):
    """The centre `columns` x `2 * rows` pixels of `rgb`: shown at 1:1, one pixel per half cell."""
    h, w = rgb.shape[0], rgb.shape[1]
    cw, ch = min(w, max(1, columns)), min(h, max(2, 2 * rows))
    top, left = (h - ch) // 2, (w - cw) // 2
    return rgb[top : top + ch, left : left + cw]
