"""Check for honest-timing: the learner times a matmul on the CPU and on the GPU.

The check calls `time_matmul` in ROUNDS rounds, interleaved with its own timing of the same
a @ b on the same operands (yours, ours, yours, ours, ...), and watches every matmul the
learner's code makes with a TorchFunctionMode that times each one (perf_counter on the CPU,
CUDA events on the current stream on a GPU; the check's own calls run under the same watch).
Each figure is then judged against what it can honestly be, so noise cannot decide:

1. the learner's figure against its OWN calls as the check timed them: any honest statistic
   (a median, a mean, the fastest) of some of those calls lies between the fastest and the
   slowest of them, however a load moved them. Outside [low x fastest, high x slowest (+ a
   host slack on a GPU)] in most rounds, it is milliseconds, a total, or a clock that stopped
   before the GPU finished;
2. warm-up: the shapes are drawn from the seed and the learner's code goes first, so its first
   call at that shape is cold. One matmul in all means that cold call was the one timed; a
   first-round figure above every warm call it made, and no higher than the cold one, included
   the cold call;
3. the work: the learner's fastest matmul against the check's fastest (of fifty, interleaved:
   the fastest is what a load does not reach), so timing some other, cheaper call fails.

The CPU case runs with ONE intra-op thread, for the learner's calls and the check's alike
(torch.set_num_threads(1) before every call, restored after). The 10x swings that failed the
reference ("13x, too slow", then "too fast") came from torch's intra-op pool: with a thread per
core, a matmul finishes only when its slowest thread does, and any other busy process (the
spare worker starting, the app, another check) holds a core for a scheduler time slice. On the
2-core box with one core kept busy, a 512^3 float32 matmul went from 0.70 ms (median) to
4.48 ms (8.1 ms at the 90th percentile) on two threads, and stayed at 1.39 ms on one. The old
check took its figure before the learner's code was loaded and compared it with one taken
later: whichever of the two met the contention decided the verdict.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Iterator
from typing import Any

from gpulab.exercises import api

ENTRY = "time_matmul"
ROUNDS = 5  # interleaved rounds: the learner's call, then the check's own figure
WARMUP, RUNS = 3, 10  # the check's own timing (one warm-up call in the later rounds)
GPU_BOUNDS = (0.6, 1.7)
# perf_counter + synchronize (which the statement endorses) also counts the launch and the
# synchronize's return, tens of microseconds on a loaded host; a CUDA event pair does not.
HOST_SLACK_S = 50e-6
CPU_BOUNDS = (0.5, 2.0)  # both figures are perf_counter, one thread, taken in the same rounds
CPU_THREADS = 1
COLD_FACTOR = 1.25  # a first figure this far above every warm call must include the cold one
WORK_BOUND = 2.0  # the learner's fastest matmul against the check's: the same work, or not
# On the CPU a learner's call can be faster only by load: with four processes on two cores the
# check's fifty calls all met another process's time slice and one of a learner's many did not
# (0.46x). What makes a counted a @ b faster on purpose (threads, a lower float32 precision,
# autocast) is read at each call instead (_settings).
CPU_WORK_FLOOR = 0.25
_now = time.perf_counter  # bound when the check loads, before the learner's file is imported

# (nominal m, k, n, dtype): each dimension is drawn within +-12.5% (a multiple of 16), so no
# shape has been multiplied before in the process; every call lasts 0.15 ms or more on an H100.
CPU_PLAN = ((512, 512, 512, "float32"),)
GPU_PLAN = (
    (2048, 2048, 2048, "float32"),
    (4096, 4096, 4096, "float32"),
    (8192, 4096, 4096, "float16"),
    (8192, 6144, 2048, "bfloat16"),
)
# torch names that multiply two matrices: the calls the learner's time_matmul is judged by
MATMULS = [
    "torch.matmul",
    "torch.Tensor.matmul",
    "torch.Tensor.__matmul__",
    "torch.Tensor.__rmatmul__",
    "torch.mm",
    "torch.Tensor.mm",
    "torch.addmm",
    "torch.Tensor.addmm",
    "torch.linalg.matmul",
    "torch.functional.einsum",
    "torch.nn.functional.linear",
]


def _dim(rng: Any, nominal: int) -> int:
    step = 16
    lo, hi = int(nominal * 0.875) // step, int(nominal * 1.125) // step
    return int(rng.integers(lo, hi + 1)) * step


def cases(ctx: api.Context) -> list[api.Case]:
    plan = [("cpu", p) for p in CPU_PLAN]
    if ctx.gpu:
        plan += [(ctx.device, p) for p in GPU_PLAN]
    out = []
    for device, (m, k, n, dtype) in plan:
        m, k, n = _dim(ctx.rng, m), _dim(ctx.rng, k), _dim(ctx.rng, n)
        seed = int(ctx.rng.integers(1 << 31))
        where = f"on {device}" + (f", {CPU_THREADS} thread" if device == "cpu" else "")
        out.append(
            api.Case(
                f"({m} x {k}) @ ({k} x {n}) {dtype} {where}",
                {"device": device, "shape": (m, k, n), "dtype": dtype, "seed": seed},
            )
        )
    return out


_BOUND: dict[str, Any] = {}


def expected(case: api.Case, ctx: api.Context) -> dict[str, Any]:
    """The figures are taken in run(), interleaved with the learner's; bind the check's own
    clock now, before the learner's file is imported."""
    import torch

    if case.args["device"] != "cpu" and "event" not in _BOUND:
        _BOUND.update(
            event=torch.cuda.Event,
            record=torch.cuda.Event.record,
            elapsed=torch.cuda.Event.elapsed_time,
            wait=torch.cuda.Event.synchronize,
            sync=torch.cuda.synchronize,
        )
    return {"device": case.args["device"], "shape": case.args["shape"]}


def _operands(case: api.Case) -> tuple[Any, Any]:
    import torch

    m, k, n = case.args["shape"]
    device = torch.device(case.args["device"])
    dtype = getattr(torch, case.args["dtype"])
    g = torch.Generator(device=device).manual_seed(case.args["seed"])
    # Values of both signs and never all zero: a GPU multiplies zeros faster (less power).
    a = torch.randn(m, k, device=device, generator=g).to(dtype)
    b = torch.randn(k, n, device=device, generator=g).to(dtype)
    return a, b


class _Clock:
    """Times one call on the case's device: CUDA events on a GPU, perf_counter on the CPU."""

    def __init__(self, gpu: bool) -> None:
        self.gpu = gpu

    def start(self) -> Any:
        if not self.gpu:
            return _now()
        ev = _BOUND["event"](enable_timing=True)
        _BOUND["record"](ev)
        return ev

    def stop(self, started: Any) -> Any:
        if not self.gpu:
            return _now() - started
        ev = _BOUND["event"](enable_timing=True)
        _BOUND["record"](ev)
        return (started, ev)

    def seconds(self, stamp: Any) -> float:
        if not self.gpu:
            return float(stamp)
        start, end = stamp
        _BOUND["wait"](end)
        return _BOUND["elapsed"](start, end) / 1e3


def _ours(a: Any, b: Any, clock: _Clock, warmup: int) -> list[float]:
    """The check's own calls: warm-up calls, then RUNS calls, each timed alone (seconds)."""
    for _ in range(warmup):
        a @ b
    if clock.gpu:
        _BOUND["sync"]()
    stamps = []
    for _ in range(RUNS):
        t = clock.start()
        a @ b
        stamps.append(clock.stop(t))
    return [clock.seconds(s) for s in stamps]


@contextlib.contextmanager
def _watching(
    clock: _Clock, operands: tuple[Any, Any], kept: tuple[Any, Any] | None = None
) -> Iterator[list[Any]]:
    """Count and time every a @ b made inside the block (the learner's and ours alike, so both
    pay the same few microseconds of watching): a and b themselves, plain tensors, a product of
    a @ b's size. Another matmul (of a bigger matrix built from a, of a and b cast to
    complex128, of a copy of a scaled into denormals, which a CPU multiplies 100x slower, of a
    tensor subclass whose __torch_function__ sleeps, or an einsum of a and b that is no
    product: red teams widened the span that way and returned a constant, no clock at all) is
    not the call asked for: it is neither counted nor allowed to widen the span a figure is
    judged against. With `kept` (the CPU), a and b must hold their values at every counted
    call: written into denormals and put back before returning, they passed the check after
    the call."""
    import torch
    from torch.overrides import TorchFunctionMode

    from gpulab.exercises.refuse import resolve

    funcs = {f for f in map(resolve, MATMULS) if f is not None}
    want = {(t.data_ptr(), tuple(t.shape), t.dtype, t.device) for t in operands}
    size = operands[0].shape[0] * operands[1].shape[-1]
    device = operands[0].device
    settings = _settings(device)  # as the check set them: each counted call must run with them
    plain = (torch.Tensor, torch.nn.Parameter)
    stamps: list[Any] = []
    watched: list[float] = []  # each counted call with the watching around it, on the CPU
    changed: list[str] = []

    class _Matmuls(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            entered = _now()
            try:
                counted = func in funcs
            except TypeError:
                counted = False
            if counted:
                given = [x for x in args if isinstance(x, torch.Tensor)]
                got = {(x.data_ptr(), tuple(x.shape), x.dtype, x.device) for x in given}
                counted = want <= got and all(type(x) in plain for x in given)
            if counted and kept is not None and not changed:
                for name, now, was in zip("ab", operands, kept, strict=True):
                    if not torch.equal(now, was):
                        changed.append(name)
            if counted and not changed:
                now = _settings(device)
                changed.extend(
                    f"{k} ({settings[k]} -> {now[k]})" for k in settings if now[k] != settings[k]
                )
            if not counted:
                return func(*args, **(kwargs or {}))
            t = clock.start()
            out = func(*args, **(kwargs or {}))
            stamp = clock.stop(t)
            same = isinstance(out, torch.Tensor) and out.dtype == operands[0].dtype
            if same and out.numel() == size:
                stamps.append(stamp)
                if kept is not None:
                    watched.append(_now() - entered)
            return out

    with _Matmuls():
        yield stamps, watched
    if changed and changed[0] in "ab":
        raise api.CheckError(
            f"time_matmul changed its input {changed[0]} before a matmul it made (and put it "
            "back): time a @ b on the values you were given"
        )
    if changed:
        raise api.CheckError(
            f"time_matmul changed {changed[0]} for the matmuls it timed: time a @ b as it "
            "runs with the settings you were given"
        )


def _settings(device: Any) -> dict[str, Any]:
    """What makes the same a @ b faster or slower without changing its operands: the CPU's
    thread count, float32 matmul precision (TF32 on a GPU) and autocast."""
    import torch

    out: dict[str, Any] = {
        "the float32 matmul precision": torch.get_float32_matmul_precision(),
        "autocast": torch.is_autocast_enabled(device.type),
    }
    if device.type == "cpu":
        out["the CPU thread count"] = torch.get_num_threads()
    else:
        mm = torch.backends.cuda.matmul
        out["cuBLAS's reduced-precision reductions"] = (
            mm.allow_fp16_reduced_precision_reduction,
            mm.allow_bf16_reduced_precision_reduction,
        )
    return out


@contextlib.contextmanager
def _threads(device: str) -> Iterator[None]:
    import torch

    if device != "cpu":
        yield
        return
    before = torch.get_num_threads()
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run(fn: Any, case: api.Case, ctx: api.Context) -> dict[str, Any]:
    import torch

    device = case.args["device"]
    clock = _Clock(device != "cpu")
    a, b = _operands(case)
    keep_a, keep_b = a.clone(), b.clone()
    rounds: list[dict[str, Any]] = []
    with _threads(device):
        for i in range(ROUNDS):
            if device == "cpu":
                torch.set_num_threads(CPU_THREADS)  # the same setting for both, every round
            held = (keep_a, keep_b) if device == "cpu" else None
            with _watching(clock, (a, b), held) as (stamps, watched):
                got = fn(a, b)
            if isinstance(got, bool) or not isinstance(got, (int, float)):
                raise api.CheckError(
                    f"time_matmul returned {got!r}: expected seconds per call, a float"
                )
            if not got > 0 or not math.isfinite(got):
                raise api.CheckError(
                    f"time_matmul returned {got!r} seconds: expected a positive time"
                )
            for name, now, kept in (("a", a, keep_a), ("b", b, keep_b)):
                if not torch.equal(now, kept):
                    raise api.CheckError(f"time_matmul changed its input {name}: leave it as it is")
            theirs = [clock.seconds(s) for s in stamps]
            if device == "cpu":
                torch.set_num_threads(CPU_THREADS)
            with _watching(clock, (a, b), held):
                ours = _ours(a, b, clock, WARMUP if i == 0 else 1)
            rnd = {"yours": float(got), "calls": theirs, "ours": ours}
            if watched:
                rnd["watched"] = watched
            rounds.append(rnd)
    return {"rounds": rounds}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4g} ms"


def _watched(rnd: dict[str, Any]) -> list[float]:
    """The learner's calls with the check's watching around each (on the CPU it compares a and
    b with their kept values before each call: a few hundred microseconds of a loaded core that
    the learner's own clock counts and the call's does not)."""
    return rnd.get("watched") or rnd["calls"]


def _span(rnd: dict[str, Any], cold: bool) -> tuple[float, float]:
    """The fastest of the learner's calls in one round and the slowest with its watching (the
    first round's first call, the cold one, left out when there are others)."""
    skip = 1 if cold and len(rnd["calls"]) > 1 else 0
    return min(rnd["calls"][skip:]), max(_watched(rnd)[skip:])


def _outside(y: float, lo: float, hi: float, slack: float) -> float:
    """How far y lies outside [lo, hi + slack], as a factor: 1.0 inside, < 1 below, > 1 above."""
    if y < lo:
        return y / lo
    if y > hi + slack:
        return (y - slack) / hi
    return 1.0


def compare(want: dict, got: dict, case: api.Case, ctx: api.Context) -> api.Mismatch | None:
    """Four questions, in order: did time_matmul multiply more than once, does its figure match
    its own calls as the check timed them (the same intervals: noise moves both), did its first
    figure leave the cold call out, and were its calls the matmul asked for (its fastest call against the
    check's fastest, interleaved on the same operands: the fastest of fifty is what load does
    not reach)."""
    rounds = got["rounds"]
    if any(not r["calls"] for r in rounds):
        return api.Mismatch("time_matmul never multiplied a @ b: time the matmul itself")
    cold = rounds[0]["calls"]
    ours_all = [t for r in rounds for t in r["ours"]]
    if len(cold) == 1:
        return api.Mismatch(
            f"time_matmul multiplied only once, so it timed the first, cold call "
            f"({_ms(cold[0])}; warm calls take {_ms(statistics.median(ours_all))}): warm up "
            "with a few untimed calls, then time several and return the median",
            expected=statistics.median(ours_all),
            got=rounds[0]["yours"],
        )
    gpu = case.args["device"] != "cpu"
    low, high = GPU_BOUNDS if gpu else CPU_BOUNDS
    slack = HOST_SLACK_S if gpu else 0.0
    # Per round: where the learner's figure lies against its own calls as the check timed
    # them. Any honest statistic of some of those calls (a median, a mean, the fastest) lies
    # between the fastest and the slowest of them, however the load moved them; 1.0 inside.
    spans = [_span(r, i == 0) for i, r in enumerate(rounds)]
    outside = [
        _outside(r["yours"], lo, hi, slack) for r, (lo, hi) in zip(rounds, spans, strict=True)
    ]
    where = statistics.median(outside)
    if not low <= where <= high:
        if where < low:
            why = (
                "too fast: did the clock stop before the GPU finished (synchronize before "
                "reading it), or is this not seconds per call?"
            )
        else:
            why = (
                "too slow: report seconds (not milliseconds) per call (not the total of all "
                "runs), and leave the first, cold call out"
            )
        k = outside.index(sorted(outside)[len(outside) // 2])
        y, (lo, hi) = rounds[k]["yours"], spans[k]
        accepted = f"accepted {low}x the fastest to {high}x the slowest" + (
            f" + {slack * 1e6:.0f} us" if slack else ""
        )
        return api.Mismatch(
            f"time_matmul reported {_ms(y)} per matmul, but its own a @ b calls took {_ms(lo)} "
            f"to {_ms(hi)} each as the check timed them ({accepted}): {why}",
            expected=statistics.median([lo, hi]),
            got=y,
            max_error=abs(y - statistics.median([lo, hi])),
        )
    # The first round's figure against its calls: above every warm call (by COLD_FACTOR, so a
    # harmless few percent of a mildly cold CPU call passes) and no higher than the cold call,
    # it can only have come from a set that included the cold call.
    seen = _watched(rounds[0])
    first, slowest_warm, y0 = seen[0], max(seen[1:]), rounds[0]["yours"]
    if y0 > COLD_FACTOR * slowest_warm + slack and first >= y0:
        return api.Mismatch(
            f"time_matmul reported {_ms(y0)} on its first call at this shape, above every warm "
            f"a @ b it made ({_ms(min(cold[1:]))} to {_ms(slowest_warm)}): its figure "
            f"included the first, cold call ({_ms(first)}): warm up first, leave it out",
            expected=statistics.median(cold[1:]),
            got=y0,
        )
    fastest_yours = min(cold[1:] + [x for rr in rounds[1:] for x in rr["calls"]])
    fastest_ours = min(ours_all)
    work = fastest_yours / fastest_ours
    floor = 1 / WORK_BOUND if gpu else CPU_WORK_FLOOR
    if not floor <= work <= WORK_BOUND:
        return api.Mismatch(
            f"time_matmul's matmuls took {_ms(fastest_yours)} at best, the check's a @ b on the "
            f"same operands {_ms(fastest_ours)} at best, in the same {len(rounds)} rounds "
            f"({work:.3g}x, accepted {floor:.2g}x to {WORK_BOUND:g}x): time a @ b "
            "itself, on the a and b you were given"
            + (f", with the {CPU_THREADS} CPU thread the check set" if not gpu else ""),
            expected=fastest_ours,
            got=fastest_yours,
        )
    return None
