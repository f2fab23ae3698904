"""Time every rung of an exercise's ladder on this GPU, beside its top rung and the library,
and keep the figures (gpulab.exercises.ladder).

The rungs are timed as a check times the learner beside the yardstick: the exercise's own
check.timing() builds the timed inputs (4096 x 4096 for matmul-tiled), and gpulab.core.rounds
times one call of each in every round, the order rotating, with a spin queued ahead of each
start event; each rung's figure is its median over the rounds, and its fraction of the top rung
the median of the per-round ratios. The library (cuBLAS for matmul) is timed in the same rounds,
so the top rung's share of it is known too.

Runs in a process with CuPy and a GPU (`gpulab ex ladder NAME --measure`, or
tests/test_ladder_gpu.py); the module imports neither at load.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpulab.core.interval import median_interval
from gpulab.core.lead import spin
from gpulab.core.rounds import Contender, Rounds
from gpulab.exercises import api, ladder
from gpulab.exercises.loader import Exercise
from gpulab.exercises.run_check import load_check
from gpulab.exercises.sandbox import load_learner

LIBRARY = "library"  # the library path's name among the contenders


@dataclass
class Measured:
    """One measurement of a ladder: each rung's figures, the library's, what was timed."""

    metric: str
    rungs: dict[str, dict[str, float]] = field(default_factory=dict)
    library: float | None = None  # the library's figure, in the metric
    library_name: str = ""
    rounds: int = 0

    def ordered(self, order: list[str]) -> bool:
        """Whether each rung ran faster than the one below it."""
        values = [self.rungs[n]["value"] for n in order if n in self.rungs]
        return all(a < b for a, b in zip(values, values[1:], strict=False))


def figure(work: float, seconds: float, metric: str) -> float:
    """A call's figure in `metric` from its work (FLOPs or bytes) and its time."""
    scale = 1e12 if metric == "TFLOP/s" else 1e9
    return work / seconds / scale if seconds > 0 else 0.0


def _call(fn: Callable[[Any], Any], inputs: Any) -> Callable[[], Any]:
    return lambda: fn(inputs)


def measure(
    ex: Exercise,
    *,
    device: int = 0,
    rounds: int = 15,
    say: Callable[[str], None] | None = None,
) -> Measured:
    """Time the ladder of `ex` on GPU `device` (see the module doc)."""
    import cupy as cp  # deferred: only a measuring process has the GPU

    say = say or (lambda _s: None)
    steps = ladder.rungs(ex)
    check: Any = load_check(ex)
    ctx = api.Context(
        rng=np.random.default_rng(11), seed=11, gpu=True, cupy=True, device=f"cuda:{device}"
    )
    contenders = []
    work, metric, library_name = 0.0, ex.metric or "", ""
    with cp.cuda.Device(device):
        for r in steps:
            say(f"compiling {r.title}")
            _, fn = load_learner(r.path, f"ladder-{ex.id}-{r.number}", check.ENTRY)
            spec = check.timing(fn, ctx)
            inputs = spec.setup(0)
            work, metric = float(spec.work), spec.metric
            contenders.append(Contender(r.name, _call(spec.learner, inputs)))
            if spec.library is not None and not library_name:
                library_name = spec.library_name
                contenders.append(Contender(LIBRARY, _call(spec.library, inputs)))
        timed = Rounds(contenders, sync="cupy", lead=spin("cupy", device))
        say("warming up")
        timed.warm(2)
        say(f"timing {len(contenders)} contenders in {rounds} rounds")
        timed.extend(rounds)
    top = steps[-1].name
    out = Measured(metric, library_name=library_name, rounds=rounds)
    for r in steps:
        seconds = timed.timing(r.name).median_s
        of_top = median_interval(timed.ratios(top, r.name)).median
        out.rungs[r.name] = {"value": figure(work, seconds, metric), "of_top": of_top}
    if library_name:
        out.library = figure(work, timed.timing(LIBRARY).median_s, metric)
    return out
