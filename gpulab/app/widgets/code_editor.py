"""The exercise editor: a code editor on the learner's workspace file that never loses typing.

- Saves continuously: a change is written once typing pauses for SAVE_IDLE_S, and at the latest
  SAVE_MAX_S after the first unsaved change, so a crash or a dropped SSH connection loses at
  most about a second. Every save is atomic (a temporary file, fsync, rename): the grader or an
  editor in another pane never reads half a file.
- Picks up an edit made outside (vim in another tmux pane): the file is polled every POLL_S
  (its mtime first, then its SHA-256, so a touch without a change is no edit) and, when the
  editor holds nothing unsaved, the new text replaces the editor's as one undoable edit.
- A conflict (the file changed outside while the editor holds unsaved typing) throws nothing
  away: the editor's version is kept in the workspace's `.backups/` folder, the file's version
  is loaded, and the learner is told where the other one is.

The lines explain found something on carry a mark in the gutter (`marks`, set by the pane from
the card's explanation: red a likely cause, yellow worth fixing, cyan worth trying).

The highlighting is Python's (tree-sitter); without tree-sitter installed the editor still works,
uncoloured. The CUDA C inside CuPy kernel strings (RawKernel, ElementwiseKernel, ...) is coloured
as CUDA (tree-sitter-cuda, gpulab.app.widgets.cuda_highlight); without that grammar those strings
are string-coloured.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual.reactive import var
from textual.strip import Strip
from textual.widgets import TextArea

from gpulab.app.widgets.cuda_highlight import CudaHighlighter, cuda_grammar
from gpulab.exercises.workspace import Stamp, WorkspaceError, stamp

SAVE_IDLE_S = 0.3  # a pause in typing this long saves
SAVE_MAX_S = 0.8  # and unsaved typing never waits longer than this
TICK_S = 0.2
POLL_S = 1.0
# A gutter mark by severity (gpulab.explain.findings): the glyph and its colour.
GUTTER_MARK = {3: ("●", Style(color="red", bold=True)), 2: ("●", Style(color="yellow")),
               1: ("•", Style(color="cyan"))}  # fmt: skip


def python_language() -> str | None:
    """ "python" when tree-sitter can highlight it here, else None (plain text)."""
    try:
        probe = TextArea()
        return "python" if "python" in probe.available_languages else None
    except Exception:  # noqa: BLE001 - highlighting is a nicety, never a failure
        return None


class ExerciseEditor(TextArea):
    """`ExerciseEditor.code_editor(...)`, then `attach(workspace, exercise)` to open a file."""

    marks: var[dict[int, int]] = var(dict)  # document row (0-based) -> severity 1..3

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        grammar = cuda_grammar()
        # Before TextArea's __init__, which builds the first highlight map.
        self.cuda = CudaHighlighter(*grammar) if grammar is not None else None
        super().__init__(*args, **kwargs)
        self.workspace: Any = None
        self.exercise: Any = None
        self.saved_text = ""  # what the file holds, as far as this editor knows
        self.disk: Stamp | None = None
        self._first_unsaved = 0.0
        self._last_change = 0.0
        self._last_poll = 0.0
        self.saves = 0
        self.problem = ""  # the last write error, shown once

    def on_mount(self) -> None:
        """Start the save timer."""
        self.set_interval(TICK_S, self._tick)

    def _build_highlight_map(self) -> None:
        """Textual 8.2.8's private TextArea hook, run after every load, edit, undo and redo: it
        fills `self._highlights` (row -> [(start byte, end byte or None, name)]) from the Python
        tree. There is no public way to colour a part of a document in another language, so the
        CUDA colours are laid over that map right after it is built
        (tests/app/test_app_exercise_editor.py fails if a Textual update moves the hook)."""
        super()._build_highlight_map()
        if self.cuda is None or self.language != "python":
            return
        try:
            self.cuda.overlay(self.document, self._highlights)
        except Exception:  # noqa: BLE001 - colours are a nicety: keep Python's, stop trying
            self.cuda = None
            super()._build_highlight_map()

    def watch_marks(self) -> None:
        self.refresh()

    def render_line(self, y: int) -> Strip:
        """TextArea's line, with a mark in the gutter's margin on a marked row (rows are whole
        lines here: the code editor does not soft-wrap)."""
        strip = super().render_line(y)
        if not self.marks or not self.show_line_numbers or self.soft_wrap:
            return strip
        mark = GUTTER_MARK.get(self.marks.get(self.scroll_offset.y + y, 0))
        at = self.gutter_width - 2  # the first cell after the line number
        if mark is None or at < 1 or strip.cell_length <= at:
            return strip
        glyph, style = mark
        cell = Strip([Segment(glyph, style)], 1)
        return Strip.join([strip.crop(0, at), cell, strip.crop(at + 1, strip.cell_length)])

    @property
    def path(self) -> Path | None:
        """The learner's file of the open exercise, or None."""
        return self.workspace.path(self.exercise) if self.exercise is not None else None

    @property
    def dirty(self) -> bool:
        """Whether the text differs from what was last saved."""
        return self.exercise is not None and self.text != self.saved_text

    def attach(self, workspace: Any, exercise: Any) -> None:
        """Open the learner's file for `exercise` (created from the starter if missing)."""
        if self.exercise is not None:
            self.flush()
        path = workspace.ensure(exercise)
        self.workspace, self.exercise = workspace, exercise
        text = path.read_text(encoding="utf-8")
        self.saved_text = text
        self.disk = stamp(path)
        self.load_text(text)
        # Where the work is: the starter's first TODO (the top of the file when there is none).
        todo = next((i for i, line in enumerate(text.splitlines()) if "TODO" in line), 0)
        self.scroll_home(animate=False)
        self.move_cursor((todo, 0), center=True)

    def detach(self) -> None:
        """Save, then let go of the exercise."""
        self.flush()
        self.exercise = None

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        """Note the edit's time; the timer saves after a pause in typing."""
        now = time.monotonic()
        if self.dirty and not self._first_unsaved:
            self._first_unsaved = now
        self._last_change = now

    def _tick(self) -> None:
        if self.exercise is None:
            return
        now = time.monotonic()
        if self.dirty and (
            now - self._last_change >= SAVE_IDLE_S or now - self._first_unsaved >= SAVE_MAX_S
        ):
            self.flush()
        if now - self._last_poll >= POLL_S:
            self._last_poll = now
            self.poll()

    # ---- the file -------------------------------------------------------------------------
    def _changed_outside(self) -> tuple[bool, Stamp | None]:
        path = self.path
        if path is None:
            return False, None
        try:
            mtime = path.stat().st_mtime_ns
        except OSError:
            return False, None  # deleted: the next save writes the editor's text back
        if self.disk is not None and mtime == self.disk.mtime_ns:
            return False, self.disk
        now = stamp(path)
        if now is None:
            return False, None
        if self.disk is not None and now.sha256 == self.disk.sha256:
            self.disk = now  # touched, not changed
            return False, now
        return True, now

    def flush(self) -> bool:
        """Write unsaved text now (before a check, on leaving). False when it could not."""
        if not self.dirty:
            return True
        outside, _ = self._changed_outside()
        if outside:
            self._conflict()
            return True
        text = self.text
        try:
            self.disk = self.workspace.write(self.exercise, text)
        except WorkspaceError as exc:
            if str(exc) != self.problem:  # say it once, not twice a second
                self.problem = str(exc)
                self.app.notify(
                    f"{exc}. Your text is still in the editor.",
                    title="Not saved",
                    severity="error",
                    timeout=10,
                )
            return False
        self.problem = ""
        self.saved_text = text
        self._first_unsaved = 0.0
        self.saves += 1
        return True

    def poll(self) -> None:
        """Take in an edit made outside gpulab, or keep both versions when it conflicts."""
        outside, _ = self._changed_outside()
        if not outside:
            return
        if self.dirty:
            self._conflict()
            return
        self._load_from_disk()
        self.app.notify(
            f"Picked up the change made to {self.path} outside gpulab (ctrl+z undoes it here).",
            title="File changed",
            timeout=6,
        )

    def _load_from_disk(self) -> None:
        path = self.path
        assert path is not None
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.app.notify(f"cannot read {path}: {exc}", severity="error")
            return
        self.disk = stamp(path)
        row, col = self.cursor_location
        # One undoable edit, not load_text: ctrl+z brings the editor's text back.
        self.replace(text, (0, 0), self.document.end, maintain_selection_offset=False)
        last = self.document.line_count - 1
        row = min(row, last)
        self.move_cursor((row, min(col, len(self.document.get_line(row)))))
        self.saved_text = text
        self._first_unsaved = 0.0

    def _conflict(self) -> None:
        """The file and the editor both changed: keep the editor's version aside, load the
        file's, and say where the other one is."""
        try:
            aside = self.workspace.keep_aside(self.exercise, self.text, "editor")
        except WorkspaceError as exc:
            # Nowhere to keep it: the editor's text stays, and the file is left alone.
            self.app.notify(f"{exc}; the editor keeps its version", severity="error")
            return
        self._load_from_disk()
        self.app.notify(
            f"{self.path} changed outside gpulab while you were typing here. The editor now "
            f"shows the file; your version is kept in {aside} (ctrl+z also brings it back).",
            title="Both versions kept",
            severity="warning",
            timeout=20,
        )

    def on_unmount(self) -> None:
        """Save what is unsaved."""
        if self.exercise is not None:
            self.flush()
