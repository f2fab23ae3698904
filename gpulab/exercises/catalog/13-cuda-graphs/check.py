"""Check for cuda-graphs: capture a launch-bound step once, then copy new inputs in and replay.

The check's `step(x)` is LAYERS rounds of x = x + 0.1 * tanh(x * a + b) on a small tensor: 4
kernels a round, each a few microseconds of GPU work, so eager PyTorch spends its time launching
them. Each round keeps what the input was (a chain of plain tanh forgets it, and a graph that
replays a stale input would pass), so every output tells its input apart.
The learner's `make_graphed(step, example)` returns `run(x)`. What is checked, per case:

1. make_graphed is called once; then run(x) on CALLS new inputs, and each output (copied out
   at once: the graph's static output is overwritten by the next replay) against a float64
   reference of step(x), computed before the learner's file was loaded;
2. what run(x) did, counted on torch.cuda.CUDAGraph itself: it must replay a graph
   (`replay`), and it must not capture one (`capture_begin`): a graph captured per call costs
   more than the eager step it replaces;
3. run(x) returning the same output for different inputs is named: the graph replays the
   input it captured, so the new x was never copied into the static input (or the captured
   step read a copy, a constant, made inside the capture).

Then, in the last case, the saving: CALLS calls of run(x), of the eager step(x) and of our own
graphed step timed in interleaved rounds (synchronized wall time, the median of each); the
replay must save at least half of the time ours saves over eager on this GPU
(gpulab.exercises.saving). A replay launches every kernel of the step at once, so on a GPU
whose host pays a few microseconds per launch it runs at several times the eager speed (8.5x
for 96 kernels on an H100); a capture per call, or eager calls, save nothing. Where even ours
saves too little on this GPU, only correctness is graded and the verdict says so.

The worker samples memory from another thread; a cudaMemGetInfo during a global-mode capture
breaks it, so every call into the learner's code runs with device queries paused.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from gpulab.exercises import api, saving

ENTRY = "make_graphed"
LAYERS = 24  # rounds of x = x + 0.1 * tanh(x * a + b): 96 kernel launches a step
KERNELS_PER_LAYER = 4  # x * a, + b, tanh, the add: one kernel each in eager PyTorch
RTOL, ATOL = 1e-4, 1e-5  # float32 through 24 slightly expanding rounds, against float64
CALLS = 12  # new inputs per case (and calls per timed batch)
_now = time.perf_counter

SIZES = (1, 1025, 4096)  # elements of x; the last case is also timed


def cases(ctx: api.Context) -> list[api.Case]:
    coef = ctx.rng.uniform(0.5, 1.5, size=(LAYERS, 2)) * np.array([1.0, 0.2])
    out = []
    for n in SIZES:
        xs = ctx.rng.standard_normal((CALLS + 1, n)).astype(np.float32)
        timed = n == SIZES[-1]
        name = f"x of {n} float32, {CALLS} new inputs" + (", timed against eager" if timed else "")
        out.append(api.Case(name, {"xs": xs, "coef": coef, "timed": timed}))
    return out


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    """step(x) in float64 for every new input (row 0 is the example make_graphed gets)."""
    x = case.args["xs"][1:].astype(np.float64)
    for a, b in case.args["coef"]:
        x = x + 0.1 * np.tanh(x * a + b)
    return x


def _make_step(coef: np.ndarray) -> Any:
    import torch  # deferred: the catalog is read in processes that must not import torch

    pairs = [(float(a), float(b)) for a, b in coef]

    def step(x: Any) -> Any:
        """LAYERS rounds of x + 0.1 * tanh(x * a + b), each op a kernel on the current stream."""
        if not isinstance(x, torch.Tensor) or x.device.type != "cuda":
            raise ValueError("step() wants a float32 tensor on the GPU")
        for a, b in pairs:
            x = torch.add(x, torch.tanh(x * a + b), alpha=0.1)
        return x

    return step


class _Counting:
    """How many graphs were captured and replayed while it is open (on the class, so every
    way in, torch.cuda.graph or capture_begin by hand, is seen)."""

    def __init__(self) -> None:
        import torch

        self.cls = torch.cuda.CUDAGraph
        self.captures = self.replays = 0

    def __enter__(self) -> _Counting:
        self.real = {k: getattr(self.cls, k) for k in ("capture_begin", "replay")}
        seen = self

        def capture_begin(g: Any, *a: Any, **k: Any) -> Any:
            seen.captures += 1
            return seen.real["capture_begin"](g, *a, **k)

        def replay(g: Any, *a: Any, **k: Any) -> Any:
            seen.replays += 1
            return seen.real["replay"](g, *a, **k)

        self.cls.capture_begin, self.cls.replay = capture_begin, replay
        return self

    def __exit__(self, *exc: object) -> None:
        for k, v in self.real.items():
            setattr(self.cls, k, v)


def run(fn: Any, case: api.Case, ctx: api.Context) -> dict[str, Any]:
    import torch

    xs = torch.from_numpy(case.args["xs"]).to(ctx.device)
    step = _make_step(case.args["coef"])
    example = xs[0].clone()
    with api.no_device_queries():
        with _Counting():
            runner = fn(step, example)
        if not callable(runner):
            raise api.CheckError(
                f"make_graphed returned {type(runner).__name__}: expected a function run(x)"
            )
        outs = []
        inputs = [xs[k].clone() for k in range(1, CALLS + 1)]
        with _Counting() as seen:
            for x in inputs:
                y = runner(x)
                if not isinstance(y, torch.Tensor) or y.device.type != "cuda":
                    raise api.CheckError("run(x) must return the output tensor, on the GPU")
                # the next replay overwrites a graph's static output: copy it out now
                outs.append(y.detach().clone())
        torch.cuda.synchronize()
        if seen.replays == 0:
            raise api.CheckError(
                f"run(x) replayed no CUDA graph in {CALLS} calls: it ran step eagerly. Capture "
                "step once in make_graphed (torch.cuda.graph) and call replay() in run(x)"
            )
        if seen.captures:
            raise api.CheckError(
                f"run(x) captured {seen.captures} graphs in {CALLS} calls: a capture costs more "
                "than the eager step. Capture once in make_graphed; in run(x) only copy x into "
                "the static input and replay()"
            )
        got = torch.stack(outs).double().cpu().numpy()
        result: dict[str, Any] = {"out": got}
        if case.args["timed"]:
            ours = ctx.reference()(step, xs[0].clone())  # our graphed step, beside yours
            result["times"] = _rounds(runner, step, ours, inputs, ctx, torch)
    return result


def _batch(fn: Any, inputs: list, torch: Any) -> float:
    torch.cuda.synchronize()
    t0 = _now()
    for x in inputs:
        fn(x)
    torch.cuda.synchronize()
    return (_now() - t0) / len(inputs)


def _rounds(runner: Any, step: Any, ours: Any, inputs: list, ctx: api.Context, torch: Any) -> dict:
    rounds = 5 if ctx.quick else 9
    graph, eager, mine = [], [], []
    for r in range(rounds + 1):  # round 0 warms all three up and is not counted
        g, e, o = (_batch(f, inputs, torch) for f in (runner, step, ours))
        if r:
            graph.append(g)
            eager.append(e)
            mine.append(o)
    return {"graph": graph, "eager": eager, "ours": mine}


def compare(want: np.ndarray, got: dict[str, Any], case: api.Case, ctx: api.Context) -> Any:
    out = got["out"]
    bad = api.compare_arrays(want, out, rtol=RTOL, atol=ATOL)
    if bad is not None:
        same = all(np.array_equal(out[0], out[k]) for k in range(1, len(out)))
        if same and len(out) > 1:
            return api.Mismatch(
                f"run(x) returned the same output for all {len(out)} inputs: the graph replays "
                "the input it captured. Copy each new x into the static input "
                "(static.copy_(x)) before replay(), and capture step on that static tensor",
                expected=float(want[1, 0]),
                got=float(out[1, 0]),
            )
        bad.message = f"call {bad.index[0] + 1 if isinstance(bad.index, tuple) else '?'}: " + (
            bad.message
        )
        return bad
    if "times" in got:
        bad, note = judge_replay(got["times"])
        if note:
            ctx.notes.append(note)
        return bad
    return None


def judge_replay(times: dict[str, list[float]]) -> tuple[api.Mismatch | None, str]:
    """The saving rule on the rounds (plain numbers: CPU tests call this too): (why run(x)
    fails it, or None; the verdict's note where this GPU cannot show the effect)."""
    rounds = list(zip(times["eager"], times["graph"], times["ours"], strict=True))
    launches = KERNELS_PER_LAYER * LAYERS
    return saving.judge(
        saving.Saving.of(rounds),
        what="replay",
        baseline="the eager step",
        hint=f"a replay launches all {launches} kernels at once; keep run(x) to a copy into "
        "the static input and replay(): no capture, no synchronize, no new tensors",
    )
