"""honest-timing on the CPU: its verdicts cannot be decided by noise.

The exercise needs a GPU (its lesson is the synchronize), but its CPU case runs anywhere: the
grader is called here with a CPU context, so this box checks the CPU case end to end while
another process keeps a core busy, and the comparison's rules on made-up figures (bimodal noise,
a cold first call, other work, a GPU's host slack). The GPU cases run under -m gpu in
test_exercises_catalog.py and, 50 in a row, in test_exercises_repeat.py (GPULAB_LONG=1).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpulab.exercises import api
from gpulab.exercises.loader import load_catalog
from gpulab.exercises.run_check import run_check

pytest.importorskip("torch")

EX = load_catalog().get("honest-timing")


def _check_module():
    from gpulab.testing.checks import open_check  # why not importlib: its module doc

    return open_check(EX)


CHECK = _check_module()


def _cpu(seed: int) -> api.Context:
    return api.Context(
        rng=np.random.default_rng(seed), seed=seed, gpu=False, cupy=False, device="cpu", quick=True
    )


def _run(path: Path, seed: int):
    return run_check(EX, path, seed, _cpu(seed))


@pytest.fixture
def busy_core():
    """Another process spinning on one core, as the spare worker or a second check would."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(10)


def test_the_reference_passes_20_checks_in_a_row_with_a_core_busy(busy_core):
    for seed in range(20):
        result = _run(EX.solution_path, 1000 + seed)
        assert result.verdict == "pass", f"seed {1000 + seed}: {result.message}"


@pytest.mark.parametrize("right", sorted((EX.folder / "right").glob("*.py")), ids=lambda p: p.name)
def test_every_right_solution_passes_the_cpu_case_with_a_core_busy(right, busy_core):
    for seed in (7, 2024, 31337):
        result = _run(right, seed)
        assert result.verdict == "pass", f"{right.name}, seed {seed}: {result.message}"


# no-synchronize is wrong on a GPU only; no-clock-cast-widens-range fails there, and its rule is
# tested on the CPU below (a loaded box can make the one CPU case's real span take its guess)
CPU_WRONG = [
    "milliseconds",
    "total-time",
    "no-warmup",
    "more-threads-for-its-calls",
    "lower-precision-for-its-calls",
]


@pytest.mark.parametrize("name", CPU_WRONG)
def test_the_wrong_solutions_fail_the_cpu_case(name):
    wrong = next(w for w in EX.wrong if w.name == name)
    for seed in (7, 2024):
        result = _run(wrong.path, seed)
        assert result.verdict == "fail", f"{name} passed: {result.message}"
        assert wrong.matches(result.message), f"{name}: {result.message}"


def test_the_cpu_case_runs_on_one_thread_and_puts_the_setting_back(tmp_path):
    import torch

    seen = tmp_path / "threads.txt"
    learner = tmp_path / "threads.py"
    learner.write_text(
        EX.solution_path.read_text() + f"\n_orig = time_matmul\n\ndef time_matmul(a, b):\n"
        f"    open({str(seen)!r}, 'a').write(str(torch.get_num_threads()) + ' ')\n"
        "    took = _orig(a, b)\n"
        "    torch.set_num_threads(2)  # the check sets one thread again for its own figure\n"
        "    return took\n"
    )
    before = torch.get_num_threads()
    result = _run(learner, 5)
    assert result.verdict == "pass", result.message
    assert seen.read_text().split() == ["1"] * CHECK.ROUNDS
    assert torch.get_num_threads() == before


def test_an_input_changed_by_the_learner_fails(tmp_path):
    learner = tmp_path / "changes.py"
    learner.write_text(
        EX.solution_path.read_text()
        + "\n_orig = time_matmul\n\ndef time_matmul(a, b):\n    a.mul_(1.5)\n"
        "    return _orig(a, b)\n"
    )
    result = _run(learner, 5)
    assert result.verdict == "fail" and "changed its input a" in result.message


# --- the rules, on made-up figures -------------------------------------------------------------


def _case(device: str = "cpu") -> api.Case:
    ctx = api.Context(
        rng=np.random.default_rng(3), seed=3, gpu=True, cupy=False, device="cuda:0", quick=True
    )
    return next(c for c in CHECK.cases(ctx) if (c.args["device"] == "cpu") == (device == "cpu"))


def _rounds(yours, calls, ours=None, first_calls=None):
    ours = ours or [2e-3] * 10
    out = []
    for i, y in enumerate(yours if isinstance(yours, list) else [yours] * CHECK.ROUNDS):
        out.append(
            {"yours": y, "calls": first_calls if i == 0 and first_calls else calls, "ours": ours}
        )
    return {"rounds": out}


def _verdict(got, device="cpu"):
    return CHECK.compare(None, got, _case(device), None)


def test_a_median_of_bimodal_calls_passes_however_the_load_split_them():
    # Half the calls met a time slice of another process: the median of ten may be either mode,
    # or between them; it is still a figure of those very calls.
    fast, slow = 1.6e-3, 8.0e-3
    calls = [fast, slow] * 6 + [fast]
    for y in (fast, slow, (fast + slow) / 2, sum(calls) / len(calls)):
        assert _verdict(_rounds(y, calls)) is None


def test_milliseconds_total_and_no_synchronize_are_named():
    calls = [2e-3] * 13
    assert "not milliseconds" in _verdict(_rounds(2.0, calls)).message
    assert "not the total" in _verdict(_rounds(10 * 2e-3 * 2.5, calls)).message
    assert "synchronize before" in _verdict(_rounds(20e-6, calls), "gpu").message


def test_a_few_rounds_out_of_range_do_not_decide():
    calls = [2e-3] * 13
    yours = [2e-3, 2e-3, 2e-3, 50e-3, 50e-3]  # two rounds disturbed beyond any honest figure
    assert _verdict(_rounds(yours, calls)) is None
    assert _verdict(_rounds(yours[:2] + [50e-3] * 3, calls)) is not None


def test_one_matmul_in_all_is_the_cold_call():
    bad = _verdict(_rounds(3e-3, [3e-3]))
    assert "multiplied only once" in bad.message and "cold call" in bad.message


def test_a_first_figure_that_included_the_cold_call_fails_and_a_warm_one_passes():
    warm = [2e-3, 2.1e-3, 1.9e-3]
    first = [40e-3, *warm]
    mean_with_cold = sum(first) / len(first)
    bad = _verdict(_rounds([mean_with_cold, 2e-3, 2e-3, 2e-3, 2e-3], warm, first_calls=first))
    assert bad is not None and "included the first, cold call" in bad.message
    assert _verdict(_rounds(2e-3, warm, first_calls=first)) is None
    # A mildly cold CPU call moves a mean by a few percent: no verdict on that.
    mild = [2.4e-3, *warm]
    assert _verdict(_rounds([sum(mild) / 4] + [2e-3] * 4, warm, first_calls=mild)) is None


def test_the_watching_around_each_call_counts_in_the_learners_span():
    # CI's loaded 2-core box, fastest-run.py: the check's comparison of a and b before each call
    # took about 0.7 ms of a busy core, inside the learner's perf_counter and outside the call's.
    # The best of eight such windows (3.36 ms) lies above every call (2.47 to 2.66 ms), but not
    # above every call with its watching, which is what the learner's clock saw.
    calls = [2.47e-3, 2.55e-3, 2.66e-3, 2.5e-3]
    seen = [c + 0.75e-3 for c in calls]
    first_calls, first_seen = [6.81e-3, *calls], [7.5e-3, *seen]
    got = _rounds(3.36e-3, calls, ours=[2.5e-3] * 10, first_calls=first_calls)
    assert "included the first, cold call" in _verdict(got).message  # the calls alone
    for i, rnd in enumerate(got["rounds"]):
        rnd["watched"] = first_seen if i == 0 else seen
    assert _verdict(got) is None
    # The watching widens the span by what it took, not by a factor: a mean over a cold call
    # with a library's set-up in it is still named.
    got["rounds"][0]["watched"] = [40e-3, *seen]
    got["rounds"][0]["yours"] = (40e-3 + sum(seen)) / (1 + len(seen))
    assert "included the first, cold call" in _verdict(got).message


def test_timing_other_work_fails_on_the_fastest_calls():
    calls = [0.4e-3] * 13  # the learner's own matmuls took a fifth of the check's a @ b
    bad = _verdict(_rounds(0.4e-3, calls, ours=[2e-3] * 10))
    assert bad is not None and "time a @ b itself" in bad.message
    assert "accepted 0.25x to 2x" in bad.message


def test_a_loaded_cpu_that_slowed_every_one_of_the_checks_calls_passes_there_only():
    # CI, torch-benchmark.py, four processes on two cores: the check's fifty calls all 6.07 ms
    # or more, the fastest of the learner's many 2.78 ms (0.46x). A GPU has no such load.
    calls, ours = [2.78e-3, *[5.5e-3] * 12], [6.07e-3] * 10
    assert _verdict(_rounds(5.5e-3, calls, ours)) is None
    bad = _verdict(_rounds(5.5e-3, calls, ours), "gpu")
    assert bad is not None and "accepted 0.5x to 2x" in bad.message


def test_the_host_slack_covers_perf_counter_and_synchronize_on_a_short_gpu_call():
    calls, ours = [0.15e-3] * 13, [0.15e-3] * 10
    assert _verdict(_rounds(0.15e-3 * 1.7 + 45e-6, calls, ours), "gpu") is None  # 2.0x in all
    assert _verdict(_rounds(0.15e-3 * 1.7 + 60e-6, calls, ours), "gpu") is not None


def test_the_statement_states_the_checks_numbers():
    text = EX.statement
    for fragment in (
        "five times",
        "one thread",
        "0.5x the fastest to\n  2x the slowest",
        "0.6x the fastest to 1.7x the slowest plus 50 microseconds",
        "1.25x the slowest warm call",
        "between 0.5x and 2x the check's fastest on the GPU (0.25x and 2x\n  on the CPU",
        "float32 matmul precision (TF32 on a GPU), no autocast",
        "within 12.5%",
        "8192 x 6144 by 6144 x 2048 in bfloat16",
    ):
        assert fragment in text, fragment
    assert CHECK.ROUNDS == 5 and CHECK.CPU_THREADS == 1
    assert CHECK.CPU_BOUNDS == (0.5, 2.0) and CHECK.GPU_BOUNDS == (0.6, 1.7)
    assert CHECK.HOST_SLACK_S == 50e-6 and CHECK.COLD_FACTOR == 1.25 and CHECK.WORK_BOUND == 2.0
    assert CHECK.CPU_WORK_FLOOR == 0.25
    assert [p[:3] for p in CHECK.GPU_PLAN] == [
        (2048, 2048, 2048),
        (4096, 4096, 4096),
        (8192, 4096, 4096),
        (8192, 6144, 2048),
    ]


def test_only_matmuls_of_the_operands_dtype_and_device_are_counted():
    """A matmul of a and b cast to complex128 has their shapes and many times the work: counted,
    it widened the span a guessed figure must fall in until a guess with no clock passed
    (wrong/no-clock-cast-widens-range.py; on the CPU's one case a loaded box can widen the real
    span enough for that guess too, so the file runs on a GPU and the rule is tested here)."""
    import torch

    a, b = torch.randn(64, 32), torch.randn(32, 48)
    with CHECK._watching(CHECK._Clock(False), (a, b)) as stamps:
        a @ b
        torch.mm(a, b)
        a.to(torch.complex128) @ b.to(torch.complex128)
        a.double() @ b.double()
        torch.cat([a] * 2) @ b
    assert len(stamps) == 2, stamps
