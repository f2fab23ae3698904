"""The explain card in the exercise view, under Pilot with the fake runner (no worker, no GPU).

f4 (Explain) reads the learner's kernel in a thread and shows the compact card: the unpadded
tile's bank conflict first, every line inside the 80-column side; after a graded check of a
kernel exercise the card appears under the grade by itself, with the check's own figure; a
failed check gets no card; a file without a kernel says so.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_app import ready, wait_for

from gpulab.app.app import GpuLabApp
from gpulab.app.panes.exercises import ExercisesPane
from gpulab.core import events as ev
from gpulab.core import nvrtc
from gpulab.exercises.loader import load_catalog
from gpulab.exercises.workspace import Workspace
from gpulab.testing import fake_nvtools
from gpulab.testing.fake_runner import FakeRunner, frozen

pytestmark = pytest.mark.skipif(nvrtc.library() is None, reason="needs NVRTC (nvidia-cuda-nvrtc)")

CATALOG = Path(__file__).resolve().parents[2] / "gpulab" / "exercises" / "catalog"
NO_PADDING = CATALOG / "30-transpose-tiled" / "slow" / "no-padding.py"


def _graded(ex_id: str, path: str, passed: bool = True) -> dict:
    timing = {
        "metric": "GB/s",
        "learner": {"median_s": 0.001, "min_s": 0.001, "runs": 5, "cold_s": 0.002, "value": 900.0},
        "ceiling": {"name": "copy", "value": 3000.0, "device": "NVIDIA H100 80GB HBM3"},
        "fraction": 0.3,
        "grade": "bronze",
    }
    return {
        "exercise": ex_id,
        "verdict": "pass" if passed else "fail",
        "message": "all 7 input sets match" if passed else "out[3] = 0, expected 1",
        "seed": 7,
        "path": path,
        "kind": "" if passed else "wrong",
        "timing": timing if passed else None,
        "grade": "bronze" if passed else None,
    }


def _runner_with(result: dict):
    async def script(job, emit):
        emit(frozen(ev.ACCEPTED, job.id, experiment=job.experiment, params=job.params))
        emit(frozen(ev.RESULT, job.id, result={"summary": {"check": result}}))

    return lambda **kw: FakeRunner(script=script, **kw)


async def _open(pilot, name: str, text: str) -> ExercisesPane:
    ex_def = load_catalog().get(name)
    Workspace().path(ex_def).parent.mkdir(parents=True, exist_ok=True)
    Workspace().path(ex_def).write_text(text)
    await ready(pilot)
    await pilot.press("x")
    pane = pilot.app.query_one("#exercises", ExercisesPane)
    assert pane.open_exercise(name)
    await wait_for(pilot, lambda: pilot.app.focused is pane.editor, 5, "the editor")
    return pane


async def test_f4_shows_the_static_card_that_fits_80x24():
    app = GpuLabApp(watch_terminal=False, runner_factory=lambda **kw: FakeRunner(**kw))
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _open(pilot, "transpose-tiled", NO_PADDING.read_text())
        await pilot.press("f4")
        await wait_for(pilot, lambda: len(pane.card.lines) > 2, 30, "the card")
        lines = pane.card.lines
        assert lines[0].startswith("Why this speed (static")
        findings = [ln for ln in lines[1:] if ln[:2] in ("!!", "! ", "? ")]
        assert findings and "banks" in findings[0] and "32-way" in findings[0], lines
        assert all(len(ln) <= 78 for ln in lines), lines  # the side column at 80 columns
        assert len(lines) <= 7
        assert pane.card.display and pane.explanation is not None and pane.explanation.tier == 0


async def test_f4_marks_the_lines_and_an_edit_clears_them():
    app = GpuLabApp(watch_terminal=False, runner_factory=lambda **kw: FakeRunner(**kw))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _open(pilot, "transpose-tiled", NO_PADDING.read_text())
        await pilot.press("f4")
        await wait_for(pilot, lambda: bool(pane.editor.marks), 30, "the gutter marks")
        text = NO_PADDING.read_text().splitlines()
        worst = max(pane.editor.marks, key=lambda row: pane.editor.marks[row])
        assert pane.editor.marks[worst] == 3 and "tile[tx][j]" in text[worst]
        sentence = pane.query_one("#ex-line")
        assert sentence.has_class("-shown")
        assert str(sentence.render()).startswith(f"line {worst + 1}: ")
        pane.editor.insert(" ")
        await wait_for(pilot, lambda: not pane.editor.marks, 5, "the marks cleared")
        assert not sentence.has_class("-shown")


async def test_a_file_without_a_kernel_says_so():
    app = GpuLabApp(watch_terminal=False, runner_factory=lambda **kw: FakeRunner(**kw))
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _open(pilot, "transpose-tiled", "def transpose(a, out):\n    out[...] = a.T\n")
        await pilot.press("f4")
        await wait_for(
            pilot,
            lambda: len(pane.card.lines) == 2 and "no Raw" in pane.card.lines[1],
            30,
            "the card",
        )


async def test_a_graded_kernel_check_gets_the_card_under_its_grade():
    ex_def = load_catalog().get("transpose-tiled")
    path = str(Workspace().path(ex_def))
    app = GpuLabApp(watch_terminal=False, runner_factory=_runner_with(_graded(ex_def.id, path)))
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _open(pilot, "transpose-tiled", NO_PADDING.read_text())
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: len(pane.card.lines) > 2, 30, "the card after the check")
        assert "bronze" in str(pane.verdict.render())
        text = "\n".join(pane.card.lines)
        assert "banks" in text and "[s]" in text, text
        assert all(len(ln) <= 78 for ln in pane.card.lines)
        # the card sits under the verdict in the side column
        assert pane.card.region.y >= pane.verdict.region.y + pane.verdict.region.height


async def test_a_graded_check_is_placed_on_the_ladder_measured_here():
    from gpulab.exercises import ladder

    ex_def = load_catalog().get("matmul-tiled")
    path = str(Workspace().path(ex_def))
    graded = _graded(ex_def.id, path)
    graded["timing"] |= {
        "metric": "TFLOP/s",
        "yardstick": {"label": "expert", "file": "expert.py", "value": 40.0},
        "of_yardstick": {"figure": 0.11, "lo": 0.1, "hi": 0.12, "n": 15, "basis": "rounds"},
    }
    app = GpuLabApp(watch_terminal=False, runner_factory=_runner_with(graded))
    async with app.run_test(size=(120, 40)) as pilot:
        rung3 = CATALOG / "31-matmul-tiled" / "ladder" / "03-shared-tiles.py"
        pane = await _open(pilot, "matmul-tiled", rung3.read_text())
        shares = [0.01, 0.05, 0.1, 0.25, 0.55, 0.75, 1.0]
        rungs = ladder.rungs(ex_def)
        measured = {
            r.name: {"value": 40.0 * f, "of_top": f} for r, f in zip(rungs, shares, strict=True)
        }
        ladder.observe(ex_def, pane._yardstick_key(), measured, metric="TFLOP/s")
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: bool(pane.ladder_note), 30, "the ladder's sentence")
        assert pane.ladder_note.startswith("You are on rung 3, shared tiles; rung 4 ran 2.3x")
        hints = str(pane.query_one("#ex-hints").render())
        assert "Ladder: You are on rung 3" in hints and rungs[3].idea[:40] in hints


async def test_a_failed_check_gets_no_card():
    ex_def = load_catalog().get("transpose-tiled")
    path = str(Workspace().path(ex_def))
    app = GpuLabApp(
        watch_terminal=False, runner_factory=_runner_with(_graded(ex_def.id, path, passed=False))
    )
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _open(pilot, "transpose-tiled", NO_PADDING.read_text())
        await pilot.press("ctrl+r")
        await wait_for(
            pilot,
            lambda: not pane.checking and "FAIL" in str(pane.verdict.render()),
            30,
            "the verdict",
        )
        await pilot.pause(0.5)
        assert pane.card.lines == [] and not pane.card.has_class("-shown")


FIX = Path(__file__).resolve().parents[1] / "fixtures" / "explain"


async def test_f4_again_measures_with_nsight_compute(monkeypatch, tmp_path):
    """The second f4 runs one ncu pass (a fake one replaying the H100's recording of this very
    kernel) from a thread: the card turns measured, the bank conflict still on top."""
    fake_nvtools.install(monkeypatch, tmp_path, f"replay:{FIX / 'ncu' / 'transpose-naive'}")
    app = GpuLabApp(watch_terminal=False, runner_factory=lambda **kw: FakeRunner(**kw))
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _open(pilot, "transpose-tiled", NO_PADDING.read_text())
        await pilot.press("f4")
        await wait_for(pilot, lambda: len(pane.card.lines) > 2, 30, "the static card")
        await pilot.press("f4")
        await wait_for(pilot, lambda: "Nsight Compute" in pane.card.lines[0], 5, "the progress")
        await wait_for(pilot, lambda: "measured by" in pane.card.lines[0], 30, "the measured card")
        lines = pane.card.lines
        assert "banks" in lines[1] and lines[1].endswith("[m]"), lines
        assert any(ln.startswith("ncu report: ") for ln in lines)
        assert all(len(ln) <= 78 for ln in lines) and not pane.profiling


async def test_escape_cancels_the_nsight_compute_pass(monkeypatch, tmp_path):
    fake_nvtools.install(monkeypatch, tmp_path, "hang")
    app = GpuLabApp(watch_terminal=False, runner_factory=lambda **kw: FakeRunner(**kw))
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _open(pilot, "transpose-tiled", NO_PADDING.read_text())
        await pilot.press("f4")
        await wait_for(pilot, lambda: len(pane.card.lines) > 2, 30, "the static card")
        await pilot.press("f4")
        await wait_for(pilot, lambda: pane.profiling, 5, "the pass to start")
        await pilot.pause(0.5)
        await pilot.press("escape", "escape")  # out of the editor, then cancel the pass
        await wait_for(pilot, lambda: not pane.profiling, 10, "the cancel")
        await wait_for(pilot, lambda: "cancelled" in pane.card.lines[-1], 5, "the card")
        assert pane.current is not None  # escape cancelled the pass, it did not leave the exercise
