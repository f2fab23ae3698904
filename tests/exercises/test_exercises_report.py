"""The verdict's list of input sets stays short: the sets' descriptions once filled six lines of
an 80x24 verdict and pushed the speed figures below the fold."""

from __future__ import annotations

from gpulab.app.widgets.verdict import verdict_text
from gpulab.exercises.report import short_case, verdict_lines
from gpulab.exercises.run_check import CaseRow, CheckResult

ODD = "(odd: one value has no partner at the first level)"


def result(passed_last: bool) -> CheckResult:
    cases = [CaseRow(f"n={n} {ODD}", True) for n in (31, 33, 1023, 1025)]
    cases.append(CaseRow(f"n=12295 {ODD}", passed_last, message="" if passed_last else "off"))
    verdict = "pass" if passed_last else "fail"
    message = "all 5 correct" if passed_last else f"n=12295 {ODD}: tree_sum is off by 1.0"
    return CheckResult("tree-reduction", verdict, message, 7, "x.py", cases=cases)


def test_short_case_drops_only_the_description():
    assert short_case(f"n=31 {ODD}") == "n=31"
    assert short_case("n=4194304") == "n=4194304"
    assert short_case("rows=3 (a (nested) note)") == "rows=3"


def test_the_lists_name_sets_briefly_and_the_failed_one_in_full():
    lines = verdict_lines(result(True), name="tree-reduction")
    assert "  input sets: n=31 ok, n=33 ok, n=1023 ok, n=1025 ok, n=12295 ok" in lines
    assert ODD not in "\n".join(lines)
    shown = verdict_text(result(True)).plain
    assert "✓ n=31 · n=33 · n=1023 · n=1025 · n=12295\n" in shown and ODD not in shown

    failed = verdict_text(result(False)).plain
    assert f"✗ n=12295 {ODD}" in failed  # the set to look at keeps its description
    assert "✓ n=31 · n=33 · n=1023 · n=1025\n" in failed


def test_the_tui_says_a_gpu_timing_ran_behind_the_spin_without_a_line_more() -> None:
    from gpulab.app.widgets.verdict import speed_text

    timing = {
        "metric": "GB/s",
        "learner": {"value": 2700.0, "runs": 20},
        "fraction": 0.9,
        "ceiling": {"name": "copy", "value": 3000.0, "device": "d"},
        "grades": {"bronze": 0.3, "silver": 0.6, "gold": 0.85},
        "yardstick": {"label": "expert", "file": "expert.py", "value": 2850.0, "fraction": 0.95},
        "of_yardstick": {"figure": 0.947, "lo": 0.941, "hi": 0.953, "n": 15},
    }
    on_cpu = speed_text(timing).plain
    assert "spin" not in on_cpu
    shown = speed_text({**timing, "lead_us": 200.0}).plain
    assert "behind a 200 us spin" in shown
    assert "you/expert 0.95 [0.94-0.95]" in shown  # the grade's figure, with its interval
    assert len(shown.splitlines()) == len(on_cpu.splitlines())
    assert max(len(line) for line in shown.splitlines()) <= 76  # inside an 80-column pane
