"""Check for compile-fused: a function torch.compile turns into whole graphs, once, and faster.

The learner's `run(x, w)` must compute the chain below through a torch.compile'd function that
(1) has no graph break, (2) compiles at most twice over seven sizes (the first size, then once
with the size dynamic: a compile per size means every new shape pays the compile again; the
large input comes second, so the dynamic graph is compiled, and tuned, at the size that runs
hot), and
(3) on a GPU saves, against the same chain in eager PyTorch, at least half of what our own
compiled solution saves, all three timed in interleaved rounds on a large input on this GPU
(gpulab.exercises.saving; where even ours gains too little here, only correctness is graded and
the verdict says so), and on the CPU does the work on that input inside the compiled graph: one
call there, under torch.profiler, dispatches no eager operation over it.

The learner's calls in the rounds are timed ones (`ctx.timed_calls()`): the grader's per-call
bookkeeping waits for the end of the loop. On an H200 a correct fused chain read 0.91x eager here
while bare it ran 6.6x (bench/results/compile-fused-probe-h200.json); the cause was the order
of the sizes, not the grader: the large input came last, so the graph that ran it was the dynamic
one compiled, and tuned, at n=33 (0.38 ms a call against 0.15 ms compiled at 32M, eager 0.67 ms;
cProfile put the grader's Python at a few tens of microseconds a call:
bench/results/probe-compile-fused-overhead-h200.log, probe-compile-fused-order-h200.log).

Graph breaks and compiled graphs are read from torch._dynamo's own counters (the numbers
`torch._dynamo.explain` and TORCH_LOGS=graph_breaks report), before and after each call.

No timing on the CPU: one thread's tanh and sigmoid arithmetic sets the pace there, so fusing
saves only passes the cache mostly hides, and on a loaded 2-core machine the compiled call's
lead over eager measured anywhere from 0.9x to 1.5x from one run to the next. The profile
reads the same thing without noise: a compiled graph that ran the chain dispatches none of
its operations one by one.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from gpulab.exercises import api, refuse, saving
from gpulab.exercises.fresh import Refresher

ENTRY = "run"
# What a compiled graph's wrapper may still dispatch: allocating its outputs and viewing them
NOT_WORK = frozenset(
    "aten::" + op
    for op in (
        "empty",
        "empty_strided",
        "empty_like",
        "as_strided",
        "slice",
        "view",
        "reshape",
        "_reshape_alias",
        "alias",
        "detach",
        "resize_",
        "to",
        "_to_copy",
        "copy_",
        "lift_fresh",
        "select",
        "narrow",
        "unsqueeze",
        "squeeze",
        "expand",
        "t",
        "transpose",
        "permute",
        "flatten",
        "contiguous",
        "_unsafe_view",
    )
)
ROUNDS = 7
# Elements each contender's calls pass over in a round, over as many calls as that takes (20 at
# 32M, 5 at 128M): each call on new values, one of the learner's compared
ROUND_ELEMENTS = 20 << 25
MIN_CALLS = 5
# The speed input on a GPU: 32M elements, and up to 128M where free memory holds the rounds
# (about PEAK_BYTES an element: x, w, the eager chain's temporaries, the answers kept to compare)
# within a quarter of it. Each call is timed from a synchronize to a synchronize, so a call's host
# work (dynamo's guards, Inductor's wrapper, a learner's few eager ops on the scale, the check's
# per-call bookkeeping) adds to its GPU time. At 32M on an H200 that host work was as long as
# the fused kernel itself (0.15 ms): four 1-element eager ops (right/scale-outside-the-graph.py)
# read 20% to 40% of our saving in some checks, 72% to 83% in others
# (bench/results/probe-compile-fused-watch-h200.*); at 128M the kernels are 4x longer and the
# same host work weighs a quarter as much.
GPU_MIN = 1 << 25
GPU_MAX = 1 << 27
PEAK_BYTES = 40
# A round's calls of the learner's stop once they have taken this long, and the rounds with
# them: 0.1 s a call, slower than the eager chain at 32M elements on any GPU (about 20 ms on a
# laptop's at 100 GB/s), so no file that reaches it saves anything over eager. On an H200,
# wrong/eager-in-small-slices.py took 139 s of seven rounds at 1 s a call before this.
ROUND_BUDGET_S = 2.0
CPU_PROFILED = 3  # profiled calls on the CPU, each on new values
# Packages whose own threads and processes a call may start: torch.compile's compile workers
_COMPILERS = ("torch", "triton")
_urandom = os.urandom  # bound before any learner's code exists
KEPT = "does run keep an answer from an earlier call?"
SMALL = 4096  # an eager operation on fewer elements than this is no pass over the input
# ... but many of them together are: eager operations touching an eighth of the input's elements
# or more, summed over one call, ran the chain in pieces (the scale's few ops touch a handful)
EAGER_SHARE = 8
MAX_GRAPHS = 2  # one for the first size, one more once torch.compile marks the size dynamic
CPU_THREADS = 1  # the same thread setting for both sides of every round (see exercises.md)
_tally: dict[str, Any] = {"graphs": 0, "breaks": {}, "sizes": 0, "eager": []}
COMPILED_REGION = "Torch-Compiled Region"  # torch.profiler's event for a compiled graph's run
EAGER_FLOOR = 1025  # below this size a few eager ops on the scale touch an eighth of the input


def _reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    y = x.astype(np.float64) * w + 0.5
    y = y / (np.abs(y[:1]) + 1.0)
    sig = 1.0 / (1.0 + np.exp(-y))
    return np.tanh(y) * sig + y * y


def _eager(x: Any, w: Any) -> Any:
    """The chain in eager PyTorch, the check's own: the figure the compiled call must beat."""
    import torch

    y = x * w + 0.5
    y = y / (y[:1].abs() + 1.0)
    return torch.tanh(y) * torch.sigmoid(y) + y * y


def cases(ctx: api.Context) -> list[api.Case]:
    out = []
    for n in (1, 33, 1025, 4097, 65537, 300_001):
        x = ctx.rng.uniform(-3, 3, n).astype(np.float32)
        w = ctx.rng.uniform(0.5, 2, n).astype(np.float32)
        x[x == 0] = 1.0
        out.append(api.Case(f"n={n}", {"x": x, "w": w}))
    # On a GPU 32M elements or more even in quick checks (_gpu_size): at 4M a call is a few tens
    # of microseconds and dynamo's per-call guards weigh as much as the fusion saves. On the CPU
    # one thread a side at 1M elements keeps a round near a tenth of a second.
    big = _gpu_size(ctx) if ctx.gpu else (1 << 20)
    if ctx.gpu:
        # Drawn on the device when the case runs (_inputs): 32M float64 draws on the host and
        # their conversion were 0.48 s of a repeat check's 1.0 s on an H200 host
        # (bench/results/exercises-compile-fused-h200x2.md), and each call's deep copy of the
        # case copied 256 MB more; the speed rounds rewrite x before every call anyway
        args: dict[str, Any] = {"n": big, "seed": int(ctx.rng.integers(1 << 62))}
    else:
        args = {
            "x": ctx.rng.uniform(-3, 3, big).astype(np.float32),
            "w": ctx.rng.uniform(0.5, 2, big).astype(np.float32),
        }
    # On the CPU this input is profiled, not timed (see the module's docstring)
    name = f"speed: n={big}, yours vs eager" if ctx.gpu else f"all in the graph: n={big}"
    # Second, after n=1 (a size torch.compile always specializes): the first size that changes
    # is the one the dynamic graph is compiled at, and Inductor tunes its kernels for that size.
    # Compiled at n=33, the graph ran the 32M input at 0.38 ms on an H200; compiled at 32M, at
    # 0.15 ms (a static graph: 0.135 ms; eager 0.67 ms): bench/results/probe-compile-fused-order-
    # h200.log. The large input is the one a program would run hot.
    out.insert(1, api.Case(name, args, {"speed": True}))
    return out


def _gpu_size(ctx: api.Context) -> int:
    """The speed input's length on this GPU: the largest power of two from GPU_MIN to GPU_MAX
    whose rounds take at most a quarter of the device's free memory (GPU_MIN where the device
    cannot be asked)."""
    if not ctx.device.startswith("cuda"):
        return GPU_MIN
    import torch

    free, _total = torch.cuda.mem_get_info(torch.device(ctx.device))
    n = GPU_MIN
    while n < GPU_MAX and 2 * n * PEAK_BYTES <= free // 4:
        n *= 2
    return n


def round_calls(n: int) -> int:
    """Calls of each contender in a round of the speed case at length n."""
    return max(MIN_CALLS, min(20, ROUND_ELEMENTS // n))


def expected(case: api.Case, ctx: api.Context) -> Any:
    if case.meta.get("speed"):
        return None  # the speed case compares timings; its values are checked by the others
    return _reference(case.args["x"], case.args["w"])


def _counts() -> tuple[int, dict[str, int]]:
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"]), dict(counters["graph_break"])


@contextmanager
def _threads(device: str) -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    try:
        if device == "cpu":
            torch.set_num_threads(CPU_THREADS)
        yield
    finally:
        torch.set_num_threads(before)


def _time(
    f: Any,
    x: Any,
    w: Any,
    gpu: bool,
    calls: int,
    fresh: Any,
    check_at: int = -1,
    budget_s: float = math.inf,
) -> tuple[float, str | None, bool]:
    """Seconds a call of f over `calls` calls, each on x rewritten whole before it (untimed,
    gpulab.exercises.fresh), why call `check_at`'s output is not the eager chain's on its input
    (None when it is, or when no call is checked), and whether the calls stopped early: once
    they have taken `budget_s`, the call that crossed it is the one compared, if the chosen one
    was still to come."""
    import torch

    total, wrong = 0.0, None
    for i in range(calls):
        fresh(x)
        if gpu:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = f(x, w)
        if gpu:
            torch.cuda.synchronize()
        total += time.perf_counter() - t0
        spent = total >= budget_s
        if i == check_at or (spent and check_at > i):
            wrong = _differs(out, _eager(x, w))
        if spent:
            return total / (i + 1), wrong, True
    return total / calls, wrong, False


def _differs(got: Any, want: Any) -> str | None:
    """Why the learner's output on the large input is not the eager chain's, or None. Compared on
    the device, with room for a fused kernel's own rounding of tanh and sigmoid."""
    import torch

    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        shape = tuple(getattr(got, "shape", ()))
        return (
            f"run returned {type(got).__name__} {shape}, expected a tensor of {tuple(want.shape)}"
        )
    if got.device != want.device:
        return f"run returned a tensor on {got.device}, the input is on {want.device}"
    close = torch.isclose(got.float(), want, rtol=1e-3, atol=1e-3)
    if bool(close.all()):
        return None
    bad = int((~close).sum())
    return f"{bad:,} of {want.numel():,} elements differ from the chain's value"


def _eager_ops(fn: Any, x: Any, w: Any) -> tuple[list[str], int, bool, Any]:
    """The operations one call of fn dispatched one by one, outside any compiled graph, on an
    operand of SMALL or more elements (a scale worked out eagerly from the first element is no
    pass over the input), the elements all its eager operations touched together (the largest
    operand of each, summed: the chain run eagerly on small slices adds up to whole passes),
    whether it entered a compiled graph, and what the call returned."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        got = fn(x, w)
    events = prof.events()
    eager = [
        (e.name, max((math.prod(shape) for shape in e.input_shapes if shape), default=0))
        for e in events
        if e.name.startswith("aten::") and e.name not in NOT_WORK
    ]
    ops = [name for name, size in eager if size >= SMALL]
    compiled = any(e.name.startswith(COMPILED_REGION) for e in events)
    return ops, sum(size for _name, size in eager), compiled, got


def _counted(fn: Any, x: Any, w: Any) -> Any:
    """fn(x, w), the graphs it compiled and the graph breaks it met added to the tally."""
    graphs, breaks = _counts()
    got = fn(x, w)
    graphs_after, breaks_after = _counts()
    _tally["graphs"] += graphs_after - graphs
    _tally["sizes"] += 1
    for reason, count in breaks_after.items():
        if count > breaks.get(reason, 0):
            _tally["breaks"][reason] = count - breaks.get(reason, 0)
    return got


def _inputs(case: api.Case, device: str) -> tuple[Any, Any]:
    """The case's x and w as tensors on `device`: copied from the host, or drawn there from the
    case's seed (the same values for the same seed on the same device)."""
    import torch

    if "x" in case.args:
        return (
            torch.from_numpy(case.args["x"]).to(device),
            torch.from_numpy(case.args["w"]).to(device),
        )
    g = torch.Generator(device=device)
    g.manual_seed(case.args["seed"])
    n = case.args["n"]
    x = torch.rand(n, generator=g, device=device).mul_(6.0).sub_(3.0)  # uniform on [-3, 3)
    w = torch.rand(n, generator=g, device=device).mul_(1.5).add_(0.5)  # on [0.5, 2)
    return x, w


def run(fn: Any, case: api.Case, ctx: api.Context) -> Any:
    import torch

    x, w = _inputs(case, ctx.device)
    if case.meta.get("speed"):
        gpu = ctx.device.startswith("cuda")
        rounds = []
        fresh = Refresher()
        with _threads(ctx.device), refuse.one_thread([], exits=True, exempt=_COMPILERS):
            # warm (compiles for this size happen here, counted with the other sizes'), and
            # the answer on this input checked
            got = _counted(fn, x, w)
            wrong = _differs(got, _eager(x, w))
            if wrong:
                return {"gpu": gpu, "wrong": f"on the large input: {wrong}"}
            if not gpu:
                # Every call after the warm one profiled, each on new values: no call is
                # the one that is watched, and none may run the chain outside the graph
                for k in range(CPU_PROFILED):
                    fresh(x)
                    ops, touched, _, got = _eager_ops(fn, x, w)
                    wrong = _differs(got, _eager(x, w))
                    if wrong:
                        return {
                            "gpu": False,
                            "wrong": f"on the large input, call {k + 2}, after its values "
                            f"changed: {wrong} ({KEPT})",
                        }
                    if ops:
                        return {"gpu": False, "eager_ops": ops}
                    if touched >= x.numel() // EAGER_SHARE:
                        return {"gpu": False, "eager_ops": [], "touched": touched}
                return {"gpu": False, "eager_ops": []}
            ours = ctx.reference()
            # The eager chain timed as yours and ours are, under the check's refusals: they
            # charge every eager operation tens of microseconds of Python, and charged to yours
            # alone they sank a correct file with four tiny eager ops (a 1-element scale) from
            # 90% of our saving to 41% on an H200 host (bench/results/probe-scale-outside-h200.log)
            eager_timed = ctx.watch.ours(_eager) if ctx.watch is not None else _eager
            _differs(ours(x, w), _eager(x, w))  # warm: our chain compiles for this size here
            calls = round_calls(x.numel())
            for k in range(ROUNDS):
                checked = _urandom(1)[0] % calls  # which call of the round is compared
                with ctx.timed_calls():
                    yours, wrong, spent = _time(
                        fn, x, w, gpu, calls, fresh, checked, budget_s=ROUND_BUDGET_S
                    )
                eager, _, _ = _time(eager_timed, x, w, gpu, calls, fresh)
                mine, _, _ = _time(ours, x, w, gpu, calls, fresh)
                if wrong:
                    return {
                        "gpu": True,
                        "wrong": f"timed round {k + 1}, after the input changed: {wrong} ({KEPT})",
                    }
                rounds.append((eager, yours, mine))
                if spent:
                    break  # far slower than eager: the rule's verdict is already plain
        return {"rounds": rounds, "gpu": True}
    with _threads(ctx.device):  # compiled with the thread count it is timed with
        _counted(fn, x, w)
        # Every size runs compiled, not only the large one: a red team ran the chain eagerly on
        # the six sizes and a static graph on the large input (one graph, no break). Profiled on
        # a second call, since a compile's tracing dispatches the chain's operations too, on
        # copies (new buffers: an answer kept per buffer is the speed rounds' to name).
        _, touched, compiled, got = _eager_ops(fn, x.clone(), w.clone())
    n = x.numel()
    if not compiled or (n >= EAGER_FLOOR and touched >= n // EAGER_SHARE):
        _tally["eager"].append(n)
    if not isinstance(got, torch.Tensor):
        raise api.CheckError(f"run returned {type(got).__name__}, expected a tensor")
    return api.to_host(got)


def _one_line(text: str) -> str:
    """dynamo's reason without its hints: the first 200 characters before "Hint:"."""
    return " ".join(str(text).split("Hint:")[0].split())[:200]


def compare(want: Any, got: Any, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    if not case.meta.get("speed"):
        bad = api.compare_arrays(want, got, rtol=2e-5, atol=2e-6)
        if bad is not None:
            return bad
    if _tally["breaks"]:
        reason = next(iter(_tally["breaks"]))
        return api.Mismatch(
            f"graph break in your compiled function: {_one_line(reason)} "
            "(torch._dynamo.explain(chain)(x, w) lists every break)"
        )
    if _tally["graphs"] == 0:
        return api.Mismatch(
            "no compiled graph ran: run() must call a torch.compile'd function (is it calling "
            "chain eagerly?)"
        )
    if _tally["eager"]:
        return api.Mismatch(
            f"at n={_tally['eager'][0]} your run did its work outside the compiled graph (the "
            "chain's operations dispatched one by one, or no compiled graph entered): every size "
            "must run compiled, so that one dynamic graph serves them all"
        )
    if _tally["graphs"] > MAX_GRAPHS:
        return api.Mismatch(
            f"torch.compile made {_tally['graphs']} graphs for {_tally['sizes']} sizes: it "
            "recompiled for every new shape (dynamic=False?). Let the size be dynamic "
            "(the default marks it after the second shape, or torch._dynamo.mark_dynamic(x, 0))"
        )
    if not case.meta.get("speed"):
        return None
    if got.get("wrong"):
        return api.Mismatch(got["wrong"])
    if not got["gpu"]:
        return _work_outside_the_graph(got["eager_ops"], got.get("touched", 0), case)
    return _speed(got, ctx)


def _size(case: api.Case) -> int:
    return int(case.args["n"]) if "n" in case.args else int(case.args["x"].size)


def _work_outside_the_graph(ops: list[str], touched: int, case: api.Case) -> api.Mismatch | None:
    if touched:
        return api.Mismatch(
            f"on the large input your run's eager operations, each on fewer than {SMALL:,} "
            f"elements, touched {touched:,} elements together against the input's "
            f"{_size(case):,}: the chain ran eagerly in small pieces, outside the "
            "compiled graph; it must run as the compiled function's generated code"
        )
    if not ops:
        return None
    names = ", ".join(dict.fromkeys(op.removeprefix("aten::") for op in ops))
    return api.Mismatch(
        f"on the large input your run dispatched {len(ops)} operations one by one ({names}), "
        "outside the compiled graph or unfused in it: the chain must run as the compiled "
        "function's generated code"
    )


def _speed(got: dict[str, Any], ctx: api.Context) -> api.Mismatch | None:
    measured = saving.Saving.of(got["rounds"])
    bad, note = saving.judge(
        measured,
        what="compiled call",
        baseline="eager",
        hint="is the compiled function the one that runs?",
    )
    if note:
        ctx.notes.append(note)
    return bad
