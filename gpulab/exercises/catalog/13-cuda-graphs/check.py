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

Then, in the last case, the margin: CALLS calls of run(x) and of the eager step(x) timed in
interleaved rounds (synchronized wall time, the median of each); replay must take at most
1 / MARGIN of the eager time. Why MARGIN = 1.5: an eager op costs the CPU a few microseconds
and a tiny kernel one or two of GPU time, so a replay is expected at 2-4x the eager speed;
eager calls and a capture per call are never near 1.5x. A first estimate: confirm it on a GPU.

The worker samples memory from another thread; a cudaMemGetInfo during a global-mode capture
breaks it, so every call into the learner's code runs with device queries paused.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np

from gpulab.exercises import api

ENTRY = "make_graphed"
LAYERS = 24  # rounds of x = x + 0.1 * tanh(x * a + b): 96 kernel launches a step
KERNELS_PER_LAYER = 4  # x * a, + b, tanh, the add: one kernel each in eager PyTorch
RTOL, ATOL = 1e-4, 1e-5  # float32 through 24 slightly expanding rounds, against float64
CALLS = 12  # new inputs per case (and calls per timed batch)
MARGIN = 1.5
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
            result["times"] = _rounds(runner, step, inputs, ctx, torch)
    return result


def _batch(fn: Any, inputs: list, torch: Any) -> float:
    torch.cuda.synchronize()
    t0 = _now()
    for x in inputs:
        fn(x)
    torch.cuda.synchronize()
    return (_now() - t0) / len(inputs)


def _rounds(runner: Any, step: Any, inputs: list, ctx: api.Context, torch: Any) -> dict:
    rounds = 5 if ctx.quick else 9
    graph, eager = [], []
    for r in range(rounds + 1):  # round 0 warms both up and is not counted
        g, e = _batch(runner, inputs, torch), _batch(step, inputs, torch)
        if r:
            graph.append(g)
            eager.append(e)
    return {"graph": graph, "eager": eager}


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
        return judge_replay(got["times"])
    return None


def judge_replay(times: dict[str, list[float]]) -> api.Mismatch | None:
    """The margin rule on the rounds' medians (plain numbers: CPU tests call this too)."""
    graph, eager = statistics.median(times["graph"]), statistics.median(times["eager"])
    if graph * MARGIN <= eager:
        return None
    launches = KERNELS_PER_LAYER * LAYERS
    return api.Mismatch(
        f"run(x) took {graph * 1e6:.0f} us a call, the eager step {eager * 1e6:.0f} us "
        f"({eager / graph:.2f}x; at least {MARGIN}x is asked): a replay launches all "
        f"{launches} kernels at once, so it should save most of the eager launch time. Keep "
        "run(x) to a copy into the static input and replay(): no capture, no synchronize, no "
        "new tensors",
        expected=eager / MARGIN,
        got=graph,
    )
