"""One lesson after another in the full app at 80x24: by `n`/`p`, by the filter, by the tree.

Two lessons in a row once crashed the app (the second lesson's run buttons were mounted under
the ids of the first's, still being removed). Each test checks that the app is still running,
that nothing failed, and that the buttons under the lesson are the open lesson's links.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import Input, Tree

from gpulab.app.app import GpuLabApp
from gpulab.app.panes.lesson_reader import RunLink
from gpulab.app.panes.lessons import LessonsPane
from gpulab.lessons.catalog import default_catalog
from gpulab.testing.fake_runner import FakeRunner

CATALOG = default_catalog()


def _app() -> GpuLabApp:
    return GpuLabApp(runner_factory=lambda **kw: FakeRunner(**kw))


async def _until(pilot: Any, condition: Any, what: str, tries: int = 1500) -> None:
    # 30 s at least: a loaded 2-core CI machine once took more than 8 s to show the next lesson.
    for _ in range(tries):
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"timed out waiting for {what}")


async def _lessons(pilot: Any) -> LessonsPane:
    await _until(pilot, lambda: pilot.app.screen.query("#lessons"), "the lessons pane")
    pilot.app.focus_pane("lessons")
    await pilot.pause()
    return pilot.app.screen.query_one("#lessons", LessonsPane)


def _alive(app: GpuLabApp) -> None:
    assert app.is_running and app.return_code is None, app._exception
    assert app._exception is None


async def _settled(pilot: Any, pane: LessonsPane, lesson_id: str) -> None:
    """The pane shows `lesson_id`, and the only run buttons in the DOM are its links."""
    want = [link.href for link in CATALOG.get(lesson_id).links()]

    def shown() -> bool:
        in_dom = [b.link.href for b in pane.query(RunLink)]
        return pane.current == lesson_id and in_dom == want

    await _until(
        pilot,
        shown,
        f"lesson {lesson_id} with its {len(want)} run links (showing {pane.current})",
    )
    assert [b.link.href for b in pane.run_links()] == want
    _alive(pilot.app)


async def test_next_and_previous_after_a_lesson_with_run_links():
    first, second, third = CATALOG.lessons[:3]
    assert first.links() and second.links()  # the case that crashed: links on both
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _lessons(pilot)
        app.open_lesson(first.id)
        await _settled(pilot, pane, first.id)
        # Opening a lesson puts the keyboard on its text, however late the screen's focus comes
        # after the layout (it once landed on the hidden filter on a loaded machine, and `n`
        # was typed there): no test-side focus before the keys
        scroll = pane.query_one("#lesson-scroll")
        await _until(pilot, lambda: app.focused is scroll, "the keyboard on the lesson's text")
        for key, lesson in (("n", second), ("n", third), ("p", second)):
            await pilot.press(key)
            await _settled(pilot, pane, lesson.id)
            assert app.focused is scroll
        # the run buttons work after the switch: `e` reaches the open lesson's first link
        await pilot.press("e")
        assert app.focused is pane.run_links()[0]


async def test_a_second_lesson_through_the_filter():
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _lessons(pilot)
        pane.query_one("#lesson-tree", Tree).focus()
        # "transfers" is also in the text of "Why GPUs?": the title match ranks first
        assert CATALOG.filter("transfers")[0].id == "transfers"
        await pilot.press("slash", *"transfers", "enter")
        await _settled(pilot, pane, "transfers")
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*["backspace"] * 20, *"debugging", "enter")
        await _settled(pilot, pane, "debugging")


async def test_a_second_lesson_from_the_tree():
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _lessons(pilot)
        tree = pane.query_one("#lesson-tree", Tree)
        chosen: list[str] = []
        for lesson in (CATALOG.lessons[0], CATALOG.lessons[4]):
            # at 80 columns the tree and the lesson take turns: back to the list first
            if pane.has_class("-reading"):
                await pilot.press("l")
            tree.focus()
            rows = [*tree.root.children, *(n for ch in tree.root.children for n in ch.children)]
            node = next(n for n in rows if n.data == lesson.id)
            tree.move_cursor(node)
            await pilot.press("enter")
            await _settled(pilot, pane, lesson.id)
            chosen.append(lesson.id)
        assert len(chosen) == 2


async def test_rapid_switches_end_on_the_last_lesson():
    """Many lessons within one frame, then keys faster than the removals finish."""
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await _lessons(pilot)
        for lesson in CATALOG.lessons[:5]:
            pane.open_lesson(lesson.id)  # not awaited: the next one starts at once
        await _settled(pilot, pane, CATALOG.lessons[4].id)
        pane.query_one("#lesson-scroll").focus()
        await pilot.press("n", "n", "p", "n")
        await _settled(pilot, pane, CATALOG.lessons[6].id)
