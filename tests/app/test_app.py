"""The TUI under Pilot: panes and navigation, runs through the real runner, failures, recovery.

Every wait is for a condition with a deadline (`wait_for`), never a fixed sleep.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from textual.binding import Binding
from textual.widgets import Button, DataTable, Input, OptionList, Static, TextArea

from gpulab.app import messages
from gpulab.app.app import GpuLabApp
from gpulab.app.main_screen import MainScreen
from gpulab.app.panes.lessons import LessonsPane
from gpulab.app.screens.help import HelpScreen
from gpulab.app.screens.traceback import TracebackScreen
from gpulab.core import events as ev
from gpulab.testing.fake_nvml import fake_sampler, worker_inventory
from gpulab.testing.fake_runner import FakeRunner, frozen

SIZES = [(80, 24), (160, 48)]
PANES = ("gpu-info", "lessons", "exercises", "experiments", "memory-gauge")


def fake_app(**kw: Any) -> GpuLabApp:
    return GpuLabApp(runner_factory=lambda **rk: FakeRunner(**kw, **rk))


async def wait_for(pilot, condition: Callable[[], Any], timeout: float = 30.0, what: str = ""):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or condition}")
        await pilot.pause(0.05)
    return condition()


async def ready(pilot) -> None:
    await wait_for(pilot, lambda: pilot.app.handshake is not None, 60, "the worker handshake")
    await wait_for(pilot, lambda: pilot.app.focused is not None, 5, "the first focus")


def table_rows(app: GpuLabApp) -> list[list[str]]:
    table = app.query_one("#results", DataTable)
    return [[str(c) for c in table.get_row(k)] for k in table.rows]


def notes(app: GpuLabApp) -> list[str]:
    return [f"{n.title}: {n.message}" for n in app._notifications]


@pytest.mark.parametrize("size", SIZES)
async def test_five_panes_and_tab_moves_across_them(size):
    app = fake_app()
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        for pane in PANES:
            assert app.query_one(f"#{pane}") is not None
        assert screen.current == "experiments"
        seen = []
        for _ in PANES:
            await pilot.press("tab")
            seen.append(screen.current)
        assert seen == ["memory-gauge", "gpu-info", "lessons", "exercises", "experiments"]
        await pilot.press("shift+tab", "shift+tab")
        assert screen.current == "lessons"
        shown = [p for p in PANES if app.query_one(f"#shell-{p}").display]
        if size == (80, 24):
            # One pane at a time, the tab bar reaches the others.
            assert screen.compact and shown == ["lessons"]
            assert app.query_one("#pane-tabs").display
            await pilot.click("#tab-memory-gauge")
            assert screen.current == "memory-gauge"
            assert [p for p in PANES if app.query_one(f"#shell-{p}").display] == ["memory-gauge"]
        else:
            # The right column holds the exercises, shown last, in place of the experiments.
            assert not screen.compact and shown == [p for p in PANES if p != "experiments"]
            assert not app.query_one("#pane-tabs").display
            await pilot.press("tab", "tab")
            assert screen.current == "experiments"
            shown = [p for p in PANES if app.query_one(f"#shell-{p}").display]
            assert shown == [p for p in PANES if p != "exercises"]


async def test_a_focus_event_that_arrives_after_focus_moved_on_changes_no_pane():
    """Leaving the lessons pane, Textual hands focus to its hidden filter for a moment; that
    focus's event, bubbling after the exercises table took focus, made lessons current again,
    hid the table and left the keyboard nowhere (one Tab to Exercises in three at 80x24)."""
    from textual import events

    app = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        screen = app.screen
        await pilot.press("tab", "tab", "tab", "tab")
        table = app.query_one("#ex-table", DataTable)
        await wait_for(pilot, lambda: app.focused is table, 5, "the exercises table's focus")
        stale = app.query_one("#lesson-filter", Input)
        screen.post_message(events.DescendantFocus(stale))
        await pilot.pause(0.2)
        assert screen.current == "exercises" and app.focused is table
        await pilot.press("down")
        assert table.cursor_row == 1


async def test_focus_follows_the_pane_and_keys_type_into_fields():
    app = fake_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: app.focused and app.focused.id == "experiment-select", 5)
        await pilot.press("down")
        assert app.focused.id == "param-samples"
        # r and q are app keys, but inside a field they are text: nothing runs or quits.
        await pilot.press("end", "r", "q")
        assert app.focused.value.endswith("rq") and app.panel.live is None and app.is_running
        note = app.query_one("#field-samples .param-note", Static)
        assert "parameter 'samples'" in str(note.render()) and note.has_class("-error")


async def test_header_shows_what_the_worker_found():
    app = fake_app()
    async with app.run_test(size=(100, 30)) as pilot:
        assert app.sub_title == "starting the worker…" or app.handshake is not None
        await ready(pilot)
        assert app.sub_title == "CPU mode: no NVIDIA driver found"
        assert "pid 4242" in str(app.query_one("#worker-status", Static).render())


@pytest.mark.uncalibrated  # the real worker's warm-up calibration runs beside the first run
@pytest.mark.parametrize("size", SIZES)
async def test_run_montecarlo_through_the_real_runner(size):
    app = GpuLabApp()
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        app.panel.form.set_values({"samples": "20000", "seed": "3"})
        await pilot.press("r")
        await wait_for(pilot, lambda: app.panel.live and app.panel.live.finished, 90, "the run")
        state = app.panel.live
        assert state.status == ev.RESULT, state.final
        rows = {r[0]: r for r in table_rows(app)}
        assert rows["numpy"][1] == "20000"
        assert rows["numpy"][-1] == "pass"
        assert rows["numpy"][4].endswith("G samples/s")
        assert "done in" in str(app.query_one("#step", Static).render())
        # the race filled, the explanation names its lesson, the plot is drawn, history has it
        race = str(app.query_one("#race").render())
        assert "fastest" in race and "bars: speed against the fastest" in race
        assert "lesson: applications" in str(app.query_one("#explanation", Static).render())
        plots = app.query_one("#plot")

        def names() -> list[str]:
            return [label for p in plots.query("SeriesPlot") for label in p._labels]

        # the plot draws after the run's last refresh (later still while the warm-up calibration
        # shares the loop): the convergence plot and its legend
        await wait_for(pilot, lambda: "standard error" in names(), 10, "the plot's legend")
        assert any("(log scale)" in str(c.render()) for c in plots.query(".plot-caption"))
        history = app.query_one("#history", OptionList)
        assert history.option_count == 1 and "montecarlo" in str(
            history.get_option_at_index(0).prompt
        )
        runner = app.runner
        await pilot.press("q")
    assert runner is not None and app.runner is None
    assert runner.worker_pid is None  # the worker ended with the app


async def test_cancel_a_run_in_flight():
    app = fake_app(hold=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        await pilot.click("#run")
        await wait_for(pilot, lambda: "PyTorch CPU" in app.panel.live.message, 5, "step 2")
        assert app.query_one("#cancel", Button).disabled is False
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.panel.live.finished, 5, "the cancel")
        assert app.panel.live.status == ev.CANCELLED
        assert str(app.query_one("#step", Static).render()) == "cancelled"
        assert [r[0] for r in table_rows(app)] == ["numpy"]  # the finished row stays
        assert app.query_one("#run", Button).disabled is False
        assert "■" in str(app.query_one("#history", OptionList).get_option_at_index(0).prompt)


async def test_cancel_a_real_run_that_ignores_it_kills_and_replaces_the_worker():
    app = GpuLabApp()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        first_pid = app.handshake["pid"]
        app.open_experiment("break-it", {"mode": "hang-ignoring-cancel"})
        await pilot.pause()
        await pilot.press("r")
        await wait_for(pilot, lambda: app.panel.live.status == "running", 30, "the hang")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.panel.live.finished, 30, "the cancel")
        assert app.panel.live.status == ev.CANCELLED
        assert app.panel.live.final.get("how") == "killed"
        await wait_for(
            pilot, lambda: app.handshake and app.handshake["pid"] != first_pid, 60, "new worker"
        )
        assert f"pid {app.handshake['pid']}" in str(app.query_one("#worker-status").render())


async def test_bad_param_is_refused_beside_the_field():
    app = fake_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        app.panel.form.set_values({"samples": "12"})
        await pilot.pause()  # the error wraps under the field: the button moves down
        await pilot.click("#run")
        assert app.panel.live is None  # nothing was submitted
        assert app.runner.jobs == []
        assert app.query_one("#run-error-box").display
        error = str(app.query_one("#run-error", Static).render())
        assert error.startswith("✗ bad-params: parameter 'samples'")
        assert any("bad-params" in n for n in notes(app))


async def test_failing_run_shows_kind_message_and_traceback():
    async def boom(job, emit):
        emit(frozen(ev.ACCEPTED, job.id, experiment=job.experiment, params=job.params))
        emit(
            frozen(
                ev.FAILED,
                job.id,
                kind=ev.KIND_EXCEPTION,
                message="ZeroDivisionError: nope",
                traceback="Traceback (most recent call last):\n  ZeroDivisionError: nope",
            )
        )

    app = fake_app(script=boom)
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        await pilot.press("r")
        await wait_for(pilot, lambda: app.panel.live and app.panel.live.finished, 5, "failure")
        # the notice comes with the pane's finish, an await after the run is finished
        await wait_for(
            pilot, lambda: any(n.startswith("Run failed: exception") for n in notes(app)), 5
        )
        assert app.query_one("#run-error-box").display
        assert str(app.query_one("#run-error").render()) == "✗ exception: ZeroDivisionError: nope"
        await pilot.click("#show-traceback")
        assert isinstance(app.screen, TracebackScreen)
        assert "most recent call last" in app.screen.query_one(TextArea).text
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_real_failure_from_the_worker_is_shown():
    app = GpuLabApp()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        app.open_experiment("break-it", {"mode": "device-mismatch"})
        await pilot.pause()
        await pilot.press("r")
        await wait_for(pilot, lambda: app.panel.live and app.panel.live.finished, 60, "failure")
        assert app.panel.live.status == ev.FAILED
        kind = app.panel.live.final["kind"]
        # The run is finished as its last event is applied; the pane's finish (the notice, the
        # error line) follows once the event stream is closed, an await later: on a loaded
        # 2-core box the check ran in between (CI, 2026-11-29)
        await wait_for(
            pilot,
            lambda: any(n.startswith(f"Run failed: {kind}") for n in notes(app)),
            30,
            "the failure's notice",
        )
        assert str(app.query_one("#run-error").render()).startswith(f"✗ {kind}:")


async def test_crashed_worker_is_shown_and_replaced():
    app = GpuLabApp()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        first_pid = app.handshake["pid"]
        app.open_experiment("break-it", {"mode": "crash"})
        await pilot.pause()
        await pilot.press("r")
        await wait_for(pilot, lambda: app.panel.live and app.panel.live.finished, 60, "crash")
        assert app.panel.live.final["kind"] == ev.KIND_CRASHED
        await wait_for(pilot, lambda: any(n.startswith("Worker crashed") for n in notes(app)), 30)
        await wait_for(
            pilot, lambda: app.handshake and app.handshake["pid"] != first_pid, 60, "new worker"
        )
        # the lab goes on: the next run works on the new worker
        app.open_experiment("montecarlo", {"samples": "5000"})
        await pilot.pause()
        await pilot.press("r")
        await wait_for(pilot, lambda: app.panel.live.number == 2 and app.panel.live.finished, 60)
        assert app.panel.live.status == ev.RESULT


async def test_idle_worker_crash_is_notified_and_the_new_worker_shown():
    app = fake_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        app.runner.crash()
        await wait_for(pilot, lambda: app.handshake["pid"] == 4243, 5, "the new worker")
        assert any(n.startswith("Worker crashed") for n in notes(app))
        assert "pid 4243" in str(app.query_one("#worker-status").render())


async def test_worker_that_cannot_start_is_reported_and_the_app_stays():
    def broken(**kw):
        raise RuntimeError("python3: cannot exec")

    app = GpuLabApp(runner_factory=broken)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.sub_title == "worker failed to start", 5)
        assert any("worker-start-failed" in n and "cannot exec" in n for n in notes(app))
        await pilot.press("r")
        assert str(app.query_one("#run-error").render()).startswith("✗ worker-start-failed")
        assert app.is_running


async def test_lesson_link_opens_the_experiment_with_its_params():
    app = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("tab", "tab", "tab")  # away to the lessons pane
        assert app.screen.current == "lessons"
        app.query_one(LessonsPane).post_message(
            messages.RunExperiment("montecarlo", {"samples": 5000, "seed": 7})
        )
        await wait_for(pilot, lambda: app.screen.current == "experiments", 5)
        assert app.panel.form.raw() == {"samples": "5000", "seed": "7"}
        assert app.query_one("#shell-experiments").display


async def test_history_reopens_an_earlier_run():
    app = fake_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        await pilot.press("r")
        await wait_for(pilot, lambda: app.panel.live and app.panel.live.finished, 5)
        app.panel.form.set_values({"samples": "2000"})
        await pilot.click("#run")
        await wait_for(pilot, lambda: app.panel.live.number == 2 and app.panel.live.finished, 5)
        assert table_rows(app)[0][1] == "2000"
        app.query_one("#exp-tabs").active = "tab-history"
        history = app.query_one("#history", OptionList)
        await pilot.pause()
        history.focus()
        history.highlighted = 0
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.panel.shown.number == 1, 5)
        assert table_rows(app)[0][1] == "1e+07"
        assert app.panel.form.raw()["samples"] == "10000000"


def declared_bindings(cls: type) -> list[Binding]:
    """The keys a class answers to, read from its own and its bases' BINDINGS (not from
    what the help screen was generated from): a subclass's key wins over a base's."""
    out: dict[str, Binding] = {}
    for klass in cls.__mro__:
        for b in Binding.make_bindings(klass.__dict__.get("BINDINGS", [])):
            out.setdefault(b.key, b)
        if klass.__dict__.get("_inherit_bindings", True) is False:
            break
    return list(out.values())


def screen_classes() -> list[type]:
    """Every Screen class gpulab's app package defines (a new window is found here)."""
    import importlib
    import pkgutil

    from textual.screen import Screen

    import gpulab.app

    for mod in pkgutil.walk_packages(gpulab.app.__path__, "gpulab.app."):
        importlib.import_module(mod.name)
    found, todo = [], [Screen]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith("gpulab.app.") and sub is not MainScreen:
                found.append(sub)
    # A base the windows share (OnceModal) is never shown itself: only leaves are windows.
    return [c for c in found if not any(issubclass(o, c) and o is not c for o in found)]


def listed(app: GpuLabApp, text: str, binding: Binding) -> bool:
    key = app.get_key_display(Binding(binding.key, ""))
    what = binding.description or binding.action.replace("_", " ")
    return any(f"`{key}`" in line and what in line for line in text.splitlines())


async def test_help_lists_every_key():
    app = fake_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        main = app.screen
        priority = {b.key for b in declared_bindings(GpuLabApp) if b.priority}
        # Every key of every widget on the main screen that a key can reach (it, or something
        # inside it, can have focus), the panes' own keys included: lessons n/p/t///e/l/m, the
        # GPU list's up/down/enter, the experiment panel's fields.
        expected: list[tuple[str, Binding]] = [
            (f"app {b.key}", b) for b in declared_bindings(GpuLabApp)
        ]
        for node in main.walk_children(with_self=True):
            reachable = (
                node is main or node.can_focus or any(w.can_focus for w in node.walk_children())
            )
            if not reachable:
                continue
            for b in declared_bindings(type(node)):
                if b.key not in priority:  # ctrl+c: the app's priority quit wins
                    expected.append((f"{type(node).__name__}#{node.id} {b.key}", b))
        windows = screen_classes()
        assert {c.__name__ for c in windows} >= {"HelpScreen", "QuizScreen", "TracebackScreen"}
        for cls in windows:
            for b in declared_bindings(cls):
                if b.key not in priority:
                    expected.append((f"{cls.__name__} {b.key}", b))
        keys = {b.key for _, b in expected}
        assert {"n", "p", "t", "slash", "e", "l", "m", "up", "down", "enter"} <= keys
        assert {str(n) for n in range(1, 10)} <= keys
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        text = app.screen.query_one("#help-text").source
        missing = [where for where, b in expected if not listed(app, text, b)]
        assert missing == []
        assert text.count("### Window:") == len(windows)
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_a_new_binding_reaches_the_help(monkeypatch):
    import gpulab.app.panes.lessons as lessons

    class ZappingLessons(LessonsPane):
        BINDINGS = [Binding("z", "zap", "Zap the lesson")]

    monkeypatch.setattr(lessons, "LessonsPane", ZappingLessons)
    app = fake_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await pilot.press("f1")
        text = app.screen.query_one("#help-text").source
        assert listed(app, text, Binding("z", "zap", "Zap the lesson"))


async def test_bindings_have_ids_and_show_in_the_footer():
    app = fake_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        ids = {b.id for b in [*app.BINDINGS, *MainScreen.BINDINGS]}
        assert {"help", "command-palette", "run", "cancel", "next-pane", "quit"} <= ids
        want = {"f1", "ctrl+p", "r", "escape", "tab", "q"}
        # the footer recomposes after the focus settles: wait for it, not a fixed pause
        await wait_for(pilot, lambda: want <= set(footer_keys(app)), 5, "the footer keys")


async def test_command_palette_runs_an_experiment_and_changes_theme():
    app = fake_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        await pilot.press("ctrl+p")
        await pilot.press(*"run experiment monte")
        await wait_for(
            pilot,
            lambda: (
                app.screen.query("CommandList Option")
                or len(app.screen.query_one("CommandList").options)
            ),
            5,
            "hits",
        )
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.panel.live and app.panel.live.finished, 5, "the run")
        assert app.panel.live.experiment == "montecarlo"
        await pilot.press("ctrl+p")
        await pilot.press(*"theme: nord")
        await wait_for(pilot, lambda: len(app.screen.query_one("CommandList").options), 5)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.theme == "nord", 5, "the theme")


async def test_the_palette_finds_an_exercise_by_the_id_the_cli_takes(tmp_path, monkeypatch):
    """`ddp-overlap` as typed for `gpulab ex check`: the title ("Overlap a bucket's all-reduce ...") has no
    hyphen, so it is the id, shown under each hit, that matches."""
    monkeypatch.setenv("GPULAB_WORKDIR", str(tmp_path))
    app = fake_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        await pilot.press("ctrl+p")
        await pilot.press(*"ddp-overlap")
        await wait_for(
            pilot, lambda: len(app.screen.query_one("CommandList").options), 5, "a hit by the id"
        )
        await pilot.press("enter")
        await wait_for(
            pilot,
            lambda: getattr(app.exercises.current, "id", None) == "ddp-overlap",
            10,
            "the exercise opened",
        )


async def test_live_resize_never_crashes():
    app = fake_app(hold=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("r")
        for size in [(250, 70), (60, 20), (100, 30), (99, 29), (160, 48), (80, 24), (250, 70)]:
            await pilot.resize_terminal(*size)
            await pilot.pause()
            assert app.is_running
            assert app.screen.compact == (size[0] < 100 or size[1] < 30)
        app.runner.release()
        await wait_for(pilot, lambda: app.panel.live.finished, 5)
        assert app.panel.live.status == ev.RESULT


async def test_quit_keys_shut_the_runner_down():
    for key in ("q", "ctrl+c"):
        app = fake_app()
        async with app.run_test(size=(100, 30)) as pilot:
            await ready(pilot)
            runner = app.runner
            await pilot.press(key)
            await wait_for(pilot, lambda a=app: not a.is_running, 5, f"exit on {key}")
        assert runner.shut_down


def test_no_color_is_honoured(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert GpuLabApp().no_color
    monkeypatch.delenv("NO_COLOR")
    assert not GpuLabApp().no_color


def two_gpu_app(inventory: Any = None) -> tuple[GpuLabApp, Any, Any]:
    """The lab on the two-GPU fake NVML, its worker reporting `inventory` (both GPUs)."""
    sampler, fake = fake_sampler("two-gpus", manual=True)
    inv = inventory(fake) if callable(inventory) else worker_inventory(fake)
    app = GpuLabApp(runner_factory=lambda **kw: FakeRunner(inventory=inv, **kw), sampler=sampler)
    return app, sampler, fake


async def sample(pilot, sampler) -> None:
    gauge = pilot.app.query_one("#memory-gauge")
    before = gauge.model.updates
    sampler.sample_now()
    await wait_for(pilot, lambda: gauge.model.updates > before, 5, "a frame")
    await pilot.pause()


def gauge_text(app: GpuLabApp) -> str:
    return app.query_one("#memory-gauge").render().plain


async def test_selecting_gpu_1_runs_there_and_the_gauge_follows():
    app, sampler, _fake = two_gpu_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        await sample(pilot, sampler)
        gauge = app.query_one("#memory-gauge")
        assert gauge.model.nvml_index == 0 and "/80.0 GiB" in gauge_text(app)
        options = app.query_one("#gpu-list", OptionList)
        await wait_for(pilot, lambda: options.option_count == 2, 5, "the GPU list")
        options.focus()
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: app.device == 1, 5, "the selection")
        assert any("Runs now go to GPU 1" in n for n in notes(app))
        # The gauge shows GPU 1 at once (NVML's figures of the A100, its label), not GPU 0's.
        assert gauge.model.nvml_index == 1
        text = gauge_text(app)
        assert text.startswith("cuda:1 ") and "0.5/40.0 GiB" in text and "/80.0" not in text
        await sample(pilot, sampler)
        assert "0.5/40.0 GiB" in gauge_text(app)
        await pilot.press("r")
        await wait_for(pilot, lambda: app.panel.live and app.panel.live.finished, 5, "the run")
        assert app.panel.live.status == ev.RESULT
        assert [job.device for job in app.runner.jobs] == [1]


async def test_the_gauge_starts_on_the_workers_cuda_0():
    def only_second(fake):
        inv = worker_inventory(fake)
        inv["devices"] = [{**inv["devices"][1], "index": 0}]  # CUDA_VISIBLE_DEVICES=1
        return inv

    app, sampler, _fake = two_gpu_app(only_second)
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        await sample(pilot, sampler)
        gauge = app.query_one("#memory-gauge")
        await wait_for(pilot, lambda: gauge.model.nvml_index == 1, 5, "the gauge to follow")
        assert gauge_text(app).startswith("cuda:0 ") and "/40.0 GiB" in gauge_text(app)
        assert app.device is None  # runs keep the worker's default device, CUDA 0
        assert not any("Runs now go" in n for n in notes(app))


async def test_the_sample_period_reaches_the_sampler(monkeypatch):
    import gpulab.telemetry.sampler as sampler_mod

    given, _ = fake_sampler("full", manual=True)
    shared, _ = fake_sampler("full", manual=True)
    monkeypatch.setattr(sampler_mod, "_shared", shared)  # what the panes use when given none
    for sampler, app in (
        (given, GpuLabApp(runner_factory=FakeRunner, sampler=given, sample_period=2.0)),
        (shared, GpuLabApp(runner_factory=FakeRunner, sample_period=2.0)),
    ):
        assert sampler.interval == 0.5
        async with app.run_test(size=(100, 30)) as pilot:
            await ready(pilot)
            assert sampler.interval == 2.0
            assert app.query_one("#memory-gauge").sampler is sampler
            assert app.query_one("#gpu-info").sampler is sampler


def footer_keys(app: GpuLabApp) -> dict[str, str]:
    """Footer keys wholly on screen: key -> description."""
    footer = app.screen.query_one("Footer")
    right = footer.region.right
    return {
        k.key: k.description
        for k in footer.query("FooterKey")
        if k.region.width and k.region.right <= right
    }


async def test_quit_is_in_the_footer_in_every_focus_state_at_80x24():
    app = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        screen = app.screen
        states = 0
        for pane in PANES:
            screen.show_pane(pane)
            await pilot.pause()
            focusable = [
                w for w in app.query(f"#shell-{pane} *") if w.can_focus and w.display and w.visible
            ]
            for widget in [None, *focusable]:
                if widget is None:
                    screen.set_focus(None)
                else:
                    widget.focus()
                typing = isinstance(widget, Input)  # q types a letter there: ^q is shown

                def quit_shown(typing: bool = typing) -> bool:
                    keys = footer_keys(app)
                    quit_keys = {k for k, what in keys.items() if what == "Quit"}
                    want = [{"ctrl+q"}] if typing else [{"q"}, {"ctrl+q"}]
                    return quit_keys in want and "f1" in keys

                await wait_for(pilot, quit_shown, 5, f"quit in the footer: {pane} {widget}")
                states += 1
        assert states >= 10


async def test_the_footer_is_rebuilt_only_when_its_keys_change():
    """A change of the active bindings that shows the same keys keeps the footer's widgets
    (rebuilding and restyling them took most of a pane switch's CPU at 80x24); one that shows
    other keys rebuilds it with them."""
    app = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        screen = app.screen
        await wait_for(pilot, lambda: "q" in footer_keys(app), 5, "the footer keys")
        before = list(screen.query("FooterKey"))
        screen.bindings_updated_signal.publish(screen)
        screen.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        assert list(screen.query("FooterKey")) == before
        screen.show_pane("lessons")
        await wait_for(
            pilot, lambda: "r" in footer_keys(app) and "n" in footer_keys(app), 5, "lesson keys"
        )
        assert not set(screen.query("FooterKey")) & set(before)


async def test_lessons_pane_footer_keeps_run_cancel_and_quit_at_80x24():
    app = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("tab", "tab", "tab")
        assert app.screen.current == "lessons"
        await wait_for(
            pilot, lambda: app.focused and app.query_one("#lessons") in app.focused.ancestors, 5
        )
        want = {"r", "escape", "q", "f1", "tab", "n"}  # n: the pane's keys fill what is left
        await wait_for(pilot, lambda: want <= set(footer_keys(app)), 5, "the footer keys")


async def test_ctrl_q_quits_from_a_form_field():
    app = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("down")
        assert isinstance(app.focused, Input)
        runner = app.runner
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: not app.is_running, 5, "exit on ctrl+q")
    assert runner.shut_down


@pytest.mark.parametrize("size", SIZES)
async def test_a_param_error_is_shown_whole(size):
    app = fake_app()
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        app.panel.form.set_values({"samples": "a great many please"})
        await pilot.pause()
        field = app.query_one("#field-samples")
        note = app.query_one("#field-samples .param-note", Static)
        assert field.error and note.has_class("-error")
        lines = note.render_lines(note.region.reset_offset)
        shown = " ".join(" ".join(strip.text.split()) for strip in lines)
        assert " ".join(field.error.split()) in shown, shown
        assert "…" not in shown
        pane = app.query_one("#shell-experiments").region
        assert pane.contains_region(note.region)
        if size == (80, 24):  # narrow: the error takes the line below the field
            assert note.region.y > app.query_one("#param-samples").region.y


async def test_an_uncalibrated_device_is_calibrated_at_warm_up_with_progress():
    """A handshake that says the ceilings are not cached starts `calibrate` (cache-filling, not a
    re-measure) right away, with its progress beside the worker, so the first check reads them."""

    async def calibrate(job, emit):
        emit(frozen(ev.ACCEPTED, job.id, experiment=job.experiment, params=job.params))
        emit(frozen(ev.PROGRESS, job.id, fraction=0.5, message="copy"))
        await job.released.wait()
        emit(frozen(ev.RESULT, job.id, result={}))

    app = fake_app(calibrated=False, script=calibrate)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.runner is not None and app.runner.jobs, 10, "a job")
        job = app.runner.jobs[0]
        assert (job.experiment, job.params["remeasure"]) == ("calibrate", False)
        status = lambda: str(app.query_one("#worker-status").render())  # noqa: E731
        await wait_for(pilot, lambda: "calibrating this device's ceilings (once): 50%" in status())
        app.runner.release()
        await wait_for(pilot, lambda: "ceilings calibrated in" in status(), 5, "calibrated")
        assert "pid 4242" in status()


async def test_a_calibrated_device_starts_no_job():
    app = fake_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        await pilot.pause(0.2)
        assert app.runner.jobs == []
