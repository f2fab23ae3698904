"""Half-block rendering: two pixels per cell, fg = upper, bg = lower."""

from __future__ import annotations

import numpy as np
from rich.console import Console

from gpulab.render.halfblock import UPPER_HALF, fit, render, side_by_side


def _styles(text):
    spans = []
    for span in text.spans:
        style = span.style
        spans.append((style.color.triplet, style.bgcolor.triplet))
    return spans


def test_each_cell_holds_an_upper_and_a_lower_pixel():
    img = np.zeros((2, 2, 3), dtype=np.uint8)
    img[0, 0] = (255, 0, 0)
    img[1, 0] = (0, 0, 255)
    img[0, 1] = (0, 255, 0)
    img[1, 1] = (10, 20, 30)
    text = render(img, width=2)
    assert text.plain == UPPER_HALF * 2
    (fg0, bg0), (fg1, bg1) = _styles(text)
    assert (tuple(fg0), tuple(bg0)) == ((255, 0, 0), (0, 0, 255))
    assert (tuple(fg1), tuple(bg1)) == ((0, 255, 0), (10, 20, 30))


def test_size_keeps_aspect_and_accepts_float_planar_arrays():
    planes = np.random.default_rng(0).random((3, 100, 200), dtype=np.float32)
    text = render(planes, width=40)
    lines = text.plain.split("\n")
    assert len(lines) == 10 and all(len(line) == 40 for line in lines)
    assert fit(1000, 100, 80, max_rows=10) == (2, 20)  # tall: capped rows, narrow


def test_path_input_and_side_by_side(tmp_path):
    from PIL import Image

    path = tmp_path / "a.png"
    Image.fromarray(np.full((20, 20, 3), 200, dtype=np.uint8)).save(path)
    text = side_by_side(path, path, width=22, gap=2)
    lines = text.plain.split("\n")
    assert len(lines) == 5 and all(
        line == UPPER_HALF * 10 + "  " + UPPER_HALF * 10 for line in lines
    )
    console = Console(force_terminal=True, color_system="truecolor", width=40, record=True)
    console.print(text)
    assert "48;2;200;200;200" in console.export_text(styles=True)
