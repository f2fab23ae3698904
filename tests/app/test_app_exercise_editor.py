"""The exercise editor alone (no worker): it saves as you type, takes in an edit made outside,
and a conflict keeps both versions. And the verdict's words and bars."""

from __future__ import annotations

import os
import time

from test_app import wait_for
from textual.app import App, ComposeResult

from gpulab.app.app import WIDGETS_CSS
from gpulab.app.widgets.code_editor import SAVE_MAX_S, ExerciseEditor
from gpulab.app.widgets.verdict import bar, grade_ruler, verdict_text
from gpulab.exercises.loader import load_catalog
from gpulab.exercises.run_check import CaseRow, CheckResult
from gpulab.exercises.workspace import Workspace


class EditorApp(App[None]):
    CSS_PATH = WIDGETS_CSS  # the lab's rules for its own widgets

    def __init__(self, ws: Workspace) -> None:
        super().__init__()
        self.ws = ws
        self.ex = load_catalog().get("vector-add")

    def compose(self) -> ComposeResult:
        yield ExerciseEditor.code_editor("", id="ed")

    def on_mount(self) -> None:
        self.query_one(ExerciseEditor).attach(self.ws, self.ex)


def touch_later(path, text: str) -> None:
    """Write as another editor would, with an mtime that surely differs from ours."""
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))


async def test_typing_is_saved_within_a_second_without_a_save_key(tmp_path):
    ws = Workspace(tmp_path / "work")
    app = EditorApp(ws)
    async with app.run_test() as pilot:
        ed = app.query_one(ExerciseEditor)
        path = ws.path(app.ex)
        assert path.read_text() == ed.text  # created from the starter
        ed.focus()
        ed.move_cursor((0, 0))
        t0 = time.monotonic()
        await pilot.press("#", "space", "h", "i", "enter")
        await wait_for(pilot, lambda: path.read_text().startswith("# hi\n"), 3, "the save")
        assert time.monotonic() - t0 <= SAVE_MAX_S + 0.7  # a timer tick of slack, on a busy box
        assert not ed.dirty and not list(path.parent.glob(".*.tmp"))  # atomic: no leftovers
        assert not ws.edited_outside(app.ex)  # the workspace knows this save was gpulab's


async def test_an_edit_made_outside_is_picked_up(tmp_path):
    ws = Workspace(tmp_path / "work")
    app = EditorApp(ws)
    async with app.run_test() as pilot:
        ed = app.query_one(ExerciseEditor)
        path = ws.path(app.ex)
        touch_later(path, "# from vim\n" + path.read_text())
        await wait_for(pilot, lambda: ed.text.startswith("# from vim"), 3, "the pick-up")
        assert any("outside gpulab" in n.message for n in app._notifications)
        ed.undo()  # the pick-up was one undoable edit
        assert not ed.text.startswith("# from vim")


async def test_a_conflict_keeps_both_versions(tmp_path):
    ws = Workspace(tmp_path / "work")
    app = EditorApp(ws)
    async with app.run_test() as pilot:
        ed = app.query_one(ExerciseEditor)
        path = ws.path(app.ex)
        ed.insert("# typed in gpulab\n", (0, 0))  # unsaved, and then the file changes outside
        touch_later(path, "# typed in vim\n")
        ed.flush()
        assert ed.text == "# typed in vim\n" and path.read_text() == "# typed in vim\n"
        kept = [p.read_text() for p in (tmp_path / "work" / ".backups").glob("*.editor.*.py")]
        assert len(kept) == 1 and kept[0].startswith("# typed in gpulab")
        await pilot.pause()
        assert any(n.title == "Both versions kept" for n in app._notifications)


async def test_a_deleted_file_is_written_back_from_the_editor(tmp_path):
    ws = Workspace(tmp_path / "work")
    app = EditorApp(ws)
    async with app.run_test():
        ed = app.query_one(ExerciseEditor)
        path = ws.path(app.ex)
        path.unlink()
        ed.insert("# still here\n", (0, 0))
        assert ed.flush() and path.read_text().startswith("# still here")


def test_verdict_names_the_wrong_set_and_draws_the_bars():
    wrong = CaseRow("n=33", False, index=32, expected=1.5, got=float("nan"), wrong=1)
    result = CheckResult("vector-add", "fail", "n=33 is wrong", 5, "x.py", kind="wrong",
                         cases=[CaseRow("n=1", True), wrong])  # fmt: skip
    text = verdict_text(result).plain
    assert "FAIL" in text and "✗ n=33" in text and "first wrong at [32]" in text
    assert "expected 1.5" in text and "got nan" in text and "✓ n=1" in text
    timing = {
        "metric": "GB/s",
        "learner": {"value": 5.0, "runs": 3},
        "library": {"name": "torch.add", "value": 8.0},
        "ceiling": {"name": "copy", "value": 10.0},
        "fraction": 0.5,
        "library_fraction": 0.8,
        "grades": {"bronze": 0.4, "silver": 0.6, "gold": 0.8},
    }
    ok = CheckResult("vector-add", "pass", "ok", 5, "x.py", timing=timing, grade="bronze")
    text = verdict_text(ok).plain
    assert "PASS" in text and "grade bronze" in text and "copy ceiling 10.0 GB/s" in text
    assert "█" * 10 + "░" * 10 in text and "50%" in text and "80%" in text
    assert bar(1.7) == "█" * 20 and bar(None) == "·" * 20
    assert grade_ruler({"bronze": 0.4, "silver": 0.6, "gold": 0.8}).strip() == "b   s   g"
