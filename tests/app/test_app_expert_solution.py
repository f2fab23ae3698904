"""The TUI's solution window (f9) with an expert solution: closed below gold with a line that
says what opens it, and `e` switching between the reference and the expert's once at gold."""

from __future__ import annotations

from test_app import ready, wait_for
from test_app_exercises import fake_app, pane
from textual.widgets import Static, TextArea

from gpulab.app.screens.exercise_dialogs import SolutionScreen
from gpulab.exercises.loader import load_catalog
from gpulab.exercises.progress import Progress


async def _open_solution(pilot, ex_id: str, grade: str | None) -> SolutionScreen:
    app = pilot.app
    await ready(pilot)
    await pilot.press("x")
    view = pane(app)
    if grade is not None:
        Progress(view.store).record(ex_id, "pass", seed=1, grade=grade, fraction=0.5)
    # a kernel exercise cannot be opened on this CPU machine: make it the current one directly
    view.current = load_catalog().get(ex_id)
    view.action_solution()
    await wait_for(
        pilot,
        lambda: isinstance(app.screen, SolutionScreen) and app.screen.query("#solution-code"),
        5,
        "the solution",
    )
    return app.screen


def _shown(screen: SolutionScreen) -> tuple[str, str]:
    head = str(screen.query_one("#solution-head", Static).render())
    return head, screen.query_one("#solution-code", TextArea).text


async def test_expert_solution_opens_at_gold_and_e_switches():
    ex = load_catalog().get("matmul-tiled")
    app = fake_app()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await _open_solution(pilot, "matmul-tiled", "gold")
        head, code = _shown(screen)
        assert "Reference solution" in head and "e shows the expert's" in head
        # no figure from one card: the expert is timed beside the learner on this device
        assert "our expert solution is timed beside yours in every check" in head
        assert "H100" not in head
        assert code == ex.solution_path.read_text()
        await pilot.press("e")
        head, code = _shown(screen)
        assert "Expert solution" in head and "e shows the reference" in head
        assert code == ex.expert_path.read_text()
        await pilot.press("e")
        assert _shown(screen)[1] == ex.solution_path.read_text()
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, SolutionScreen), 5, "closed")


async def test_expert_solution_stays_closed_below_gold():
    app = fake_app()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await _open_solution(pilot, "matmul-tiled", "silver")
        head, code = _shown(screen)
        assert "opens at gold" in head and "e shows" not in head
        await pilot.press("e")  # says what opens it, shows nothing else
        assert _shown(screen) == (head, code)
        assert "expert" not in code.lower().split("\n", 1)[0]
