"""`exercise-prepare`: compile what an exercise's check will need, while the learner reads it.

A check's first run in a worker pays for more than the learner's kernel. CuPy compiles each of
its own kernels on first use (the check's comparisons, the library it times against:
`cupy.bincount`'s reductions went through CUB and took 6.5 s on an H100 with a fresh cache),
torch.compile imports Inductor, Triton imports itself, cuBLAS makes its handle. CuPy keeps what
it compiled on disk; the rest lasts as long as the worker. So when an exercise is opened, the
front end submits this job: it runs the exercise's reference solution through the whole check
on small inputs (quick mode), discarding the verdict. The learner's first check then pays only
for their own code; a check pressed before the preparation ends waits for it, which costs no
more than the compilation it would have done itself.

Nothing here is graded or stored. Each exercise is prepared once per worker process. Importing
this module registers the job with the experiments' registry (`register_hidden`) and imports no
torch and no CuPy.
"""

from __future__ import annotations

import time
from typing import Any

from gpulab.core import peaks
from gpulab.core.params import ParamSet, Text
from gpulab.core.results import Result
from gpulab.exercises.job import exercise_context, require_runnable
from gpulab.exercises.loader import UnknownExercise, find
from gpulab.exercises.outcome import PREPARE_JOB
from gpulab.exercises.run_check import loaded_check, run_check
from gpulab.experiments.base import Context, Experiment, ExperimentError
from gpulab.experiments.registry import register_hidden

EXPERIMENT_ID = PREPARE_JOB
SEED = 1

# Exercises prepared in this process: their compiled kernels and imports live as long as it does.
_PREPARED: set[str] = set()


def worth_preparing(ex: Any) -> bool:
    """Whether a first check of `ex` on a GPU compiles or imports something a preparation can
    pay for ahead: every exercise (one marked `needs: cpu` runs on the GPU where there is one:
    tree-reduction's first check took 4.2 s on an H100, its repeats 0.3 s), unless its check
    opts out (`PREPARE = False`: one that starts processes of its own, like the DDP exercise)."""
    with loaded_check(ex) as check:
        return bool(getattr(check, "PREPARE", True))


class ExercisePrepare(Experiment):
    """The hidden job that runs an exercise's reference through a quick check, for its
    compilations' sake."""

    id = EXPERIMENT_ID
    title = "Exercise preparation"
    summary = "Compiles what an exercise's check needs, before the learner's first check"
    params = ParamSet((Text("exercise", "vector-add", "exercise id"),))

    def takes_ranks(self, params: dict[str, Any]) -> bool:
        """A collective exercise's preparation keeps its ranks standing by (gpulab.core.ranks):
        opening the exercise again must not cost the next check its ranks."""
        return bool(find(str(params.get("exercise", ""))).ranked)

    def check(self, params: dict[str, Any], inventory: Any) -> None:
        """Refuse an unknown exercise or one this machine cannot run."""
        try:
            ex = find(params["exercise"])
        except UnknownExercise as exc:
            raise ExperimentError(str(exc)) from None
        require_runnable(ex, inventory)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        """Prepare the exercise (once per process); the summary says what was done and why."""
        ex = find(params["exercise"])
        result = self.new_result(ctx, params)
        summary = result.summary
        summary["exercise"] = ex.id
        t0 = time.perf_counter()
        if ex.id in _PREPARED:
            summary["prepared"], summary["why"] = False, "already prepared in this worker"
        elif not ctx.has_cuda and not ctx.has_cupy:
            summary["prepared"], summary["why"] = False, "no GPU: nothing to compile ahead"
        elif ex.emulated(ctx.inventory):
            summary["prepared"], summary["why"] = False, "it runs on the CUDA emulator"
        elif not worth_preparing(ex):
            summary["prepared"], summary["why"] = False, "its first check compiles nothing"
        elif not peaks.ready(ctx.inventory, ctx.device_index):
            # A quick check would calibrate quickly, and a quick calibration must not be the
            # one a learner's check reads: the front end calibrates first, at warm-up.
            summary["prepared"], summary["why"] = False, "the device is not calibrated yet"
        else:
            ctx.progress(0.0, f"preparing {ex.id}'s check (compiling its kernels, once)")
            actx = exercise_context(ctx, SEED, quick=True)
            check = run_check(ex, ex.solution_path, SEED, actx, exp_ctx=ctx)
            # The reference failing a quick check is the grader's business, not this job's: the
            # compilations happened either way, and the learner's own check will say more.
            summary["prepared"] = True
            summary["reference_verdict"] = check.verdict
            _PREPARED.add(ex.id)
        summary["seconds"] = time.perf_counter() - t0
        result.explanation = result.headline = (
            f"{ex.id}: prepared in {summary['seconds']:.2f} s"
            if summary["prepared"]
            else f"{ex.id}: not prepared ({summary['why']})"
        )
        return self.finish(result)


EXPERIMENT = ExercisePrepare()
register_hidden(EXPERIMENT)
