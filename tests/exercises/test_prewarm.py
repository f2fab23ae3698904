"""Preparing an exercise's check when it is opened (`exercise-prepare`, gpulab.exercises.prewarm).

On a CPU: which exercises are worth preparing, the job's reasons for doing nothing, that it runs
the reference through one quick check once per worker process, that the TUI asks for it when an
exercise is opened (once per worker), and that `Checker.prepare` submits it. On a GPU: a real
preparation of a CuPy exercise, then the same exercise already prepared.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import cupy_available
from test_app import wait_for
from test_app_exercises import fake_app, open_vector_add

from gpulab.core.devices import Backend, Inventory
from gpulab.ex.session import Checker
from gpulab.exercises import prewarm
from gpulab.exercises.loader import find
from gpulab.exercises.run_check import CheckResult
from gpulab.experiments.base import Context
from gpulab.testing.fake_runner import FakeRunner, cpu_inventory


@pytest.fixture(autouse=True)
def _fresh_process_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prewarm, "_PREPARED", set())


def test_worth_preparing_every_exercise_but_ddp() -> None:
    assert prewarm.worth_preparing(find("histogram"))  # CuPy: its check compiles kernels
    assert prewarm.worth_preparing(find("honest-timing"))  # torch on the GPU
    assert prewarm.worth_preparing(find("tree-reduction"))  # needs: cpu, on the GPU if there
    assert not prewarm.worth_preparing(find("ddp"))  # PREPARE = False: it starts processes


def test_asking_leaves_no_check_module_behind() -> None:
    """The question loads the check to read PREPARE; a module left in sys.modules outlived its
    job, and on a GPU worker a learner's check-module-rebound shortcut found that leftover among
    the grader's and failed with the wrong message (the exercises bench on 2x H200)."""
    import sys

    def checks() -> set[str]:
        return {name for name in sys.modules if name.startswith("_gpulab_check_")}

    before = checks()
    for ex_id in ("first-kernel", "tree-reduction", "ddp"):
        prewarm.worth_preparing(find(ex_id))
    assert checks() == before


def _gpu_context() -> Context:
    inv = Inventory(
        backends={
            "numpy": Backend("numpy", True, "2.0.0"),
            "torch-cuda": Backend("torch-cuda", True, "2.5.0"),
            "cupy": Backend("cupy", True, "14.0.0"),
        }
    )
    return Context(inventory=inv)


def test_job_says_why_it_did_nothing_without_a_gpu() -> None:
    ctx = Context(inventory=Inventory.from_dict(cpu_inventory()))
    result = prewarm.EXPERIMENT.run(ctx, {"exercise": "honest-timing"})
    assert result.summary["prepared"] is False
    assert "no GPU" in result.summary["why"]
    assert "not prepared" in result.headline


def test_job_waits_for_the_calibration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prewarm.peaks, "ready", lambda inventory, device_index=0: False)
    ran: list[Any] = []
    monkeypatch.setattr(prewarm, "run_check", lambda *a, **k: ran.append(a))
    result = prewarm.EXPERIMENT.run(_gpu_context(), {"exercise": "histogram"})
    assert result.summary == {**result.summary, "prepared": False}
    assert "not calibrated" in result.summary["why"] and ran == []


def test_job_runs_the_reference_quick_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prewarm.peaks, "ready", lambda inventory, device_index=0: True)
    ran: list[tuple[str, Path, bool]] = []

    def fake_check(ex: Any, path: Path, seed: int, actx: Any, **kw: Any) -> CheckResult:
        ran.append((ex.id, path, actx.quick))
        return CheckResult(ex.id, "pass", "ok", seed, str(path))

    monkeypatch.setattr(prewarm, "run_check", fake_check)
    ctx = _gpu_context()
    first = prewarm.EXPERIMENT.run(ctx, {"exercise": "histogram"})
    assert first.summary["prepared"] is True and first.summary["reference_verdict"] == "pass"
    ex = find("histogram")
    assert ran == [("histogram", ex.solution_path, True)]
    again = prewarm.EXPERIMENT.run(ctx, {"exercise": "histogram"})
    assert again.summary["prepared"] is False and "already prepared" in again.summary["why"]
    assert len(ran) == 1
    other = prewarm.EXPERIMENT.run(ctx, {"exercise": "ddp"})
    assert "compiles nothing" in other.summary["why"] and len(ran) == 1


async def test_checker_prepare_submits_the_job() -> None:
    runner = FakeRunner()
    await runner.start()
    checker = Checker(client=runner)
    seconds = await checker.prepare(find("histogram"))
    assert seconds >= 0.0
    assert [j.params["exercise"] for j in runner.preparations] == ["histogram"]
    assert runner.jobs == []  # kept apart from the checks a script answers


async def test_opening_an_exercise_prepares_it_once_per_worker() -> None:
    app = fake_app()
    async with app.run_test(size=(120, 40)) as pilot:
        ex = await open_vector_add(pilot)
        runner = app.runner
        await wait_for(pilot, lambda: len(runner.preparations) == 1, 5, "a preparation")
        assert runner.preparations[0].params == {"exercise": "vector-add"}
        ex.close_exercise()
        ex.open_exercise("vector-add")
        await pilot.pause(0.2)
        assert len(runner.preparations) == 1  # the same worker has it already
        runner.crash()  # a new worker (a new pid) has compiled nothing yet
        await wait_for(pilot, lambda: len(runner.preparations) == 2, 5, "a new worker's")


async def test_real_worker_knows_the_job() -> None:
    """The worker registers `exercise-prepare` at warm-up (serve.py imports it): on a machine
    without a GPU it answers at once, saying why it did nothing."""
    async with Checker() as checker:
        hello = await checker.client.wait_ready(120)
        inv = Inventory.from_dict(hello["inventory"])
        if inv.has_gpu:
            pytest.skip("the GPU path is test_gpu_preparation_compiles_then_is_kept")
        await checker.prepare(find("vector-add"))
        final = checker.last_final
        assert final.get("type") == "result", final
        assert "no GPU" in final["result"]["summary"]["why"]


@pytest.mark.gpu
async def test_gpu_preparation_compiles_then_is_kept() -> None:
    if not cupy_available():
        pytest.skip("needs CuPy on a GPU")
    ex = find("histogram")
    async with Checker() as checker:
        hello = await checker.client.wait_ready(600)
        if not hello.get("calibrated"):
            job = await checker.client.submit("calibrate", {"remeasure": False})
            async for _event in job:
                pass
        first = await checker.prepare(ex)
        summary = (checker_final(checker) or {}).get("summary") or {}
        assert summary.get("prepared") is True, summary
        assert summary.get("reference_verdict") == "pass", summary
        again = await checker.prepare(ex)
        summary = (checker_final(checker) or {}).get("summary") or {}
        assert "already prepared" in summary.get("why", ""), summary
        assert again < first
        result, _ = await checker.check(ex, ex.solution_path, 7)
        assert result.passed, result.message


def checker_final(checker: Checker) -> dict[str, Any] | None:
    """The result of the checker's last preparation."""
    final = checker.last_final
    return final.get("result") if final else None


async def test_a_check_pressed_during_the_preparation_says_what_it_waits_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = fake_app()
    async with app.run_test(size=(120, 40)) as pilot:
        ex = await open_vector_add(pilot)
        link = app.worker_link
        await wait_for(pilot, lambda: not link.ahead, 5, "the fake preparation's end")
        assert app.waiting_for == ""
        # what the link's state says while the worker prepares an exercise
        app.waiting_for = "vector-add's preparation (its check's kernels compile once)"
        shown: list[str] = []
        real = ex.verdict.show_progress
        monkeypatch.setattr(
            ex.verdict, "show_progress", lambda f, m: (shown.append(m), real(f, m))[1]
        )
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: bool(shown), 5, "the first progress line")
        assert (
            shown[0] == "waiting for vector-add's preparation (its check's kernels compile once)…"
        )
