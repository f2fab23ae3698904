"""profile-step on a GPU: the reference passes with its syncs, kernels and speed measured, every
wrong/ file is rejected with its message, every right/ file passes, and the experiment shows
what the lesson says (syncs gone, kernels and time down by an order of magnitude)."""

from __future__ import annotations

import pytest

from gpulab.exercises.loader import load_catalog

pytestmark = pytest.mark.gpu

EX = load_catalog().get("profile-step")


@pytest.fixture(scope="module")
def gpu_inventory():
    from gpulab.core.devices import detect

    inv = detect()
    if not inv.available("torch-cuda"):
        pytest.skip("needs a GPU with torch")
    return inv


def _check(path, seed, inventory):
    from gpulab.exercises.job import check_inline

    return check_inline(EX.id, str(path), seed, quick=False, inventory=inventory)[0]


def _profile_row(result):
    return next(c for c in result.cases if c.name.startswith("profile and time"))


def test_gpu_reference_passes_with_no_sync_and_the_starter_fails(gpu_inventory):
    result = _check(EX.solution_path, 5, gpu_inventory)
    assert result.verdict == "pass", result.message
    assert _profile_row(result).passed
    starter = _check(EX.starter_path, 5, gpu_inventory)
    assert starter.verdict == "fail" and "waits for the GPU" in starter.message, starter.message
    assert "cudaStreamSynchronize" in starter.message


@pytest.mark.parametrize("wrong", EX.wrong, ids=lambda w: w.path.name)
def test_gpu_wrong_solutions_fail_with_their_message(wrong, gpu_inventory):
    result = _check(wrong.path, 7, gpu_inventory)
    assert result.verdict == "fail", f"{wrong.path.name} passed"
    assert wrong.matches(result.message), f"{wrong.path.name}: {result.message}"


@pytest.mark.parametrize("path", sorted((EX.folder / "right").glob("*.py")), ids=lambda p: p.name)
def test_gpu_right_solutions_pass(path, gpu_inventory):
    result = _check(path, 2024, gpu_inventory)
    assert result.verdict == "pass", f"{path.name}: {result.message}"


def test_gpu_experiment_shows_the_syncs_go_and_the_step_speeds_up(gpu_inventory):
    from gpulab.benchmark.targets import PROFILE_STEP_SPEEDUP
    from gpulab.experiments.inline import run_job

    events = []
    run_job("inline", "profile-step", {}, gpu_inventory, events.append)
    assert events[-1]["type"] == "result", events[-1]
    s = events[-1]["result"]["summary"]
    print(s)
    assert s["gpu"] and s["syncs_per_step"]["fixed"] == 0
    assert s["syncs_per_step"]["slow"] >= 8  # one .item() per parameter, 4 layers
    assert s["kernels_per_step"]["slow"] > 10 * s["kernels_per_step"]["fixed"] > 0
    assert s["speedup"] >= PROFILE_STEP_SPEEDUP
    assert all(v["passed"] for v in events[-1]["result"]["verdicts"])
