"""`exercise-check`: the grader as a hidden experiment, so a check runs in the worker as a job.

The runner's machinery then applies unchanged: events (progress per input set, a verdict row per
set, the timing rows, the result), cooperative cancel and, past the exercise's time limit, a
killed and replaced worker; a crash or an illegal address in the learner's code is survived like
an experiment's. Importing this module registers the job with the experiments' registry
(`register_hidden`), which resolves its id but lists it nowhere.
Importing this module imports no torch and no CuPy.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from pathlib import Path
from typing import Any

from gpulab.core.devices import detect
from gpulab.core.params import SEED_MAX, Bool, Int, ParamError, ParamSet, Text
from gpulab.core.results import RETIRE_WORKER, Measurement, Result, Verdict
from gpulab.emulator import session as emulator
from gpulab.exercises import api
from gpulab.exercises.loader import UnknownExercise, find
from gpulab.exercises.outcome import CHECK_JOB, EMULATED_DEVICE, EMULATED_LABEL, outcome
from gpulab.exercises.report import others_text
from gpulab.exercises.run_check import run_check
from gpulab.experiments.base import Context, Experiment, ExperimentError
from gpulab.experiments.inline import run_job
from gpulab.experiments.registry import register_hidden
from gpulab.telemetry.window import ClockWindow

EXPERIMENT_ID = CHECK_JOB
CPU_FILL_BYTES = 64 << 20  # past any CPU's last-level cache, small enough for a laptop
GPU_FILL_BYTES = 256 << 20  # several times an H100's or H200's L2; launch overhead ~5% of a call
CPU_CHECK_BYTES = 16 << 20  # the correctness cases' big size (see api.Context.check_bytes)
# The correctness cases' big size on a GPU: 8M float32 values are ~30 times one full wave of
# an H100 (132 SMs x 2048 threads), enough for grid-stride and multi-wave bugs to show, and the
# host's share of a check (drawing, the float64 reference, the comparison) stays under 0.3 s.
GPU_CHECK_BYTES = 32 << 20


def exercise_context(ctx: Context, seed: int, quick: bool, *, emulated: bool = False) -> Any:
    """The api.Context a check runs in: seed, quick mode, GPU or CPU, and this device's sizes for
    the cache-flush buffer and the large correctness case (the emulator's own, where the check
    runs there: no timing, so no quick mode either)."""
    import numpy as np

    gpu = bool(ctx.has_cuda)
    fill, check = CPU_FILL_BYTES, CPU_CHECK_BYTES
    for d in ctx.inventory.devices:
        if d.kind == "cuda" and d.index == ctx.device_index and (gpu or ctx.has_cupy):
            fill = int(min(GPU_FILL_BYTES, max(16 << 20, (d.memory_total or 0) // 16)))
            check = min(GPU_CHECK_BYTES, fill)
    if emulated:
        gpu, fill, check, quick = False, emulator.CHECK_BYTES, emulator.CHECK_BYTES, False
    return api.Context(
        rng=np.random.default_rng(seed),
        seed=seed,
        gpu=gpu,
        cupy=bool(ctx.has_cupy) and not emulated,
        device="cpu" if emulated else ctx.torch_device,
        device_index=ctx.device_index,
        fill_bytes=fill,
        check_bytes=check,
        quick=quick,
    )


class ExerciseCheck(Experiment):
    """The hidden experiment that checks, times and grades a learner's exercise file in the
    worker."""

    id = EXPERIMENT_ID
    title = "Exercise check"
    summary = "Checks, times and grades a learner's exercise file (gpulab ex check)"
    params = ParamSet(
        (
            Text("exercise", "vector-add", "exercise id"),
            Text("path", "-", "the learner's file"),
            Int("seed", 0, "the seed of the input sets", min=0, max=SEED_MAX),
            Bool("quick", False, "small sizes and few timing runs (tests)"),
            Bool("first_failure", False, "stop at the first wrong input set (wrong/ sweeps)"),
        )
    )

    def _exercise(self, name: str) -> Any:
        try:
            return find(name)
        except UnknownExercise as exc:
            raise ParamError("exercise", name, str(exc)) from None

    def takes_ranks(self, params: dict[str, Any]) -> bool:
        """Whether this check runs the learner's function on ranks (a collective exercise):
        the worker keeps ranks standing by for it (gpulab.core.ranks)."""
        return bool(self._exercise(str(params.get("exercise", ""))).ranked)

    def check(self, params: dict[str, Any], inventory: Any) -> None:
        """Refuse an exercise this machine cannot run (e.g. a CuPy one without a GPU)."""
        require_runnable(self._exercise(params["exercise"]), inventory)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Check, time and grade the exercise file in `params`; the Result carries the
        CheckResult."""
        ex = self._exercise(params["exercise"])
        result = self.new_result(ctx, params)
        result.lesson = ex.lesson
        emulated = ex.emulated(ctx.inventory)
        actx = exercise_context(ctx, int(params["seed"]), bool(params["quick"]), emulated=emulated)

        def on_case(i: int, n: int, row: Any) -> None:
            state = "ok" if row.passed else "WRONG"
            ctx.progress((i + 1) / (n + 1), f"{row.name}: {state}")

        where = " on the CUDA emulator" if emulated else ""
        ctx.progress(0.0, f"checking {ex.id}{where} (seed {actx.seed})")
        if emulated:  # correctness only: no timing, and CuPy is the emulator's for this check
            scope: Any = emulator.emulating(actx.seed)
            graded = dataclasses.replace(ex, timed=False)
        else:
            scope, graded = contextlib.nullcontext(), ex
        # Another program's kernels beside the check can move a timing it compares (a learner's
        # own timer against ours, a saving over a baseline): a failure says so, with the pid.
        # Only the start is noted here; NVML is asked only when a check fails.
        started_us = int(time.time() * 1e6)
        with scope:
            check = run_check(
                graded,
                Path(params["path"]),
                actx.seed,
                actx,
                exp_ctx=ctx,
                on_case=on_case,
                first_failure=bool(params.get("first_failure", False)),
            )
        if (actx.gpu or actx.cupy) and not emulated and not check.passed:
            window = ClockWindow(ctx.inventory, actx.device_index).open(0.0, since_us=started_us)
            window.close(0.0)
            seen = window.summary()
            if seen.get("shared"):
                check.message += (
                    f" (another process used this GPU during the check: {others_text(seen)}; "
                    "a timing the check compared may be off: check again when it is idle)"
                )
        if emulated:
            check.emulated, check.device = True, EMULATED_DEVICE
            if check.passed:
                check.message += f"; {EMULATED_LABEL}"
        for row in check.cases:
            if row.passed is not None:
                result.verdicts.append(
                    Verdict(
                        contender=row.name,
                        error=row.max_error if row.max_error is not None else 0.0,
                        tolerance=0.0,
                        passed=bool(row.passed),
                        metric=row.message or "correct",
                        reference="float64 or exact reference",
                    )
                )
        for m in timing_rows(check.timing):
            ctx.measurement(m)
            result.measurements.append(m)
        result.summary["check"] = check.to_dict()
        if check.retire:
            result.summary[RETIRE_WORKER] = check.retire
        result.explanation = check.message
        return self.finish(result)


def timing_rows(timing: dict[str, Any] | None) -> list[Measurement]:
    """The learner's and the library's timings as results-table rows."""
    if not timing:
        return []
    rows = []
    ceiling = (timing.get("ceiling") or {}).get("value")
    for who, block in (("your code", timing.get("learner")), ("library", timing.get("library"))):
        if not block:
            continue
        value = block.get("value")
        rows.append(
            Measurement(
                contender=who if who != "library" else f"library: {block.get('name', '')}",
                size=timing.get("note", ""),
                time_median_s=block["median_s"],
                time_min_s=block["min_s"],
                time_max_s=block.get("max_s", block["median_s"]),
                runs=block["runs"],
                throughput=value,
                unit=timing["metric"],
                percent_of_peak=100.0 * value / ceiling if value and ceiling else None,
                peak_name=(timing.get("ceiling") or {}).get("name", ""),
            )
        )
    return rows


EXPERIMENT = ExerciseCheck()
register_hidden(EXPERIMENT)


def require_runnable(ex: Any, inventory: Any) -> None:
    """ExperimentError, before any work, where this machine cannot run `ex` (a CuPy exercise
    without a GPU): the check, the profile and the preparation refuse alike."""
    why = ex.unavailable(inventory)
    if why:
        raise ExperimentError(f"{ex.id} {why}")


def check_inline(
    exercise: str,
    path: str,
    seed: int,
    *,
    quick: bool = False,
    inventory: Any = None,
    first_failure: bool = False,
) -> tuple[Any, list[dict[str, Any]]]:
    """Run one check in this process (tests, the bench's correctness sweep): (CheckResult, events)."""
    events: list[dict[str, Any]] = []
    params = {
        "exercise": exercise,
        "path": str(path),
        "seed": seed,
        "quick": quick,
        "first_failure": first_failure,
    }
    run_job("inline", EXPERIMENT_ID, params, inventory or detect(), events.append, quick=quick)
    return outcome(events[-1], exercise, str(path), seed), events
