"""A result's images (the blur's before and after), scaled to the width the pane has.

Scaled down, a blur of a few pixels averages away and before/after look the same; so when one
cell stands for more than two pixels, a 1:1 crop of the centre of both images follows.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text
from textual.widget import Widget

from gpulab.render import halfblock

CROP_WHEN_SCALE_OVER = 2.0  # pixels per cell beyond which a few-pixel blur is not visible
CROP_ROWS = 8


class ImageView(Widget):
    """A run's images in half-block characters, two side by side, scaled to the width (with a
    1:1 centre crop when scaled far down), and their notes."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.images: list[tuple[str, Any]] = []  # (name, rgb array)
        self.notes: list[Text] = []
        self._built: tuple[int, Group] | None = None
        self._artifacts: list[dict[str, Any]] | None = None

    def show(self, artifacts: list[dict[str, Any]]) -> None:
        """Decode `artifacts`' images (once per new list) and redraw."""
        if artifacts == self._artifacts:
            return  # every flush of a finished run calls this: decode the images once
        self._artifacts = list(artifacts)
        self.images, self.notes = [], []
        for art in artifacts:
            if art.get("kind") == "image" and art.get("path"):
                try:
                    self.images.append((str(art.get("name", "image")), halfblock.load(art["path"])))
                except Exception as exc:  # noqa: BLE001 - a bad image is shown, not raised
                    self.notes.append(Text(f"(cannot show {art['path']}: {exc})"))
            elif art.get("text"):
                self.notes.append(Text(str(art.get("name", "")), style="bold"))
                self.notes.append(Text(str(art["text"])))
        self._built = None
        self.display = bool(self.images or self.notes)
        self.refresh(layout=True)

    def build(self, width: int) -> Group:
        """The images and notes laid out for `width` columns (cached per width)."""
        if self._built is not None and self._built[0] == width:
            return self._built[1]
        parts: list[Any] = []
        pairs = [self.images[i : i + 2] for i in range(0, len(self.images), 2)]
        for pair in pairs:
            names = " | ".join(name for name, _ in pair)
            each = max(8, (width - 2 * (len(pair) - 1)) // len(pair))
            scale = max(rgb.shape[1] for _, rgb in pair) / each
            parts.append(Text(f"{names}  (one cell = {scale:.1f} px)", style="bold", no_wrap=True))
            rows = self._max_rows()
            parts.append(self._row([halfblock.render(rgb, each, rows) for _, rgb in pair]))
            if scale > CROP_WHEN_SCALE_OVER:
                parts.append(
                    Text(
                        "Centre at 1:1 (scaled down, a few-pixel blur averages away):",
                        style="bold",
                        no_wrap=True,
                        overflow="ellipsis",
                    )
                )
                crops = [halfblock.crop_centre(rgb, each, CROP_ROWS) for _, rgb in pair]
                parts.append(self._row([halfblock.render(c, each) for c in crops]))
        parts += self.notes
        group = Group(*parts)
        self._built = (width, group)
        return group

    def _max_rows(self) -> int:
        """The scaled pair leaves room for its crop and the headline: about a third of the
        screen's height each."""
        height = self.app.size.height if self.is_attached else 40
        return max(6, (height - 16) // 2)

    @staticmethod
    def _row(texts: list[Text]) -> Text:
        if len(texts) == 1:
            return texts[0]
        left, right = texts[0].split("\n"), texts[1].split("\n")
        out = Text(no_wrap=True, overflow="crop")
        w = max((line.cell_len for line in left), default=0)
        for i in range(max(len(left), len(right))):
            if i:
                out.append("\n")
            line = left[i] if i < len(left) else Text("")
            out.append_text(line)
            out.append(" " * (w - line.cell_len + 2))
            if i < len(right):
                out.append_text(right[i])
        return out

    def get_content_height(self, container: Any, viewport: Any, width: int) -> int:
        """The rows the images and notes take at `width`."""
        if not (self.images or self.notes):
            return 0
        return sum(
            len(p.split("\n")) if isinstance(p, Text) else 1 for p in self.build(width).renderables
        )

    def render(self) -> Any:
        """The laid-out images, or nothing when the run has none."""
        if not (self.images or self.notes):
            return ""
        return self.build(self.content_size.width or 80)
