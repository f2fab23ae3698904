"""A check's figure above its ceiling: measured again, as an experiment's row is, then explained.

"A percent of peak above 100 is a bug in the row or the ceiling until explained": the CPU box
showed torch.sum at 116% of the copy ceiling beside a learner's tree reduction, with no word.
"""

from __future__ import annotations

import time

import pytest
from test_exercises_engine import cat, check, double  # noqa: F401 - fixtures

from gpulab.app.widgets.verdict import verdict_text
from gpulab.core import peaks as pk
from gpulab.core.devices import detect
from gpulab.exercises.report import verdict_lines


def seed_copy_ceiling(gbs: float) -> None:
    """A full CPU calibration in the test's data dir whose copy figure is `gbs`."""
    key = pk.device_key(detect(), 0, cpu=True)
    peaks = pk.Peaks(key=key, device="CPU (seeded low)", cpu=True, copy_gbs=gbs)
    peaks.matmul_tflops = {"fp32": 100.0}
    peaks.measured_at = time.time()
    pk._write(peaks)


@pytest.fixture(autouse=True)
def fresh_remeasures(monkeypatch):
    monkeypatch.setattr(pk, "_REMEASURED", {})  # once per process: each test starts anew


def test_a_ceiling_beaten_is_measured_again_and_the_figure_judged_against_the_new_one(double):  # noqa: F811
    seed_copy_ceiling(0.001)  # far below anything a CPU copies at
    result = check(double, double.solution_path)
    assert result.passed, result.message
    t = result.timing
    assert t["ceiling"]["remeasured"] is True
    assert t["ceiling"]["value"] > 0.1  # the measured figure replaced the seeded one
    assert t["fraction"] == pytest.approx(t["learner"]["value"] / t["ceiling"]["value"])
    assert pk.cached(detect(), 0, cpu=True).copy_gbs == t["ceiling"]["value"]  # and kept


def test_a_figure_still_above_the_ceiling_says_why_in_the_cli_and_the_tui(
    monkeypatch,
    double,  # noqa: F811
):
    seed_copy_ceiling(0.001)
    calls = []
    monkeypatch.setattr(pk, "remeasure", lambda ctx, peaks, what: calls.append(what) or False)
    result = check(double, double.solution_path)
    t = result.timing
    assert calls == ["copy"] and t["ceiling"]["remeasured"] is False
    note = t["ceiling"]["note"]
    assert note.endswith("could not be re-measured: re-calibrate (gpulab run calibrate)"), note
    assert "% of the calibrated copy ceiling" in note
    assert f"    above 100%: {note}" in verdict_lines(result, name="double")
    assert f"above 100%: {note}" in verdict_text(result).plain
    assert t["grade"] == "pass" and "not plausible" in t["suspect"]  # and never graded
    # The causes the checks rule out are named, and the ones left to suspect
    assert "neither skipped work nor a launch timed without its kernel" in t["suspect"]


def test_a_figure_under_the_ceiling_measures_nothing_and_says_nothing(monkeypatch, double):  # noqa: F811
    seed_copy_ceiling(1e9)
    monkeypatch.setattr(pk, "remeasure", lambda *a: pytest.fail("re-measured under the ceiling"))
    t = check(double, double.solution_path).timing
    assert t["ceiling"]["note"] == "" and t["ceiling"]["remeasured"] is False
    assert t["fraction"] < 1.0
