"""Snapshots of the Exercises view: the list, and an exercise open with a verdict beside the code.

Frozen like tests/app/test_app_snapshots.py (a FakeRunner, a fake NVML): the verdict is a fixed
CheckResult handed to the verdict widget, the workspace a fixed folder name under the test's
own data dir, so nothing timed or random reaches the picture. Regenerate deliberately:
pytest tests/app/test_app_exercises_snapshots.py --snapshot-update
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_app_snapshots import frozen_app, settle

from gpulab.core import nvrtc
from gpulab.exercises.run_check import CaseRow, CheckResult

CATALOG = Path(__file__).resolve().parents[2] / "gpulab" / "exercises" / "catalog"
needs_nvrtc = pytest.mark.skipif(nvrtc.library() is None, reason="needs NVRTC (nvidia-cuda-nvrtc)")

TIMING = {
    "metric": "GB/s",
    "note": "n=5,592,405",
    "learner": {"median_s": 0.01, "min_s": 0.009, "runs": 15, "value": 6.7},
    "library": {"name": "torch.add", "median_s": 0.009, "min_s": 0.009, "runs": 15, "value": 7.4},
    "ceiling": {"name": "copy", "value": 9.8, "device": "CPU", "why": ""},
    "fraction": 6.7 / 9.8,
    "library_fraction": 7.4 / 9.8,
    "grades": {"bronze": 0.35, "silver": 0.6, "gold": 0.85},
    "yardstick": {"label": "reference", "file": "solution.py", "value": 9.0, "fraction": 9.0 / 9.8},
    "of_yardstick": {"figure": 0.744, "lo": 0.731, "hi": 0.752, "n": 15, "basis": "rounds"},
    "rounds": 15,
    "window": {"na": "CPU mode: no GPU to read", "throttled": False},
    "grade": "silver",
    "quick": False,
}


def passed() -> CheckResult:
    cases = [CaseRow(f"n={n}", True) for n in (1, 2, 31, 33, 1023, 1025)]
    return CheckResult(
        "vector-add", "pass", "every input set matches; 68% of the copy ceiling", 1234, "x.py",
        cases=[*cases, CaseRow("n=4,194,304 (large)", True)], timing=TIMING, grade="silver",
        seconds=0.42,
    )  # fmt: skip


def failed() -> CheckResult:
    cases = [CaseRow("n=1", True), CaseRow("n=2", True), CaseRow("n=31", True)]
    wrong = CaseRow("n=33 (not a multiple of the block size)", False, "first wrong at [32]",
                    index=32, expected=1.25, got=float("nan"), wrong=1)  # fmt: skip
    return CheckResult(
        "vector-add", "fail", "n=33: 1 of 33 elements wrong (first at [32])", 77, "x.py",
        kind="wrong", cases=[*cases, wrong], seconds=0.21,
    )  # fmt: skip


def setup(result: CheckResult | None):
    async def run_before(pilot) -> None:
        app = pilot.app
        await settle(pilot, lambda: app.handshake is not None and app.focused is not None)
        await pilot.press("x")
        pane = app.query_one("#exercises")
        await settle(pilot, lambda: pane.query_one("#ex-table").row_count > 0)
        if result is not None:
            app.open_exercise("vector-add")
            # the editor takes the focus after a refresh: let it, before the focus is cleared
            await settle(pilot, lambda: pane.current is not None and app.focused is pane.editor)
            pane.verdict.show_result(result)
        app.clear_notifications()
        app.set_focus(None)  # no blinking cursor in the picture
        await pilot.pause()

    return run_before


@pytest.fixture(autouse=True)
def _fixed_workspace(tmp_path, monkeypatch):
    monkeypatch.setenv("GPULAB_WORKDIR", str(tmp_path / "work"))


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_exercise_list(snap_compare, size):
    assert snap_compare(frozen_app(), terminal_size=size, run_before=setup(None))


@pytest.mark.parametrize(("size", "which"), [((80, 24), "fail"), ((120, 40), "pass")])
def test_exercise_open_with_a_verdict(snap_compare, size, which):
    result = passed() if which == "pass" else failed()
    assert snap_compare(frozen_app(), terminal_size=size, run_before=setup(result))


def explained(text: str):
    """The unpadded transpose open, f4 pressed: the card, the gutter marks on lines 17 and 23
    and line 23's sentence under the editor, scrolled to show both marked lines."""

    async def run_before(pilot) -> None:
        from gpulab.exercises.loader import load_catalog
        from gpulab.exercises.workspace import Workspace

        app = pilot.app
        path = Workspace().path(load_catalog().get("transpose-tiled"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        await settle(pilot, lambda: app.handshake is not None and app.focused is not None)
        await pilot.press("x")
        pane = app.query_one("#exercises")
        await settle(pilot, lambda: pane.query_one("#ex-table").row_count > 0)
        app.open_exercise("transpose-tiled")
        await settle(pilot, lambda: pane.current is not None and app.focused is pane.editor)
        await pilot.press("f4")
        await settle(pilot, lambda: bool(pane.editor.marks) and len(pane.card.lines) > 2)
        pane.editor.move_cursor((21, 0), center=True)
        pane.verdict.show_idle("Not checked yet.")  # the idle text names the test's own folder
        await pilot.pause(0.2)
        app.clear_notifications()
        app.set_focus(None)
        await pilot.pause()

    return run_before


@needs_nvrtc
@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_exercise_explained_marks_its_lines(snap_compare, size):
    text = (CATALOG / "30-transpose-tiled" / "slow" / "no-padding.py").read_text()
    assert snap_compare(frozen_app(), terminal_size=size, run_before=explained(text))
