"""The experiment panel switched many times within one frame keeps exactly one form: the last.

Each switch removes the previous form and mounts a new one; the removals finish later. The
panel removes only the form it mounted last, so no form is removed twice and none is left.
"""

from __future__ import annotations

from test_app_modal import _app, _main_ready

from gpulab.app.widgets.param_form import ParamForm
from gpulab.experiments.registry import all_experiments


async def test_rapid_experiment_switches_leave_one_form():
    ids = list(all_experiments())[:6]
    app = _app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _main_ready(pilot)
        panel = app.panel
        for exp in ids + ids[:2]:
            panel.load(exp, {})  # no await between: the removals overlap
        for _ in range(200):
            forms = list(panel.query_one("#form-holder").query_children(ParamForm))
            if len(forms) == 1:
                break
            await pilot.pause(0.02)
        assert forms == [panel.form] and panel.experiment_id == ids[1]
        assert app._exception is None and app.is_running
