"""Check for cuda-graphs: capture an optimizer step once, with a learning rate that changes every call.

The learner's `make_step(params, grads, momentum)` returns `step(lr)`: one step of SGD with
momentum over PARAMS small GPU tensors, in place (buf = momentum * buf + grad; param -= lr * buf).
Every call has its own learning rate, and before each the check writes that call's gradients into
`grads` in place, as a backward pass writes `.grad`. The lesson captured a pure function through
a static input; this step has state that lives across replays and an input that is a Python
number. What is checked, per case:

1. make_step leaves the parameters as they were (a warm-up step on the real tensors moves them);
2. after every one of CALLS calls, every parameter against a float64 reference computed before
   the learner's file was loaded. Where they differ, the trajectory says why (`diagnose`): every
   call stepped along the reference's momentum buffer by the same learning rate whatever lr was
   passed (a Python number frozen into the graph); the steps follow the gradient alone (momentum
   buffers made inside the capture, zeroed by every replay); the parameters never moved
   (updated out of place); every call used the gradients `grads` held when make_step ran (the
   graph reads a copy);
3. that no call uses memory let go of after the capture: make_step's own tensors that nothing
   holds any more go back to PyTorch's allocator when it returns, while a graph captured on them
   keeps using their addresses. The check takes every such block for itself and fills it with a
   NaN pattern (gpulab.exercises.freed): a replay that writes there changes the pattern, one that
   reads there puts NaN in the parameters, and either fails naming the family;
4. what each call ran, read from torch itself: it replays a CUDA graph and captures none (counted
   on torch.cuda.CUDAGraph, so torch.cuda.graph and capture_begin by hand are both seen), and it
   runs no computation on the GPU outside the graph: a TorchDispatchMode around the call sees
   every ATen operation it dispatches, and only writing a value into a tensor (a fill, a copy,
   views and allocation) is allowed beside `replay()`. An update done eagerly beside a replayed
   decoy graph fails here.

Then, in the last case, the saving: ROUNDS rounds of CALLS calls each of step(lr), of the check's
eager step (the per-tensor loop torch.optim.SGD(foreach=False) runs: three kernels a tensor) and
of our own graphed step, each on parameters of its own, timed in interleaved rounds (synchronized
wall time, the median per call). Before each round every gradient is rewritten
(gpulab.exercises.fresh) and the round's learning rates are drawn from the OS's entropy; after it
the learner's parameters are checked against the float64 reference advanced by the same calls,
so a step that skips work on calls it guesses are not checked fails. The replay must save at
least half of the time ours saves over eager on this GPU (gpulab.exercises.saving); where even
ours saves too little here, only correctness is graded and the verdict says so. No speed grade:
the kernels are PyTorch's; what a graph saves is their launches.

The worker samples memory from another thread; a cudaMemGetInfo during a global-mode capture
breaks it, so every call into the learner's code runs with device queries paused.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from gpulab.exercises import api, saving
from gpulab.exercises.freed import FreedMemory
from gpulab.exercises.fresh import Refresher

ENTRY = "make_step"
LAYERS = 32  # linear layers of the MLP: a weight and a bias each, PARAMS tensors in all
PARAMS = 2 * LAYERS
KERNELS_PER_PARAM = 3  # buf.mul_, buf.add_, param.add_: the eager step's launches per tensor
CALLS = 8  # calls per case, each with its own gradients and learning rate
TIMED_CALLS = 12  # calls of each contender per timed round
RTOL, ATOL = 1e-5, 1e-5  # float32 through CALLS steps, against float64
ROUND_RTOL, ROUND_ATOL = 1e-4, 1e-4  # after the rounds' calls too
# (name, smallest and largest layer width, momentum, timed)
PLAN = (
    ("64 tensors of 16 to 160 x 16 to 160", 16, 160, 0.9, False),
    ("64 tensors, some of a single element", 1, 40, 0.8, False),
    ("64 tensors of 64 to 160 x 64 to 160, timed against eager", 64, 160, 0.9, True),
)
# What a call may dispatch on the GPU outside the graph: writing a value into a tensor (the
# learning rate), views of it, allocation. Anything else is computation the graph should hold.
WRITES = frozenset(
    (
        "fill_",
        "copy_",
        "zero_",
        "_to_copy",
        "lift_fresh",
        "lift_fresh_copy",
        "detach",
        "alias",
        "view",
        "_unsafe_view",
        "reshape",
        "select",
        "slice",
        "as_strided",
        "empty",
        "empty_strided",
        "empty_like",
        "new_empty",
        "full",
        "full_like",
        "zeros",
        "zeros_like",
        "ones",
        "ones_like",
        "scalar_tensor",
        "clone",
        "_local_scalar_dense",
    )
)
_now = time.perf_counter  # bound before the learner's file is imported
_urandom = os.urandom


def _lrs(rng: np.random.Generator, calls: int) -> np.ndarray:
    """A warm-up then a decay, each value jittered: no two calls share a learning rate."""
    base = rng.uniform(0.005, 0.02)
    k = np.arange(calls)
    warm = np.minimum(1.0, (k + 1) / 3)
    decay = 0.55 + 0.45 * np.cos(np.pi * k / calls)
    return base * warm * decay * rng.uniform(0.85, 1.15, calls)


def cases(ctx: api.Context) -> list[api.Case]:
    out = []
    for name, lo, hi, momentum, timed in PLAN:
        widths = ctx.rng.integers(lo, hi + 1, LAYERS + 1)
        if lo == 1:  # a layer of one unit: a bias of a single element, a weight of one row
            widths[ctx.rng.integers(1, LAYERS + 1)] = 1
        shapes = []
        for i in range(LAYERS):
            shapes += [(int(widths[i + 1]), int(widths[i])), (int(widths[i + 1]),)]
        total = sum(int(np.prod(s)) for s in shapes)
        args = {
            "shapes": shapes,
            "momentum": momentum,
            "p0": (ctx.rng.standard_normal(total) * 0.5).astype(np.float32),
            "g_make": ctx.rng.standard_normal(total).astype(np.float32),
            "grads": ctx.rng.standard_normal((CALLS, total)).astype(np.float32),
            "lrs": _lrs(ctx.rng, CALLS),
            "timed": timed,
        }
        out.append(api.Case(f"{name} ({total} values), {CALLS} calls", args))
    return out


def trajectory(
    p0: np.ndarray, grads: np.ndarray, lrs: np.ndarray, momentum: float
) -> tuple[np.ndarray, np.ndarray]:
    """(params, buffers) after each call, float64, shape (calls, values): SGD with momentum."""
    p = p0.astype(np.float64)
    buf = np.zeros_like(p)
    ps, bufs = [], []
    for g, lr in zip(grads.astype(np.float64), lrs, strict=True):
        buf = momentum * buf + g
        p = p - lr * buf
        ps.append(p)
        bufs.append(buf)
    return np.array(ps), np.array(bufs)


def expected(case: api.Case, ctx: api.Context) -> np.ndarray:
    a = case.args
    return trajectory(a["p0"], a["grads"], a["lrs"], a["momentum"])[0]


def _split(flat: Any, shapes: list[tuple[int, ...]]) -> list[Any]:
    """Separate tensors (one allocation each, as a model's parameters are) from a flat one."""
    out, at = [], 0
    for shape in shapes:
        n = int(np.prod(shape))
        out.append(flat[at : at + n].reshape(shape).clone())
        at += n
    return out


def _flat(tensors: list[Any]) -> np.ndarray:
    import torch  # deferred: the catalog is read in processes that must not import torch

    return torch.cat([t.reshape(-1) for t in tensors]).double().cpu().numpy()


class _Counting:
    """How many graphs were captured and replayed while it is open (on the class, so every way
    in, torch.cuda.graph or capture_begin by hand, is seen)."""

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


def _outside_the_graph() -> type:
    """A TorchDispatchMode class: an instance lists the ATen operations on GPU tensors a call
    dispatches, beside WRITES (a replay dispatches none: its kernels are launched by the graph)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Seen(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            out = func(*args, **(kwargs or {}))
            name = func.overloadpacket.__name__
            if name not in WRITES:
                leaves = tree_flatten((args, kwargs, out))[0]
                if any(isinstance(t, torch.Tensor) and t.is_cuda for t in leaves):
                    self.ops.append(name)
            return out

    return Seen


def run(fn: Any, case: api.Case, ctx: api.Context) -> dict[str, Any]:
    import torch

    a = case.args
    dev = ctx.device
    shapes = [tuple(s) for s in a["shapes"]]
    p0 = torch.from_numpy(a["p0"]).to(dev)
    params = _split(p0, shapes)
    grads = _split(torch.from_numpy(a["g_make"]).to(dev), shapes)
    history = torch.from_numpy(a["grads"]).to(dev)
    # the check's own references: a learner's code that rebinds its list's entries (an update
    # out of place) leaves these as they were
    mine_p, mine_g = list(params), list(grads)
    # FreedMemory lets what the allocator caches now go first: it is not the learner's
    with api.no_device_queries(), FreedMemory(dev) as freed:
        with _Counting():
            stepper = fn(list(params), list(grads), float(a["momentum"]))
        if not callable(stepper):
            raise api.CheckError(
                f"make_step returned {type(stepper).__name__}: expected a function step(lr)"
            )
        freed.hold()  # what make_step made and let go: a graph that still uses it is seen
        moved = _first_change(mine_p, p0, shapes)
        if moved:
            raise api.CheckError(
                f"make_step changed the parameters ({moved}) before the first call: a warm-up "
                "step on the real tensors? Warm up with a learning rate of 0, or on copies, "
                "and zero the momentum buffers afterwards"
            )
        after = []
        watching = _outside_the_graph()
        outside: list[str] = []
        idle = []  # calls that replayed no graph
        with _Counting() as seen:
            for k in range(CALLS):
                for g, new in zip(mine_g, _split(history[k], shapes), strict=True):
                    g.copy_(new)
                replays = seen.replays
                with watching() as ops:
                    stepper(float(a["lrs"][k]))
                outside += ops.ops
                if seen.replays == replays:
                    idle.append(k + 1)
                torch.cuda.synchronize()
                _freed_use(freed, mine_p, f"call {k + 1} of {CALLS}")
                after.append(_flat(mine_p))
                freed.hold()
        _structure(seen, idle, outside)
        result: dict[str, Any] = {"after": np.array(after)}
        if a["timed"]:
            result["times"] = _rounds(stepper, mine_p, mine_g, case, ctx, freed)
    return result


def _freed_use(freed: FreedMemory, params: list[Any], when: str) -> None:
    """Fails when the step wrote into, or read from, memory let go of after the capture."""
    import torch

    wrote = freed.written()
    if wrote:
        raise api.CheckError(
            f"step(lr) wrote {wrote} bytes in {when} into memory that was freed after the "
            "capture: a graph "
            "keeps the addresses it was captured on, not the tensors. Keep every tensor the "
            "captured kernels use (the momentum buffers too) alive as long as step(lr), for "
            "instance referenced from step's closure"
        )
    nan = torch.stack([torch.isnan(p).any() for p in params])
    if bool(nan.any()):
        i = int(nan.nonzero()[0])
        raise api.CheckError(
            f"parameter {i} holds NaN after {when}: the graph read memory that was freed after "
            "the capture (the check fills freed memory with NaN). Keep every tensor the "
            "captured kernels read alive as long as step(lr), for instance referenced from "
            "step's closure"
        )


def _first_change(params: list[Any], p0: Any, shapes: list[tuple[int, ...]]) -> str:
    """'parameter 3 of shape (40, 17)' for the first parameter that is not p0's slice, or ''."""
    import torch

    for i, (p, want) in enumerate(zip(params, _split(p0, shapes), strict=True)):
        if not torch.equal(p, want):
            return f"parameter {i} of shape {tuple(p.shape)}"
    return ""


def _structure(seen: _Counting, idle: list[int], outside: list[str]) -> None:
    """What the calls ran: a replay each, no capture, nothing computed outside the graph."""
    if len(idle) == CALLS:
        raise api.CheckError(
            f"step(lr) replayed no CUDA graph in {CALLS} calls: it ran the update eagerly. "
            "Capture it once in make_step (torch.cuda.graph) and call replay() in step(lr)"
        )
    if idle:
        raise api.CheckError(
            f"step(lr) replayed no CUDA graph in call {idle[0]} of {CALLS}: every call must "
            "replay the captured update"
        )
    if seen.captures:
        raise api.CheckError(
            f"step(lr) captured {seen.captures} graphs in {CALLS} calls: a capture costs more "
            "than the eager step. Capture once in make_step; in step(lr) only write lr into "
            "the graph's tensor and replay()"
        )
    if outside:
        names = ", ".join(dict.fromkeys(outside))
        raise api.CheckError(
            f"step(lr) ran {len(outside)} operations on the GPU outside the graph in {CALLS} "
            f"calls ({names}): the update belongs in the captured graph; step(lr) should only "
            "write lr into the graph's tensor (fill_ or copy_) and replay()"
        )


def _eager(params: list[Any], grads: list[Any], bufs: list[Any], momentum: float, lr: float):
    """The check's eager step: torch.optim.SGD(foreach=False)'s loop, three kernels a tensor."""
    for p, g, b in zip(params, grads, bufs, strict=True):
        b.mul_(momentum).add_(g)
        p.add_(b, alpha=-lr)


def _batch(call: Any, lrs: list[float], torch: Any) -> float:
    torch.cuda.synchronize()
    t0 = _now()
    for lr in lrs:
        call(lr)
    torch.cuda.synchronize()
    return (_now() - t0) / len(lrs)


def _draw_lrs(calls: int) -> list[float]:
    """Learning rates the learner's code cannot foresee, in the range the cases use."""
    raw = np.frombuffer(_urandom(4 * calls), dtype=np.uint32) / 2.0**32
    return [float(0.002 + 0.01 * u) for u in raw]


def _rounds(
    stepper: Any,
    params: list[Any],
    grads: list[Any],
    case: api.Case,
    ctx: api.Context,
    freed: FreedMemory,
):
    """Interleaved rounds of the learner's step, the eager step and ours; the learner's
    parameters checked after each round against float64, advanced by the same calls."""
    import torch

    a = case.args
    m = float(a["momentum"])
    shapes = [tuple(s) for s in a["shapes"]]
    ps, bufs = trajectory(a["p0"], a["grads"], a["lrs"], m)
    ref_p = _split(torch.from_numpy(ps[-1]).to(ctx.device), shapes)
    ref_b = _split(torch.from_numpy(bufs[-1]).to(ctx.device), shapes)
    eager_p = [p.clone() for p in params]
    eager_b = [b.float() for b in ref_b]
    ours_p = [p.clone() for p in params]
    ours_g = [g.clone() for g in grads]
    ours = ctx.reference()(ours_p, ours_g, m)  # device queries are paused by the caller
    fresh = Refresher()
    rounds = 5 if ctx.quick else 9
    graph, eager, mine = [], [], []
    for r in range(rounds + 1):  # round 0 warms all three up and is not counted
        fresh(*grads)  # every gradient rewritten, in place: the graph reads these tensors
        for o, g in zip(ours_g, grads, strict=True):
            o.copy_(g)
        lrs = _draw_lrs(TIMED_CALLS)
        g_t = _batch(stepper, lrs, torch)
        e_t = _batch(lambda lr: _eager(eager_p, grads, eager_b, m, lr), lrs, torch)
        o_t = _batch(ours, lrs, torch)
        g64 = [g.double() for g in grads]
        for lr in lrs:
            _eager(ref_p, g64, ref_b, m, lr)
        _freed_use(freed, params, f"timed round {r + 1}")
        bad = _round_mismatch(params, ref_p)
        if bad:
            return {"mismatch": f"timed round {r + 1}, after {TIMED_CALLS} more calls: {bad}"}
        if r:
            graph.append(g_t)
            eager.append(e_t)
            mine.append(o_t)
    return {"graph": graph, "eager": eager, "ours": mine}


def _round_mismatch(params: list[Any], ref: list[Any]) -> str:
    for i, (p, w) in enumerate(zip(params, ref, strict=True)):
        wrong = ~((p.double() - w).abs() <= ROUND_ATOL + ROUND_RTOL * w.abs())
        if bool(wrong.any()):
            flat = int(wrong.reshape(-1).nonzero()[0])
            got, want = float(p.reshape(-1)[flat]), float(w.reshape(-1)[flat])
            where = tuple(int(v) for v in np.unravel_index(flat, tuple(p.shape)))
            return (
                f"parameter {i}{list(where)} = {got!r}, expected {want!r} "
                f"({int(wrong.sum())} of {p.numel()} wrong): does step(lr) skip work on calls "
                "it thinks are not checked?"
            )
    return ""


def _where(flat: int, shapes: list[tuple[int, ...]]) -> str:
    """'parameter 5[3, 7]' for an index into the parameters laid end to end."""
    at = 0
    for i, shape in enumerate(shapes):
        n = int(np.prod(shape))
        if flat < at + n:
            idx = [int(v) for v in np.unravel_index(flat - at, shape)]
            return f"parameter {i}{idx}"
        at += n
    return f"value {flat}"


def diagnose(after: np.ndarray, a: dict[str, Any]) -> str:
    """What the learner's parameters after each call show about why they differ ('' when
    nothing recognisable): frozen lr, no momentum, no update, stale gradients."""
    p0 = a["p0"].astype(np.float64)
    grads = a["grads"].astype(np.float64)
    lrs, m = np.asarray(a["lrs"], dtype=np.float64), float(a["momentum"])
    steps = np.diff(np.vstack([p0, after]), axis=0)
    scale = float(np.abs(p0).max()) + 1.0
    if float(np.abs(steps).max()) <= 1e-9 * scale:
        return (
            "step(lr) did not change the parameters: update them in place (add_, addcmul_, "
            "copy_), since the check reads the tensors it gave you and `p = p - lr * buf` makes "
            "another one; or the graph holds a learning rate of 0 from the capture"
        )
    _, bufs = trajectory(a["p0"], a["grads"], lrs, m)
    along = -(steps * bufs).sum(axis=1) / np.maximum((bufs * bufs).sum(axis=1), 1e-300)
    if np.ptp(along) <= 1e-3 * abs(float(along.mean())) and np.ptp(lrs) > 0.05 * lrs.mean():
        shown = ", ".join(f"{v:.3g}" for v in lrs[:3])
        return (
            f"every call stepped as if lr were {float(along.mean()):.4g}, whatever step(lr) was "
            f"given ({shown}, ...): a Python number in the captured code is frozen into the "
            "graph at capture. Keep lr in a tensor on the GPU that the captured kernels read, "
            "and write each call's value into it before replay()"
        )
    if np.allclose(steps, -lrs[:, None] * grads, rtol=1e-4, atol=1e-6 * scale):
        return (
            "each call stepped along its gradient alone: the momentum buffers start from zero "
            "on every call (a tensor made inside the capture is made again by every replay). "
            "Make the buffers before capturing and update them in place"
        )
    stale = trajectory(a["p0"], np.repeat(a["g_make"][None], len(lrs), axis=0), lrs, m)[0]
    if np.allclose(after, stale, rtol=1e-4, atol=1e-6 * scale):
        return (
            "every call used the gradients `grads` held when make_step ran: the graph reads a "
            "copy of them. Let the captured kernels read the grads tensors themselves: the "
            "check writes each call's gradients into them in place"
        )
    return ""


def compare(want: np.ndarray, got: dict[str, Any], case: api.Case, ctx: api.Context) -> Any:
    after = got["after"]
    shapes = [tuple(s) for s in case.args["shapes"]]
    for k in range(len(want)):
        bad = api.compare_arrays(want[k], after[k], rtol=RTOL, atol=ATOL)
        if bad is None:
            continue
        if bad.index is not None:  # the value's place among the parameters laid end to end
            bad.message = (
                f"{_where(int(bad.index), shapes)}{bad.message[bad.message.index(' =') :]}"
            )
        why = diagnose(after, case.args)
        bad.message = f"after call {k + 1} of {len(want)}: {bad.message}" + (
            f"; {why}" if why else ""
        )
        return bad
    times = got.get("times")
    if times is None:
        return None
    if "mismatch" in times:
        return api.Mismatch(times["mismatch"])
    bad, note = judge_replay(times)
    if note:
        ctx.notes.append(note)
    return bad


def judge_replay(times: dict[str, list[float]]) -> tuple[api.Mismatch | None, str]:
    """The saving rule on the rounds (plain numbers: CPU tests call this too): (why step(lr)
    fails it, or None; the verdict's note where this GPU cannot show the effect)."""
    rounds = list(zip(times["eager"], times["graph"], times["ours"], strict=True))
    launches = KERNELS_PER_PARAM * PARAMS
    return saving.judge(
        saving.Saving.of(rounds),
        what="replay",
        baseline="the eager step",
        hint=f"a replay launches all {launches} kernels of the update at once; keep step(lr) "
        "to writing lr into the graph's tensor and replay(): no capture, no synchronize, no "
        "new tensors",
    )
