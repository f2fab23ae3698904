"""Time every rung of an exercise's ladder on this GPU, beside its top rung and the library,
and keep the figures (gpulab.exercises.ladder).

The rungs are timed as a check times the learner beside the yardstick: the exercise's own
check.timing() builds the timed inputs (4096 x 4096 for matmul-tiled), and gpulab.core.rounds
times one call of each in every round, the order rotating, with a spin queued ahead of each
start event; each rung's figure is its median over the rounds, and its fraction of the top rung
the median of the per-round ratios. The library (cuBLAS for matmul) is timed in the same rounds,
so the top rung's share of it is known too. A memory-bound ladder (GB/s against the device copy)
times its roof in the same rounds: a device-to-device copy that moves the bytes the check counts
(half read, half written, as the calibrated device copy counts its GB/s), each rung marked at the
roof where its per-round ratio to the copy is ladder.ROOF_FRACTION or more.

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
from gpulab.exercises.run_check import loaded_check
from gpulab.exercises.sandbox import load_learner

LIBRARY = "library"  # the library path's name among the contenders
ROOF = "memory roof"  # the copy's name among the contenders: no rung's file name has a space


@dataclass
class Measured:
    """One measurement of a ladder: each rung's figures, the library's, what was timed."""

    metric: str
    rungs: dict[str, dict[str, float]] = field(default_factory=dict)
    library: float | None = None  # the library's figure, in the metric
    library_name: str = ""
    rounds: int = 0
    roof: float | None = None  # a copy of the same bytes in GB/s (memory-bound ladders only)

    def ordered(self, order: list[str]) -> bool:
        """Whether each rung ran faster than the one below it, or both are at the memory roof."""
        return ladder.ordered(order, self.rungs)


def figure(work: float, seconds: float, metric: str) -> float:
    """A call's figure in `metric` from its work (FLOPs or bytes) and its time."""
    scale = 1e12 if metric == "TFLOP/s" else 1e9
    return work / seconds / scale if seconds > 0 else 0.0


def _call(fn: Callable[[Any], Any], inputs: Any) -> Callable[[], Any]:
    return lambda: fn(inputs)


def _copy(cp: Any, work: float) -> Callable[[], Any]:
    """A device-to-device copy that moves `work` bytes in all: half read, half written."""
    src = cp.ones(max(1, int(work) // 8), dtype=cp.float32)
    dst = cp.empty_like(src)
    return lambda: cp.copyto(dst, src)


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
    with loaded_check(ex) as check:
        ctx = api.Context(
            rng=np.random.default_rng(11), seed=11, gpu=True, cupy=True, device=f"cuda:{device}"
        )
        contenders = []
        work, metric, library_name, ceiling = 0.0, ex.metric or "", "", ""
        with cp.cuda.Device(device):
            for r in steps:
                say(f"compiling {r.title}")
                _, fn = load_learner(r.path, f"ladder-{ex.id}-{r.number}", check.ENTRY)
                spec = check.timing(fn, ctx)
                inputs = spec.setup(0)
                work, metric, ceiling = float(spec.work), spec.metric, spec.ceiling
                contenders.append(Contender(r.name, _call(spec.learner, inputs)))
                if spec.library is not None and not library_name:
                    library_name = spec.library_name
                    contenders.append(Contender(LIBRARY, _call(spec.library, inputs)))
            if ceiling == "copy":  # bound by the device's memory, as a copy is (not by a link)
                contenders.append(Contender(ROOF, _copy(cp, work)))
            timed = Rounds(contenders, sync="cupy", lead=spin("cupy", device))
            say("warming up")
            timed.warm(2)
            say(f"timing {len(contenders)} contenders in {rounds} rounds")
            timed.extend(rounds)
    names = [r.name for r in steps]
    return tally(timed, names, work, metric, library_name, roofed=ceiling == "copy")


def tally(
    timed: Rounds, names: list[str], work: float, metric: str, library_name: str, *, roofed: bool
) -> Measured:
    """The ladder's figures from its rounds (`names` bottom first, the top rung last): each
    rung's median and share of the top, and with `roofed` the copy's figure and each rung's mark
    (its per-round ratio to the copy, which moves the same bytes)."""
    out = Measured(metric, library_name=library_name, rounds=timed.done)
    if roofed:
        out.roof = figure(work, timed.timing(ROOF).median_s, metric)
    for name in names:
        seconds = timed.timing(name).median_s
        of_top = median_interval(timed.ratios(names[-1], name)).median
        out.rungs[name] = {"value": figure(work, seconds, metric), "of_top": of_top}
        if out.roof is not None:
            of_roof = median_interval(timed.ratios(ROOF, name)).median
            at = of_roof >= ladder.ROOF_FRACTION
            out.rungs[name] |= {"roof": out.roof, "at_roof": 1.0 if at else 0.0}
    if library_name:
        out.library = figure(work, timed.timing(LIBRARY).median_s, metric)
    return out
