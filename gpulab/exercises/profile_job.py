"""`exercise-profile`: the torch.profiler view of the learner's own code, as a hidden worker job.

It runs where checks run: in the worker, with the runner's crash survival. It follows the
grader's order for one input set: the check's cases, that set's reference, then the learner's
file, fresh.

- An exercise whose check marks an input set `meta={"profile": True}` (profile-step) gets that
  set's run: the check itself profiles the learner's step and its own slow one (and times both
  on a GPU). The view prints both tables, the syncs and kernels per step, the times, and what
  the check would say of the set.
- Any other exercise gets its last (largest) input set's run profiled as one step: the top
  operators and kernels, the syncs, the kernel count.

Importing this module registers the job with the experiments' registry (`register_hidden`);
`gpulab ex profile` (gpulab/ex/profile.py) submits it.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from gpulab.core import step_trace as st
from gpulab.core.params import SEED_MAX, Int, ParamSet, Text
from gpulab.core.results import Artifact, Result
from gpulab.exercises import yardstick
from gpulab.exercises.job import exercise_context, require_runnable
from gpulab.exercises.loader import find
from gpulab.exercises.run_check import load_check
from gpulab.exercises.sandbox import Guard, LearnerError, forget, load_learner
from gpulab.experiments.base import Context, Experiment, ExperimentError
from gpulab.experiments.registry import register_hidden

EXPERIMENT_ID = "exercise-profile"


class ExerciseProfile(Experiment):
    id = EXPERIMENT_ID
    title = "Exercise profile"
    summary = "torch.profiler's view of a learner's exercise file (gpulab ex profile)"
    params = ParamSet(
        (
            Text("exercise", "profile-step", "exercise id"),
            Text("path", "-", "the learner's file"),
            Int("seed", 0, "the seed of the input sets", min=0, max=SEED_MAX),
        )
    )

    def check(self, params: dict[str, Any], inventory: Any) -> None:
        require_runnable(find(params["exercise"]), inventory)

    def run(self, ctx: Context, params: dict[str, Any]) -> Result:
        ex = find(params["exercise"])
        result = self.new_result(ctx, params)
        result.lesson = ex.lesson
        actx = exercise_context(ctx, int(params["seed"]), quick=False)
        check = load_check(ex)
        actx.phase = "cases"
        cases = list(check.cases(actx))
        actx.phase = "timing"
        marked = [c for c in cases if c.meta.get("profile")]
        case = marked[-1] if marked else cases[-1]
        want = check.expected(case, actx)
        ctx.progress(0.1, f"profiling {ex.id}: {case.name}")
        guard = Guard(classes=True)  # what the learner's file patches must not outlive the view
        learner = None
        actx.reference = lambda: yardstick.reference_entry(ex)
        try:
            learner, fn = load_learner(Path(params["path"]), ex.id, ex.entry)
            if marked:
                got = check.run(fn, copy.deepcopy(case), actx)
                mismatch = getattr(check, "compare", None)
                said = mismatch(want, got, case, actx) if mismatch else None
                text, summary = _marked_view(got, said, actx.gpu)
            else:
                text, summary = _whole_run(check, fn, case, actx)
        except LearnerError as exc:
            raise ExperimentError(str(exc)) from None
        finally:
            guard.restore()
            guard.hooks_changed()
            forget(learner)
            forget(check)
        result.artifacts.append(Artifact("profile", "text", text="\n".join(text)))
        result.summary = {"exercise": ex.id, "case": case.name, **summary}
        result.explanation = text[0] if text else ""
        ctx.progress(1.0, "done")
        return self.finish(result)

    def headline(self, result: Result) -> str:
        return str(result.explanation)


def _marked_view(got: dict[str, Any], said: Any, gpu: bool) -> tuple[list[str], dict[str, Any]]:
    """The check's own profile of the learner's step and its slow one, as text."""
    yours = st.StepTrace(**{**got["trace"], "rows": [st.OpRow(**r) for r in got["trace"]["rows"]]})
    slow = st.StepTrace(
        **{**got["slow_trace"], "rows": [st.OpRow(**r) for r in got["slow_trace"]["rows"]]}
    )
    verdict = "the check would pass this" if said is None else f"the check says: {said.message}"
    text = [verdict, ""]
    text += ["your step", f"  {st.summary_line(yours)}", *st.table(yours), ""]
    if yours.lines:
        text += [f"where the host would wait for the GPU: {'; '.join(yours.lines)}", ""]
    text += ["the slow step", f"  {st.summary_line(slow)}", *st.table(slow)]
    timing = got.get("timing")
    if timing:
        y, s = timing["yours"]["median_s"], timing["slow"]["median_s"]
        o = timing["ours"]["median_s"]
        text += [
            "",
            f"time per step: yours {y * 1e3:.3g} ms, slow {s * 1e3:.3g} ms ({s / y:.3g}x), "
            f"ours {o * 1e3:.3g} ms ({s / o:.3g}x)",
        ]
    elif not gpu:
        text += ["", "no GPU here: no time per step and no device syncs (they need a GPU)"]
    return text, {"yours": got["trace"], "slow": got["slow_trace"], "timing": timing}


def _whole_run(check: Any, fn: Any, case: Any, actx: Any) -> tuple[list[str], dict[str, Any]]:
    """One run of the check's input set, profiled as one step (any exercise)."""
    trace = st.profile_steps(
        lambda i: check.run(fn, copy.deepcopy(case), actx), 1, gpu=actx.gpu, top=12
    )
    text = [f"one run of {case.name}", f"  {st.summary_line(trace)}", *st.table(trace)]
    return text, {"trace": trace.to_dict()}


EXPERIMENT = ExerciseProfile()
register_hidden(EXPERIMENT)
