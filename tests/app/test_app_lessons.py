"""Pilot tests of the lesson browser and quizzes, in a small app and in the full GpuLabApp."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.widgets import Button, Input, Markdown, OptionList, Static, Tree

from gpulab.app import messages
from gpulab.app.app import WIDGETS_CSS
from gpulab.app.panes.lessons import LessonsPane
from gpulab.app.screens.quiz import LETTERS, QuizScreen
from gpulab.lessons.catalog import load_catalog
from gpulab.lessons.measured import Measured
from gpulab.store.database import Store

FIXTURES = Path(__file__).parents[1] / "fixtures" / "lessons"


class LessonsApp(App[None]):
    CSS_PATH = WIDGETS_CSS  # the lab's rules for its own widgets
    """LessonsPane alone, recording what it asks the app to do."""

    def __init__(self, data_dir: Path, **kw: Any) -> None:
        super().__init__()
        self.data_dir = data_dir
        self.kw = kw
        self.runs: list[tuple[str, dict[str, str]]] = []

    def compose(self) -> ComposeResult:
        yield LessonsPane(
            id="lessons",
            catalog=load_catalog(FIXTURES, strict=True),
            store=Store(self.data_dir / "gpulab.sqlite3"),
            **self.kw,
        )

    def on_run_experiment(self, message: messages.RunExperiment) -> None:
        self.runs.append((message.experiment, message.params))


def _pane(app: App[Any]) -> LessonsPane:
    return app.query_one("#lessons", LessonsPane)


async def _open(pilot: Any, lesson_id: str) -> LessonsPane:
    pane = _pane(pilot.app)
    await pane.open_lesson(lesson_id)
    await pilot.pause()
    return pane


def _leaf_labels(pane: LessonsPane) -> list[str]:
    """The label of every lesson row, in tree order, without the chapter number."""
    tree = pane.query_one("#lesson-tree", Tree)
    rows = []
    for node in tree.root.children:
        rows += [node, *node.children]
    return [str(n.label)[:2] + str(n.label)[5:] for n in rows if n.data]  # mark, title, score


async def test_tree_has_one_row_per_lesson_and_a_lesson_that_fits_is_read(tmp_path):
    app = LessonsApp(tmp_path, measured=Measured({"gpu_name": "Test GPU"}))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = _pane(app)
        tree = pane.query_one("#lesson-tree", Tree)
        # two chapters of one lesson each: two rows, not a chapter row above each lesson
        rows = [str(n.label) for n in tree.root.children]
        assert rows == ["   1 First steps on a GPU", "   2 Second steps and timing"]
        assert all(not n.children for n in tree.root.children)
        # select the first lesson with the keyboard
        tree.focus()
        await pilot.pause()
        assert tree.cursor_node is not None and tree.cursor_node.data == "first-steps"
        await pilot.press("enter")
        await pilot.pause()
        await pilot.pause()
        assert pane.current == "first-steps"
        md = pane.query_one("#lesson-body", Markdown)
        assert "This GPU is Test GPU" in md.source
        assert "runnable" not in md.source  # fences reduced to the language for highlighting
        assert md.query("MarkdownFence")  # code rendered as code blocks
        assert _leaf_labels(pane)[0] == "✓ First steps on a GPU"
        assert pane.store.is_read("first-steps") and not pane.store.is_read("second-steps")


async def test_the_real_syllabus_is_one_row_per_lesson_and_filters_by_title_first(tmp_path):
    catalog = load_catalog()
    app = LessonsApp(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = _pane(app)
        pane._catalog = catalog
        pane._fill_tree()
        await pilot.pause()
        tree = pane.query_one("#lesson-tree", Tree)
        leaves = [
            leaf.data for n in tree.root.children for leaf in (n.children if n.data == "" else [n])
        ]
        assert leaves == [le.id for le in catalog]  # one row per lesson, in reading order
        groups = [n for n in tree.root.children if n.data == ""]
        several = [ch for ch in catalog.chapters(list(catalog)) if len(ch.lessons) > 1]
        assert len(groups) == len(several)  # a chapter of several lessons is a row of its own
        assert all(not leaf.children for g in groups for leaf in g.children)
        await pilot.press("slash", *"occupancy")
        await pilot.pause()
        found = [n.data for n in tree.root.children]
        # chapter 12 has it in a heading; chapter 2, earlier, only in its text
        assert found[0] == "performance-regimes" and "inside-the-gpu" in found[1:]
        assert tree.cursor_node is not None and tree.cursor_node.data == "performance-regimes"
        await pilot.press("enter")
        await pilot.pause()
        assert pane.current == "performance-regimes"
        assert not pane.store.is_read("performance-regimes")  # opened, not yet read


async def test_next_previous_and_filter(tmp_path):
    app = LessonsApp(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _open(pilot, "first-steps")
        assert pane.query_one("#lesson-prev", Button).disabled
        await pilot.click("#lesson-next")
        await pilot.pause()
        assert pane.current == "second-steps"
        assert pane.query_one("#lesson-next", Button).disabled
        pane.query_one("#lesson-scroll").focus()
        await pilot.press("p")
        await pilot.pause()
        assert pane.current == "first-steps"
        await pilot.press("slash")
        await pilot.press(*"warm-up")
        await pilot.pause()
        assert pane.query_one("#lesson-filter", Input).has_focus
        assert _leaf_labels(pane) == ["✓ Second steps and timing"]  # read a moment ago
        await pilot.press("enter")
        await pilot.pause()
        assert pane.current == "second-steps"


async def test_keyboard_path_from_tree_to_run_link(tmp_path):
    app = LessonsApp(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = _pane(app)
        pane.query_one("#lesson-tree", Tree).focus()
        await pilot.pause()
        await pilot.press("enter")  # the cursor starts on the first lesson not read
        await pilot.pause()
        assert pane.current == "first-steps"
        assert pane.query_one("#lesson-scroll").has_focus
        await pilot.press("e")  # to the run links
        assert pane.run_links()[0].has_focus
        await pilot.press("enter")
        await pilot.pause()
        assert app.runs == [("montecarlo", {"samples": "1e5", "seed": "7"})]
        await pilot.press("n")
        await pilot.pause()
        assert pane.current == "second-steps"


async def test_run_link_posts_a_filled_in_experiment(tmp_path):
    app = LessonsApp(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _open(pilot, "first-steps")
        # the link as Markdown delivers it when clicked
        md = pane.query_one("#lesson-body", Markdown)
        md.post_message(Markdown.LinkClicked(md, "experiment:montecarlo?samples=1e5&seed=7"))
        await pilot.pause()
        assert app.runs == [("montecarlo", {"samples": "1e5", "seed": "7"})]
        # and the same link as a button, from the keyboard
        button = pane.run_links()[0]
        assert "Run it: a small Monte Carlo" in str(button.label)
        button.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert app.runs[-1] == ("montecarlo", {"samples": "1e5", "seed": "7"})


async def test_a_bad_link_is_shown_not_sent(tmp_path):
    app = LessonsApp(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _open(pilot, "first-steps")
        assert not pane.follow_link("experiment:montecarlo?samples=lots")
        assert not pane.follow_link("experiment:no-such-thing")
        await pilot.pause()
        assert app.runs == []
        messages = [n.message for n in app._notifications]
        assert any("samples" in m and "lots" in m for m in messages)
        assert any("unknown experiment 'no-such-thing'" in m for m in messages)


async def test_clicking_the_link_text_in_the_lesson(tmp_path):
    app = LessonsApp(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _open(pilot, "first-steps")
        para = next(
            p
            for p in pane.query("MarkdownParagraph")
            if "Run it: a small Monte Carlo" in str(p._content)
        )
        await pilot.click(para, offset=(2, 0))
        await pilot.pause()
        assert app.runs == [("montecarlo", {"samples": "1e5", "seed": "7"})]


async def test_quiz_feedback_and_best_score_kept(tmp_path):
    app = LessonsApp(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _open(pilot, "first-steps")
        await pilot.click("#lesson-quiz")
        await pilot.pause()
        quiz = app.screen
        assert isinstance(quiz, QuizScreen)
        assert "Which device runs a CUDA kernel?" in str(quiz.query_one("#quiz-question").render())
        # the choices come in this attempt's order: find "The CPU" (wrong) and "The GPU" (right)
        cpu, gpu = quiz.question.position(0), quiz.question.answer
        # wrong answer first: a second try, without the answer or the explanation yet
        await pilot.press(str(cpu + 1))
        await pilot.pause()
        feedback = str(quiz.query_one("#quiz-feedback", Static).render())
        assert f"Not {LETTERS[cpu]}" in feedback and "pick another" in feedback
        assert "The GPU" not in feedback and "host launches" not in feedback
        choices = quiz.query_one("#quiz-choices", OptionList)
        assert not choices.disabled and choices.get_option_at_index(cpu).disabled
        assert not quiz.query_one("#quiz-next", Button).display
        await pilot.press(str(cpu + 1))  # the struck-out choice again: ignored
        await pilot.pause()
        assert quiz.answered is None and quiz.tried == [cpu]
        await pilot.press(str(gpu + 1))  # the second try, right this time
        await pilot.pause()
        feedback = str(quiz.query_one("#quiz-feedback", Static).render())
        assert "Right, on the second try" in feedback
        assert "host launches and the device executes" in feedback
        assert quiz.query_one("#quiz-choices", OptionList).disabled
        assert quiz.score == 0  # only first answers score
        await pilot.press("enter")  # Next question (focused)
        await pilot.pause()
        choices = quiz.query_one("#quiz-choices", OptionList)
        assert choices.has_focus
        assert quiz.question.choices[quiz.question.answer] == "32"
        await pilot.press(*["down"] * quiz.question.answer, "enter")  # "32", with the keyboard
        await pilot.pause()
        assert "Right" in str(quiz.query_one("#quiz-feedback", Static).render())
        await pilot.press("enter")  # See your score
        await pilot.pause()
        assert "You scored 1 of 2" in str(quiz.query_one("#quiz-question").render())
        assert quiz.result is not None and quiz.result.best_score == 1
        await pilot.click("#quiz-again")
        await pilot.pause()
        for _ in range(2):
            await pilot.press(str(quiz.question.answer + 1), "enter")
            await pilot.pause()
        assert quiz.result is not None and quiz.result.score == 2
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, QuizScreen)
        best = pane.store.best_scores()["first-steps"]
        assert (best.best_score, best.total) == (2, 2)
        answers = pane.store.answers("first-steps")
        assert [a.correct for a in answers] == [False, True, True, True]
        assert [a.choice for a in answers] == [0, 1, 1, 1]  # the lesson file's indices
        assert _leaf_labels(pane)[0] == "✓ First steps on a GPU  2/2"
        assert "quiz best 2/2" in str(pane.query_one("#lesson-marks", Static).render())


async def test_a_wrong_answer_can_be_given_up_for_the_explanation(tmp_path):
    app = LessonsApp(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open(pilot, "first-steps")
        await pilot.click("#lesson-quiz")
        await pilot.pause()
        quiz = app.screen
        await pilot.press(str(quiz.question.position(0) + 1))  # "The CPU", wherever it is
        await pilot.pause()
        assert quiz.query_one("#quiz-reveal", Button).display
        await pilot.click("#quiz-reveal")
        await pilot.pause()
        feedback = str(quiz.query_one("#quiz-feedback", Static).render())
        assert "Not quite" in feedback and f"{LETTERS[quiz.question.answer]}. The GPU" in feedback
        assert "host launches and the device executes" in feedback
        assert not quiz.query_one("#quiz-reveal", Button).display
        assert quiz.query_one("#quiz-next", Button).has_focus
        assert [a.choice for a in _pane(app).store.answers("first-steps")] == [0]


async def test_progress_survives_a_restart(tmp_path):
    app = LessonsApp(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open(pilot, "second-steps")
        quiz = QuizScreen(_pane(app).catalog.get("second-steps"), _pane(app).store)
        app.push_screen(quiz)
        await pilot.pause()
        await pilot.press(str(quiz.question.answer + 1), "enter")
        await pilot.pause()
    again = LessonsApp(tmp_path)
    async with again.run_test(size=(120, 40)) as pilot:
        pane = _pane(again)
        assert _leaf_labels(pane) == ["  First steps on a GPU", "✓ Second steps and timing  1/1"]
        marks = str(pane.query_one("#lesson-marks", Static).render())
        assert "1 of 2 lessons read" in marks
        assert "Next up: **First steps on a GPU**" in pane.query_one(Markdown).source


async def test_narrow_pane_takes_turns(tmp_path):
    app = LessonsApp(tmp_path)
    async with app.run_test(size=(60, 24)) as pilot:
        pane = _pane(app)
        assert pane.has_class("-narrow")
        assert pane.query_one("#lesson-reader").styles.display == "none"
        await _open(pilot, "first-steps")
        assert pane.query_one("#lesson-reader").styles.display == "block"
        assert pane.query_one("#lesson-nav").styles.display == "none"
        await pilot.click("#show-contents")
        await pilot.pause()
        assert pane.query_one("#lesson-nav").styles.display == "block"
        assert pane.query_one("#lesson-tree").has_focus


def test_lessons_pane_snapshot(snap_compare, tmp_path):
    app = LessonsApp(tmp_path, measured=Measured({"gpu_name": "Snapshot GPU", "copy_gbs": 2900}))

    async def open_first(pilot: Any) -> None:
        await _pane(pilot.app).open_lesson("first-steps")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(110, 36), run_before=open_first)


# ---- the full app ---------------------------------------------------------------------------


async def _panes_ready(pilot: Any) -> None:
    """The app may mount its panes after the first frame: wait for them (on events)."""
    for _ in range(200):
        screen = pilot.app.screen
        if screen.query("#lessons") and screen.query("#experiments"):
            await pilot.pause()
            return
        await pilot.pause()
    raise AssertionError("the app's panes never mounted")


def _full_app() -> Any:
    from gpulab.app.app import GpuLabApp
    from gpulab.testing.fake_runner import FakeRunner

    return GpuLabApp(runner_factory=lambda **kw: FakeRunner(**kw))


async def test_full_app_run_link_fills_the_experiment_panel():
    from gpulab.app.panes.experiments import ExperimentPanel

    app = _full_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await _panes_ready(pilot)
        app.open_lesson("transfers" if "transfers" in load_catalog() else "why-gpus")
        await pilot.pause()
        pane = app.screen.query_one("#lessons", LessonsPane)
        # opened is not read: a real lesson is longer than the pane, and read at its end
        await pilot.pause()
        assert pane.current is not None and not pane.store.is_read(pane.current)
        pane.query_one("#lesson-scroll").focus()
        await pilot.press("end")
        await _wait(pilot, lambda: pane.store.is_read(pane.current), "the lesson read at its end")
        assert pane.follow_link("experiment:montecarlo?samples=123456&seed=3")
        panel = app.screen.query_one("#experiments", ExperimentPanel)
        raw = (await _form_ready(pilot, panel, "montecarlo")).raw()
        assert (str(raw["samples"]), str(raw["seed"])) == ("123456", "3")
        assert app.screen.current == "experiments"  # the app moved to the experiment panel


async def _form_ready(pilot: Any, panel: Any, experiment: str, old: frozenset = frozenset()) -> Any:
    """The panel's form for `experiment` once every field has composed (waits on events)."""
    from gpulab.app.widgets.param_form import ParamForm
    from gpulab.experiments.registry import get

    params = get(experiment).params
    for _ in range(50):
        await pilot.pause()
        # The form built from this experiment's own parameters: the one a link replaced is
        # removed after the new one mounts, and counting fields took it for the new one where
        # the two experiments have as many parameters (a loaded fresh-clone run read 'steps'
        # from the form before)
        # (and not one of `old`, the forms there before the link: the same experiment linked
        # twice with other values left the first form to be read)
        forms = [
            f
            for f in panel.query(ParamForm)
            if f.is_mounted and f.params is params and f.id not in old
        ]
        if forms and panel.experiment_id == experiment:
            fields = forms[-1].fields()
            if len(fields) == len(params) and all(f.query(".param-note") for f in fields):
                return forms[-1]
    raise AssertionError(f"the form for {experiment} never finished composing")


async def test_full_app_every_lesson_link_opens_a_valid_form():
    """Every Run link in the real lessons lands in the panel filled in and without errors."""
    from gpulab.app.panes.experiments import ExperimentPanel
    from gpulab.app.widgets.param_form import ParamForm
    from gpulab.experiments.registry import get

    unique = {link.href: (le.id, link) for le in load_catalog() for link in le.links()}
    links = list(unique.values())  # the same link in two lessons is one test
    assert links
    app = _full_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await _panes_ready(pilot)
        pane = app.screen.query_one("#lessons", LessonsPane)
        panel = app.screen.query_one("#experiments", ExperimentPanel)
        for lesson_id, link in links:
            before = frozenset(f.id for f in panel.query(ParamForm))
            assert pane.follow_link(link.href), f"{lesson_id}: {link.href}"
            form = await _form_ready(pilot, panel, link.experiment, before)
            where = f"{lesson_id}: {link.href}"
            assert panel.experiment_id == link.experiment, where
            assert form.errors() == [], where
            raw = form.raw()
            params = get(link.experiment).params
            for name, value in link.params.items():
                p = params.get(name)
                assert p.parse(raw[name]) == p.parse(value), f"{where}: {name}={raw[name]!r}"


# ---- the real app, the real lessons --------------------------------------------------------


async def _wait(pilot: Any, condition: Any, what: str, tries: int = 400) -> Any:
    for _ in range(tries):
        value = condition()
        if value:
            return value
        await pilot.pause(0.02)
    raise AssertionError(f"timed out waiting for {what}")


async def test_real_lesson_run_link_by_keyboard_fills_the_experiment_panel(tmp_path, monkeypatch):
    """Open a real lesson in the real app, move to one of its Run links with the keyboard,
    press enter: the experiment panel shows that experiment with the link's values."""
    from gpulab.app.panes.experiments import ExperimentPanel
    from gpulab.experiments.registry import get

    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path / "data"))  # what --data-dir sets
    lesson = load_catalog().get("transfers")
    links = lesson.links()
    index, link = next((i, li) for i, li in enumerate(links) if len(li.params) >= 2)
    assert link.experiment == "bandwidth"
    app = _full_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await _panes_ready(pilot)
        app.open_lesson("transfers")
        await pilot.pause()
        pane = app.screen.query_one("#lessons", LessonsPane)
        assert pane.current == "transfers"
        await _wait(pilot, lambda: pane.query(".run-link"), "the lesson's Run links")
        buttons = list(pane.query(".run-link").results(Button))
        assert [str(b.label).split(" (opens")[0] for b in buttons] == [
            f"▶ {li.text}" for li in links
        ]
        pane.query_one("#lesson-scroll").focus()
        await pilot.press("e")  # to the first Run link
        await pilot.press(*["down"] * index)
        assert app.focused is buttons[index]
        await pilot.press("enter")
        panel = app.screen.query_one("#experiments", ExperimentPanel)
        form = await _form_ready(pilot, panel, link.experiment)
        assert app.screen.current == "experiments"
        params = get(link.experiment).params
        raw = form.raw()
        for name, value in link.params.items():
            assert params.get(name).parse(raw[name]) == params.get(name).parse(value), name
        assert params.get("max_size").parse(raw["max_size"]) == 2**30  # "1Gi" in the link
        assert form.errors() == []
        assert pane.store.is_read("transfers")
    assert (tmp_path / "data" / "gpulab.sqlite3").exists()


async def _take_quiz(pilot: Any, app: Any, answers: list[int | tuple[int, int]]) -> Any:
    """Each answer a choice (its index in the lesson file, pressed wherever this attempt shows
    it), or (wrong first try, second try)."""
    quiz = await _wait(pilot, lambda: isinstance(app.screen, QuizScreen) and app.screen, "quiz")
    for given in answers:
        for choice in given if isinstance(given, tuple) else (given,):
            await pilot.press(str(quiz.question.position(choice) + 1))
            await pilot.pause()
        await pilot.press("enter")  # next question, or the score after the last
        await pilot.pause()
    assert quiz.result is not None
    return quiz


async def test_real_quiz_in_the_real_app_survives_a_restart(tmp_path, monkeypatch):
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path / "data"))
    lesson = load_catalog().get("why-gpus")
    right = [q.answer for q in lesson.quiz]
    wrong = (right[0] + 1) % len(lesson.quiz[0].choices)
    wrong_first = [wrong, *right[1:]]
    total = len(lesson.quiz)

    app = _full_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await _panes_ready(pilot)
        app.open_lesson("why-gpus")
        await pilot.pause()
        pane = app.screen.query_one("#lessons", LessonsPane)
        pane.query_one("#lesson-scroll").focus()
        await pilot.press("end")  # read to the end
        await _wait(pilot, lambda: pane.store.is_read("why-gpus"), "the lesson read")
        await pilot.press("t")  # the lesson's quiz
        quiz = await _take_quiz(pilot, app, [(wrong, right[0]), *right[1:]])
        assert quiz.result.score == total - 1
        assert f"You scored {total - 1} of {total}" in str(
            quiz.query_one("#quiz-question").render()
        )
        await pilot.press("escape")
        await _wait(pilot, lambda: not isinstance(app.screen, QuizScreen), "the quiz to close")
        assert "quiz best" in str(pane.query_one("#lesson-marks", Static).render())

    again = _full_app()  # a restart: a new app on the same data directory
    async with again.run_test(size=(160, 48)) as pilot:
        await _panes_ready(pilot)
        pane = again.screen.query_one("#lessons", LessonsPane)
        best = pane.store.best_scores()["why-gpus"]
        assert (best.best_score, best.total) == (total - 1, total)
        answers = pane.store.answers("why-gpus")
        assert [a.choice for a in answers] == wrong_first
        assert [a.correct for a in answers] == [False] + [True] * (total - 1)
        label = next(lbl for lbl in _leaf_labels(pane) if lesson.title in lbl)
        assert label == f"✓ {lesson.title}  {total - 1}/{total}"
        assert f"1 of {len(load_catalog())} lessons read · 1 quizzes taken" in str(
            pane.query_one("#lesson-marks", Static).render()
        )
        # and the quiz again, all right this time: the best score improves and is kept
        again.open_lesson("why-gpus")
        await pilot.pause()
        pane.query_one("#lesson-scroll").focus()
        await pilot.press("t")
        quiz = await _take_quiz(pilot, again, right)
        assert quiz.result.best_score == total
        await pilot.press("escape")
    with Store(tmp_path / "data" / "gpulab.sqlite3") as store:
        assert store.best_scores()["why-gpus"].best_score == total


async def test_quiz_shows_inline_code_as_code(tmp_path):
    """Backticks in quiz text are Markdown code: shown styled, without the backticks."""
    from gpulab.app.screens.quiz import CODE_STYLE, inline_code

    lesson = load_catalog().get("pytorch-on-the-gpu")
    n, q = next(
        (i, q) for i, q in enumerate(lesson.quiz) if "`" in q.q and any("`" in c for c in q.choices)
    )

    class QuizApp(App[None]):
        CSS_PATH = WIDGETS_CSS  # the lab's rules for its own widgets

        def on_mount(self) -> None:
            screen = QuizScreen(lesson, Store(tmp_path / "p.db"))
            self.push_screen(screen)

    app = QuizApp()
    async with app.run_test(size=(120, 40)) as pilot:
        quiz = await _wait(pilot, lambda: isinstance(app.screen, QuizScreen) and app.screen, "quiz")
        for _ in range(n):  # to question n
            await pilot.press(str(quiz.question.answer + 1), "enter")
            await pilot.pause()
        question = quiz.query_one("#quiz-question", Static).render()
        assert "`" not in str(question) and str(question) == inline_code(q.q).plain
        code = [str(question)[s.start : s.end] for s in question.spans if s.style == CODE_STYLE]
        assert code and all(c in q.q for c in code)
        options = quiz.query_one("#quiz-choices", OptionList)
        shown = quiz.question  # the choices in the order this attempt shows them
        for i, choice in enumerate(shown.choices):
            prompt = options.get_option_at_index(i).prompt
            assert "`" not in str(prompt) and str(prompt).startswith(f"{'ABCD'[i]}. ")
            assert any(s.style == CODE_STYLE for s in prompt.spans) == ("`" in choice)
        # what the terminal shows: no backticks, the code in bold
        lines = [quiz.query_one("#quiz-question").render_line(y) for y in range(2)]
        assert not any("`" in seg.text for line in lines for seg in line)
        first_code = code[0].split()[0]
        assert any(first_code in seg.text and seg.style.bold for line in lines for seg in line)
        wrong = (shown.answer + 1) % len(shown.choices)
        await pilot.press(str(wrong + 1))
        await pilot.pause()
        await pilot.click("#quiz-reveal")
        await pilot.pause()
        feedback = quiz.query_one("#quiz-feedback", Static).render()
        assert "Not quite" in str(feedback) and "`" not in str(feedback)
        assert inline_code(q.choices[q.answer]).plain in str(feedback)
        assert any(s.style == CODE_STYLE for s in feedback.spans)


async def test_each_attempt_shows_the_choices_in_a_new_order(tmp_path):
    """The screen shows this attempt's order, scores by it, saves the lesson file's index, and
    "Take it again" draws a new order; a seed makes the orders repeat."""
    import random

    from gpulab.app.screens.quiz import inline_code
    from gpulab.lessons.lesson_format import shuffle_quiz

    lesson = load_catalog().get("why-gpus")
    store = Store(tmp_path / "p.db")

    class QuizApp(App[None]):
        CSS_PATH = WIDGETS_CSS  # the lab's rules for its own widgets

        def on_mount(self) -> None:
            self.push_screen(QuizScreen(lesson, store, seed=4))

    app = QuizApp()
    async with app.run_test(size=(120, 40)) as pilot:
        quiz = await _wait(pilot, lambda: isinstance(app.screen, QuizScreen) and app.screen, "quiz")
        first = [s.order for s in quiz.shown]
        assert first == [s.order for s in shuffle_quiz(lesson.quiz, random.Random(4))]
        assert any(order != tuple(range(len(order))) for order in first)  # not the file's order
        saved = []
        for n, q in enumerate(lesson.quiz):
            shown = quiz.question
            options = quiz.query_one("#quiz-choices", OptionList)
            prompts = [str(options.get_option_at_index(k).prompt) for k in range(len(q.choices))]
            assert prompts == [
                f"{LETTERS[k]}. {inline_code(c).plain}" for k, c in enumerate(shown.choices)
            ]
            wrong = (shown.answer + 1) % len(q.choices)
            answer = wrong if n == 0 else shown.answer  # the first one wrong, then all right
            saved.append(shown.original(answer))
            await pilot.press(str(answer + 1))
            await pilot.pause()
            if n == 0:
                await pilot.press(str(shown.answer + 1))  # the second try
                await pilot.pause()
            await pilot.press("enter")
            await pilot.pause()
        assert quiz.result is not None and quiz.result.score == len(lesson.quiz) - 1
        assert [a.choice for a in store.answers("why-gpus")] == saved
        assert saved[1:] == [q.answer for q in lesson.quiz[1:]]
        await pilot.click("#quiz-again")
        await pilot.pause()
        again = [s.order for s in quiz.shown]
        assert again != first  # a retake is not the same letters again
        for _ in lesson.quiz:
            await pilot.press(str(quiz.question.answer + 1), "enter")
            await pilot.pause()
        assert quiz.result is not None and quiz.result.score == len(lesson.quiz)


def test_inline_code_rules():
    from gpulab.app.screens.quiz import CODE_STYLE, inline_code

    c = inline_code("call `x.numpy()` on [b]this[/b]")
    assert c.plain == "call x.numpy() on [b]this[/b]"  # brackets are text, never markup
    assert [(c.plain[s.start : s.end], s.style) for s in c.spans] == [("x.numpy()", CODE_STYLE)]
    assert inline_code("a lone ` stays").plain == "a lone ` stays"
    assert inline_code("``a`b``").plain == "a`b"  # a longer fence holds a backtick
    assert inline_code("no code at all").spans == []


async def test_a_bandwidth_run_fills_the_transfers_lesson(tmp_path, monkeypatch):
    """The pageable H2D figure in lesson 10 comes from a finished bandwidth run, shown when
    the learner comes back to the lesson; before that the lesson says how to measure it."""
    from gpulab.app.panes.experiments import ExperimentPanel
    from gpulab.core import events as ev
    from gpulab.experiments.bandwidth_report import summary
    from gpulab.testing.fake_runner import FakeRunner, frozen

    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path / "data"))

    async def bandwidth_script(job: Any, emit: Any) -> None:
        emit(frozen(ev.ACCEPTED, job.id, experiment=job.experiment, params=job.params))
        top = float(job.params["max_size"])
        curves = {"h2d-pageable": [(65536.0, 3.3), (top, 8.31)], "h2d-pinned": [(top, 55.0)]}
        result = {
            "record": {"experiment": "bandwidth", "params": job.params, "device": "fake"},
            "measurements": [],
            "summary": summary(curves, {}, None, None),
            "explanation": "",
            "lesson": "transfers",
        }
        emit(frozen(ev.RESULT, job.id, result=result))

    from gpulab.app.app import GpuLabApp

    app = GpuLabApp(runner_factory=lambda **kw: FakeRunner(script=bandwidth_script, **kw))
    async with app.run_test(size=(160, 48)) as pilot:
        await _panes_ready(pilot)
        app.open_lesson("transfers")
        await pilot.pause()
        pane = app.screen.query_one("#lessons", LessonsPane)
        md = pane.query_one("#lesson-body", Markdown)
        fallback = "(not measured yet: [run the bandwidth experiment](experiment:bandwidth))"
        assert f"latest bandwidth sweep: {fallback}." in md.source
        sweep = next(li for li in load_catalog().get("transfers").links() if li.params)
        assert pane.follow_link(sweep.href)
        panel = app.screen.query_one("#experiments", ExperimentPanel)
        await _form_ready(pilot, panel, "bandwidth")
        await _wait(pilot, lambda: app.handshake is not None, "the worker")
        state = await panel.start_run()
        assert state is not None
        await _wait(pilot, lambda: state.finished, "the bandwidth run")
        assert state.status == ev.RESULT
        app.focus_pane("lessons")  # back to the lesson
        await _wait(pilot, lambda: "sweep: 8.3 GB/s." in md.source, "the measured figure")
        assert fallback not in md.source
